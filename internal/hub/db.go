package hub

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/jamhq/jam/internal/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// dbReadConns is the size of the read pool.
const dbReadConns = 4

// db is the hub's SQLite file: one writer connection (IMMEDIATE
// transactions, so a read-then-write never fails on a lock upgrade) and a
// query_only read pool. Pragmas travel in the DSN so every connection the
// pool opens later gets them too.
type db struct {
	path   string
	writer *sql.DB
	reader *sql.DB
}

// querier is what the per-table SQL helpers need: a transaction or a pool.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// openDB opens or creates path and applies the embedded migrations.
func openDB(ctx context.Context, path string) (_ *db, err error) {
	migs, err := store.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open hub db: %w", err)
	}
	// Create the file with 0600 ourselves; SQLite would use 0644.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open hub db: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open hub db: %w", err)
	}
	d := &db{path: path}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("open hub db %s: %w", path, err), d.close())
		}
	}()
	// The writer goes first: it switches the file to WAL for the others.
	if d.writer, err = openPool(ctx, path, 1, "journal_mode(WAL)", "_txlock=immediate"); err != nil {
		return nil, err
	}
	if err := migrate(ctx, d.writer, migs); err != nil {
		return nil, err
	}
	if d.reader, err = openPool(ctx, path, dbReadConns, "query_only(1)"); err != nil {
		return nil, err
	}
	return d, nil
}

func openPool(ctx context.Context, path string, n int, extra ...string) (*sql.DB, error) {
	q := url.Values{}
	for _, p := range append([]string{"busy_timeout(5000)", "foreign_keys(1)", "synchronous(FULL)"}, extra...) {
		if k, v, ok := strings.Cut(p, "="); ok {
			q.Add(k, v)
		} else {
			q.Add("_pragma", p)
		}
	}
	pool, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(n)
	pool.SetMaxIdleConns(n)
	pool.SetConnMaxLifetime(0)
	pool.SetConnMaxIdleTime(0)
	if err := pool.PingContext(ctx); err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return pool, nil
}

// close closes the pools, the writer last so its close checkpoints the WAL.
func (d *db) close() error {
	var errs []error
	for _, p := range []*sql.DB{d.reader, d.writer} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}

// SQL of the migration ledger, kept outside the numbered migrations.
const (
	migrationTableCreate = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at INTEGER NOT NULL
)`
	migrationSelect = `SELECT version, checksum FROM schema_migrations`
	migrationInsert = `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`
)

// migrate applies the migrations db lacks, one transaction each. It
// refuses a database with a migration this build does not know, or one
// whose applied text differs: running on a schema the code does not
// describe would corrupt data quietly.
func migrate(ctx context.Context, pool *sql.DB, migs []store.Migration) error {
	if _, err := pool.ExecContext(ctx, migrationTableCreate); err != nil {
		return fmt.Errorf("create migration table: %w", err)
	}
	applied := map[int]string{}
	rows, err := pool.QueryContext(ctx, migrationSelect)
	if err != nil {
		return fmt.Errorf("read migration table: %w", err)
	}
	for rows.Next() {
		var v int
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("read migration table: %w", err)
		}
		applied[v] = sum
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read migration table: %w", err)
	}
	for v := range applied {
		if v > len(migs) {
			return fmt.Errorf("hub schema version %d is newer than this build (knows %d)", v, len(migs))
		}
	}
	for _, m := range migs {
		sum, ok := applied[m.Version]
		if ok {
			if sum != m.Checksum() {
				return fmt.Errorf("migration %04d_%s was changed after it was applied", m.Version, m.Name)
			}
			continue
		}
		err := inTx(ctx, pool, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, migrationInsert, m.Version, m.Name, m.Checksum(), time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

// inTx runs fn in a transaction and commits when fn succeeds.
func inTx(ctx context.Context, pool *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
