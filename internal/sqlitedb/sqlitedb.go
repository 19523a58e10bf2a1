package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
)

// driverName is the database/sql name modernc.org/sqlite registers.
const driverName = "sqlite"

// BusyTimeoutMS bounds how long a connection waits for a lock held by
// another connection or process before failing with SQLITE_BUSY.
const BusyTimeoutMS = 5000

// DefaultReadConns is the size of the read pool when Options.ReadConns is 0.
const DefaultReadConns = 4

// commonPragmas are set on every connection of every pool.
var commonPragmas = []string{
	fmt.Sprintf("busy_timeout(%d)", BusyTimeoutMS),
	"foreign_keys(1)",
	"synchronous(FULL)",
	"temp_store(MEMORY)",
}

// Options configures [Open].
type Options struct {
	// Schema names the database in migration errors ("store", "hub").
	Schema string
	// Migrations are applied on open; they must be numbered 1..n.
	Migrations []Migration
	// ReadConns is the size of the read pool. 0 means DefaultReadConns.
	ReadConns int
	// ManualCheckpoint turns SQLite's automatic checkpoint off on the
	// writer and opens [DB.Checkpointer]; the owner checkpoints with
	// [DB.Checkpoint].
	ManualCheckpoint bool
}

// DB is one SQLite file opened with the pool layout of the package doc.
type DB struct {
	// Path is the absolute path of the database file.
	Path string
	// Writer has one connection; every write goes here.
	Writer *sql.DB
	// Reader is the query_only pool; every read goes here.
	Reader *sql.DB
	// Checkpointer has one connection, used only for WAL checkpoints; nil
	// unless Options.ManualCheckpoint.
	Checkpointer *sql.DB
	// PriorVersion is the schema version before Open migrated: 0 for a new
	// file.
	PriorVersion int

	closeOnce sync.Once
	closeErr  error // set inside closeOnce
}

// ValidatePath reports, as jam.ErrInvalid, a path Open cannot use.
func ValidatePath(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("%w: path is empty", jam.ErrInvalid)
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		// Separate reader and writer pools need a shared file; an in-memory
		// or URI database would give each connection its own.
		return fmt.Errorf("%w: path %q must be a plain file path", jam.ErrInvalid, path)
	case strings.ContainsRune(path, '?'):
		// The driver splits the DSN at the first '?'.
		return fmt.Errorf("%w: path %q must not contain '?'", jam.ErrInvalid, path)
	}
	return nil
}

// Open opens or creates the database at path (its directory must exist),
// applies opts.Migrations and opens the pools. Its errors do not name the
// file; the caller does. The caller must Close the DB.
func Open(ctx context.Context, path string, opts Options) (_ *DB, err error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if opts.ReadConns == 0 {
		opts.ReadConns = DefaultReadConns
	}
	if opts.ReadConns < 1 {
		return nil, fmt.Errorf("%w: read conns %d must be positive", jam.ErrInvalid, opts.ReadConns)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	// Create the file ourselves with 0600; see the package doc.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}

	d := &DB{Path: path}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.closePools())
		}
	}()
	// The writer opens and migrates first: it switches the file to WAL,
	// which the other pools then find already set.
	writer := []string{"journal_mode(WAL)", "_txlock=immediate"}
	if opts.ManualCheckpoint {
		writer = append(writer, "wal_autocheckpoint(0)")
	}
	if d.Writer, err = openPool(ctx, path, 1, writer...); err != nil {
		return nil, err
	}
	// Before the ledger exists (a new file) the version reads as 0.
	d.PriorVersion, _ = SchemaVersion(ctx, d.Writer)
	if err := migrate(ctx, d.Writer, opts.Schema, opts.Migrations); err != nil {
		return nil, err
	}
	if d.Reader, err = openPool(ctx, path, opts.ReadConns, "query_only(1)"); err != nil {
		return nil, err
	}
	if opts.ManualCheckpoint {
		if d.Checkpointer, err = openPool(ctx, path, 1); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// dsn is the driver's data source name for path with params, each a pragma
// "name(value)" or a raw "_key=value" driver parameter. The common pragmas
// come first so that every connection, including ones database/sql opens
// later, is configured the same way.
func dsn(path string, params ...string) string {
	q := url.Values{}
	for _, p := range append(append([]string{}, commonPragmas...), params...) {
		if k, v, ok := strings.Cut(p, "="); ok {
			q.Add(k, v)
		} else {
			q.Add("_pragma", p)
		}
	}
	return path + "?" + q.Encode()
}

// openPool opens a pool of n connections to path; params as for dsn.
func openPool(ctx context.Context, path string, n int, params ...string) (*sql.DB, error) {
	db, err := sql.Open(driverName, dsn(path, params...))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	// Connections are cheap to keep and costly to reopen (pragmas, schema
	// parse), so they are never retired.
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return db, nil
}

// Close closes the readers first, so none holds a snapshot that blocks the
// final checkpoint; with a Checkpointer it then truncates the WAL; the
// writer closes last. A caller holding statements prepared on the writer
// closes them first. Close has no ctx; the busy timeout bounds the
// checkpoint instead. Later calls return the first result.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		var errs []error
		if d.Reader != nil {
			errs = append(errs, d.Reader.Close())
		}
		if d.Checkpointer != nil {
			errs = append(errs, d.Checkpoint(context.Background(), true))
		}
		d.closeErr = errors.Join(append(errs, d.closePools())...)
	})
	return d.closeErr
}

// closePools closes whatever pools are open, the writer last.
func (d *DB) closePools() error {
	var errs []error
	for _, db := range []*sql.DB{d.Reader, d.Checkpointer, d.Writer} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// InTx runs fn in one transaction on db and commits if fn succeeds. On the
// writer the transaction is IMMEDIATE, so fn's reads see no concurrent
// writes until it commits.
func InTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit; fn's error is the one to report
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// StorageFault classifies a failed write: one the disk refused wraps
// jam.ErrStorageFull, so callers (and the control API's catalogue) can
// tell "there is no room or no write access" from a bug. SQLite reports a
// full disk (ENOSPC) as SQLITE_FULL, any other failed write — a file at
// its size limit (EFBIG), a vanished or read-only directory — as one of
// the SQLITE_IOERR_* codes, and a database it may not write as
// SQLITE_READONLY_* or SQLITE_CANTOPEN. In each case SQLite has rolled
// the transaction back, and the connection stays usable: the next write
// succeeds once there is room. Any other error is returned as it is.
func StorageFault(err error) error {
	var e *msqlite.Error
	if err == nil || errors.Is(err, jam.ErrStorageFull) || !errors.As(err, &e) {
		return err
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("%w: %w", jam.ErrStorageFull, err)
	}
	return err
}

// IsConstraint reports whether err is the driver error with the given
// extended SQLITE_CONSTRAINT_* code.
func IsConstraint(err error, code int) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code() == code
}
