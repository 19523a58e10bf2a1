package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/sqlitedb"
	"github.com/jamhq/jam/internal/store"
)

// Config configures a [Store].
type Config struct {
	// Path is the database file. It is created with mode 0600 if missing;
	// its directory must exist.
	Path string
	// Logger receives background checkpoint failures. Nil discards them.
	Logger *slog.Logger
	// ReadConns is the size of the read pool. Default 4.
	ReadConns int
	// CheckpointInterval is how often the WAL is checkpointed. Default 1s.
	CheckpointInterval time.Duration
	// CheckpointTruncateBytes is the -wal file size above which a checkpoint
	// also truncates the file. Default 64 MiB.
	CheckpointTruncateBytes int64
	// MaxQueuedPerPeer bounds one peer's queue rows; default
	// store.MaxQueuedPerPeer. See queueCap.
	MaxQueuedPerPeer int
	// Sealer seals the content columns (see the package doc, "Content at
	// rest"). jamd always sets it; without one the store keeps content in
	// the clear, which only tests and tools that read a copy do, and
	// cannot read content sealed by a store that had one.
	Sealer Sealer
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ReadConns == 0 {
		c.ReadConns = 4
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = time.Second
	}
	if c.CheckpointTruncateBytes == 0 {
		c.CheckpointTruncateBytes = 64 << 20
	}
	if c.MaxQueuedPerPeer == 0 {
		c.MaxQueuedPerPeer = store.MaxQueuedPerPeer
	}
	return c
}

func (c Config) validate() error {
	if err := sqlitedb.ValidatePath(c.Path); err != nil {
		return err
	}
	switch {
	case c.ReadConns < 1:
		return fmt.Errorf("%w: read conns %d must be positive", jam.ErrInvalid, c.ReadConns)
	case c.CheckpointInterval < 0:
		return fmt.Errorf("%w: checkpoint interval %s must be positive", jam.ErrInvalid, c.CheckpointInterval)
	case c.CheckpointTruncateBytes < 0:
		return fmt.Errorf("%w: checkpoint truncate bytes %d must be positive", jam.ErrInvalid, c.CheckpointTruncateBytes)
	}
	return nil
}

// Store is the SQLite [store.Store]. See the package doc for its design.
type Store struct {
	path   string
	logger *slog.Logger
	sealer Sealer // nil: content is kept in the clear

	db     *sqlitedb.DB // the pools; see the package doc
	writer *sql.DB      // db.Writer: one connection; every write goes here
	reader *sql.DB      // db.Reader: query_only pool; every read goes here

	spoolInserts spoolInsertCache // prepared on the writer; see spool.go
	spooled      spoolSet         // the messages in the spool table; see spool.go
	stmts        stmtCache        // hot statements, prepared on the writer; see stmtcache.go
	eventInserts eventInsertCache // prepared on the writer; see events.go
	marks        markGroup        // queue marks committed together; see markgroup.go
	queueCap     queueCap         // the bound of one peer's queue; see queuecap.go
	pruneBatch   int              // turns per RuntimePrune transaction; see runtime_retention.go

	truncateBytes int64
	stopCkpt      context.CancelFunc
	wg            sync.WaitGroup // the checkpointer goroutine

	closeOnce sync.Once
	closeErr  error // set inside closeOnce
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the database at cfg.Path, applies pending
// migrations, and starts the checkpointer. The caller must Close the Store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	migs, err := store.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	return open(ctx, cfg, migs)
}

// open is Open with the migrations as a parameter, so tests can present a
// database to a build that knows other migrations.
func open(ctx context.Context, cfg Config, migs []store.Migration) (_ *Store, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", cfg.Path, err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("open sqlite store %s: %w", path, err)
		}
	}()

	s := &Store{path: path, logger: cfg.Logger.With("component", "store"), sealer: cfg.Sealer, truncateBytes: cfg.CheckpointTruncateBytes,
		queueCap: queueCap{max: cfg.MaxQueuedPerPeer, room: map[queueCapKey]int{}}, pruneBatch: retentionTurnBatch}
	// The checkpointer is the Store's (see checkpoint.go), so SQLite's own
	// is off.
	s.db, err = sqlitedb.Open(ctx, path, sqlitedb.Options{
		Schema: "store", Migrations: migrations(migs), ReadConns: cfg.ReadConns, ManualCheckpoint: true,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.db.Close())
		}
	}()
	s.writer, s.reader = s.db.Writer, s.db.Reader
	// A store that cannot seal what it holds in the clear (a damaged
	// table, a full disk) still opens, as it does with other damage the
	// quick_check reports; the next Open tries again. Only a cancelled
	// Open fails.
	if n, err := s.sealPlaintext(ctx, migs, s.db.PriorVersion); ctx.Err() != nil {
		return nil, ctx.Err()
	} else if err != nil {
		s.logger.Error("content stored in the clear could not be sealed; it stays as it is until the next start", "sealed", n, "err", err)
	} else if n > 0 {
		s.logger.Info("sealed content stored in the clear", "values", n)
	}

	// The checkpointer lives until Close, not until Open's ctx ends.
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopCkpt = cancel
	s.wg.Go(func() { s.checkpointLoop(loopCtx, cfg.CheckpointInterval) })
	return s, nil
}

// Close stops the checkpointer, truncates the WAL and closes every pool.
// It is safe to call more than once; later calls return the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopCkpt()
		s.wg.Wait()
		// Arguments run in order: the statements prepared on the writer
		// close before the pools, and db.Close closes the readers, truncates
		// the WAL and closes the writer last.
		err := errors.Join(
			s.spoolInserts.close(),
			s.stmts.close(),
			s.eventInserts.close(),
			s.db.Close(),
		)
		if err != nil {
			s.closeErr = fmt.Errorf("close sqlite store %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// Info implements [store.Store].
func (s *Store) Info(ctx context.Context) (store.Info, error) {
	v, err := sqlitedb.SchemaVersion(ctx, s.reader)
	if err != nil {
		return store.Info{}, fmt.Errorf("store info: %w", err)
	}
	var lib string
	if err := s.reader.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&lib); err != nil {
		return store.Info{}, fmt.Errorf("store info: %w", err)
	}
	return store.Info{Driver: "sqlite", Location: s.path, SchemaVersion: v, ServerVersion: lib}, nil
}

// Check implements [store.Store] with PRAGMA quick_check, which verifies
// b-tree structure without the full index cross-check of integrity_check,
// so it stays fast enough for a health endpoint.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.reader.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return fmt.Errorf("check store: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return fmt.Errorf("check store: %w", err)
		}
		if msg != "ok" {
			problems = append(problems, msg)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check store: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("check store: %w: %s", jam.ErrUnavailable, strings.Join(problems, "; "))
	}
	return nil
}

// inTx runs fn in one transaction on db and commits if fn succeeds. On the
// writer the transaction is IMMEDIATE, so fn's reads see no concurrent
// writes until it commits.
// A failed write is classified by storageFault.
func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	return storageFault(sqlitedb.InTx(ctx, db, fn))
}

// isConstraint reports whether err is the driver error with the given
// extended SQLITE_CONSTRAINT_* code.
func isConstraint(err error, code int) bool { return sqlitedb.IsConstraint(err, code) }

// fromMicros reverses t.UnixMicro(), the stored form of every time.
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }
