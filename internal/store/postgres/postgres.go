package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Config configures a [Store].
type Config struct {
	// URL is a postgres:// or postgresql:// URL (see pgx's ParseConfig for
	// its parameters). The password may be in the URL, in PGPASSWORD or in
	// a .pgpass file; it is never shown in an error, a log line or Info.
	URL string
	// Logger receives the store's diagnostics. Nil discards them.
	Logger *slog.Logger
	// Sealer seals the content columns (see the package doc, "Content at
	// rest"). jamd always sets it; a store is opened with the same Sealer,
	// or none, for its whole life.
	Sealer Sealer
	// MaxConns is the size of the connection pool. Default 8.
	MaxConns int32
	// ConnectTimeout bounds the dial and handshake of one connection when
	// the URL sets no connect_timeout. Default 10s.
	ConnectTimeout time.Duration
	// MaxQueuedPerPeer bounds one peer's queue rows; default
	// store.MaxQueuedPerPeer.
	MaxQueuedPerPeer int
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxConns == 0 {
		c.MaxConns = 8
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.MaxQueuedPerPeer == 0 {
		c.MaxQueuedPerPeer = store.MaxQueuedPerPeer
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.MaxConns < 2:
		// Migration holds one connection while Open pings with another.
		return fmt.Errorf("postgres store: %w: max conns %d: want at least 2", jam.ErrInvalid, c.MaxConns)
	case c.ConnectTimeout < 0:
		return fmt.Errorf("postgres store: %w: connect timeout %s must be positive", jam.ErrInvalid, c.ConnectTimeout)
	case c.MaxQueuedPerPeer < 1:
		return fmt.Errorf("postgres store: %w: max queued per peer %d must be positive", jam.ErrInvalid, c.MaxQueuedPerPeer)
	}
	return nil
}

// Store is the PostgreSQL dialect of the store seam. See the package doc
// for its design.
type Store struct {
	pool          *pgxpool.Pool
	loc           location
	logger        *slog.Logger
	sealer        Sealer // nil: content is kept in the clear
	maxQueued     int
	serverVersion string

	closeOnce sync.Once
}

// Open connects to cfg.URL, applies pending migrations under an advisory
// lock and returns the Store, which the caller must Close. Its errors are
// one line each, without the password: an invalid URL (jam.ErrInvalid), a
// server that cannot be reached, credentials it refuses, a database it
// does not have (jam.ErrUnavailable), or a schema this build does not
// describe.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	migs, err := store.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	return open(ctx, cfg, migs)
}

// open is Open with the migrations as a parameter, so tests can present a
// database to a build that knows other migrations.
func open(ctx context.Context, cfg Config, migs []store.Migration) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pc, loc, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = cfg.MaxConns
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, connectError(err, loc)
	}
	s := &Store{pool: pool, loc: loc, logger: cfg.Logger.With("component", "store"), sealer: cfg.Sealer, maxQueued: cfg.MaxQueuedPerPeer}
	fail := func(err error) (*Store, error) {
		pool.Close()
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("postgres store %s: %w", loc, ctx.Err()))
		}
		return fail(connectError(err, loc))
	}
	s.serverVersion = conn.Conn().PgConn().ParameterStatus("server_version")
	conn.Release()
	if err := migrate(ctx, pool, migs); err != nil {
		return fail(fmt.Errorf("postgres store %s: %w", loc, mapErr(err)))
	}
	return s, nil
}

// Close closes the pool, waiting for the connections in use to be
// returned. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// Info implements [store.Store]: driver "postgres", the location as
// host:port/database (no user, no password), the schema version and the
// server's version.
func (s *Store) Info(ctx context.Context) (store.Info, error) {
	v, err := schemaVersion(ctx, s.pool)
	if err != nil {
		return store.Info{}, fmt.Errorf("store info: %w", mapErr(err))
	}
	return store.Info{Driver: "postgres", Location: s.loc.String(), SchemaVersion: v, ServerVersion: s.serverVersion}, nil
}

// Check implements [store.Store]: the server answers, the schema is this
// build's, and no index is marked invalid (a CREATE INDEX CONCURRENTLY
// that failed, or damage the server noticed). Checksums of the data
// pages are the server's business (data_checksums), not the store's.
func (s *Store) Check(ctx context.Context) error {
	if _, err := schemaVersion(ctx, s.pool); err != nil {
		return fmt.Errorf("check store: %w", mapErr(err))
	}
	rows, err := s.pool.Query(ctx, checkInvalidIndexes)
	if err != nil {
		return fmt.Errorf("check store: %w", mapErr(err))
	}
	var problems []string
	var name string
	for rows.Next() {
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("check store: %w", mapErr(err))
		}
		problems = append(problems, "index "+name+" is invalid")
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check store: %w", mapErr(err))
	}
	if len(problems) > 0 {
		return fmt.Errorf("check store: %w: %s", jam.ErrUnavailable, strings.Join(problems, "; "))
	}
	return nil
}

// checkInvalidIndexes lists the indexes of the current schema that the
// server marks as not valid for queries.
const checkInvalidIndexes = `SELECT c.relname FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND NOT i.indisvalid ORDER BY c.relname`
