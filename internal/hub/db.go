package hub

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/jamhq/jam/internal/sqlitedb"
	"github.com/jamhq/jam/internal/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// dbReadConns is the size of the read pool.
const dbReadConns = 4

// db is the hub's SQLite file, opened by [sqlitedb.Open]: one writer
// connection (IMMEDIATE transactions, so a read-then-write never fails on
// a lock upgrade) and a query_only read pool, pragmas in the DSN. SQLite
// checkpoints the WAL itself.
type db struct {
	sdb    *sqlitedb.DB
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
func openDB(ctx context.Context, path string) (*db, error) {
	loaded, err := store.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open hub db: %w", err)
	}
	migs := make([]sqlitedb.Migration, len(loaded))
	for i, m := range loaded {
		migs[i] = sqlitedb.Migration(m)
	}
	sdb, err := sqlitedb.Open(ctx, path, sqlitedb.Options{Schema: "hub", Migrations: migs, ReadConns: dbReadConns})
	if err != nil {
		return nil, fmt.Errorf("open hub db %s: %w", path, err)
	}
	return &db{sdb: sdb, writer: sdb.Writer, reader: sdb.Reader}, nil
}

// close closes the pools, the writer last so its close checkpoints the WAL.
func (d *db) close() error { return d.sdb.Close() }

// inTx runs fn in a transaction and commits when fn succeeds.
func inTx(ctx context.Context, pool *sql.DB, fn func(tx *sql.Tx) error) error {
	return sqlitedb.InTx(ctx, pool, fn)
}
