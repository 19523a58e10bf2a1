package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jamhq/jam/internal/store"
)

// migrationFS holds this dialect's migrations, numbered like every other
// dialect's.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the pg_advisory_lock key every jam store takes while
// it reads and applies migrations: "jam.migr" as a big-endian int64.
const migrationLockKey int64 = 0x6a616d2e6d696772

// SQL of the migration ledger, the same table as the SQLite dialect's.
const (
	migrationLock        = `SELECT pg_advisory_lock($1)`
	migrationUnlock      = `SELECT pg_advisory_unlock($1)`
	migrationTableCreate = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)`
	migrationSelectChecksums = `SELECT version, checksum FROM schema_migrations ORDER BY version`
	migrationInsert          = `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)`
	migrationSelectVersion   = `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`
)

// migrate brings the database up to the last of migs, which must be
// numbered 1..n as store.LoadMigrations returns them. It refuses a
// database that has a migration migs lacks, or one whose text differs
// from migs, exactly as the SQLite dialect does.
//
// Everything runs on one connection holding a session-level advisory
// lock, so daemons starting at once against one empty database apply
// each migration once: the second waits for the first, then reads a
// ledger that is up to date. Each migration and its ledger row commit in
// one transaction (PostgreSQL's DDL is transactional), so a failed
// migration leaves neither behind. The lock is released before the
// connection returns to the pool, and is dropped by the server if the
// connection dies.
func migrate(ctx context.Context, pool *pgxpool.Pool, migs []store.Migration) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, migrationLock, migrationLockKey); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), migrationUnlock, migrationLockKey); uerr != nil {
			// A connection that cannot unlock may still hold the lock:
			// close it rather than hand it back to the pool.
			err = errors.Join(err, fmt.Errorf("release migration lock: %w", uerr), conn.Conn().Close(context.WithoutCancel(ctx)))
		}
	}()

	if _, err := conn.Exec(ctx, migrationTableCreate); err != nil {
		return fmt.Errorf("create migration table: %w", err)
	}
	applied, err := appliedChecksums(ctx, conn)
	if err != nil {
		return err
	}
	newest := 0
	for v := range applied {
		newest = max(newest, v)
	}
	if newest > len(migs) {
		return fmt.Errorf("store schema version %d is newer than this jam build (knows %d); upgrade jam", newest, len(migs))
	}
	for _, m := range migs {
		if sum, ok := applied[m.Version]; ok && sum != m.Checksum() {
			return fmt.Errorf("migration %s was changed after it was applied", migrationLabel(m))
		}
	}
	for _, m := range migs {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, migrationInsert, m.Version, m.Name, m.Checksum(), time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", migrationLabel(m), err)
		}
	}
	return nil
}

// appliedChecksums returns the checksum of each applied migration by version.
func appliedChecksums(ctx context.Context, q querier) (map[int]string, error) {
	rows, err := q.Query(ctx, migrationSelectChecksums)
	if err != nil {
		return nil, fmt.Errorf("read migration table: %w", err)
	}
	applied := map[int]string{}
	var v int
	var sum string
	_, err = pgx.ForEachRow(rows, []any{&v, &sum}, func() error {
		applied[v] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read migration table: %w", err)
	}
	return applied, nil
}

// schemaVersion returns the highest applied migration, 0 if none.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRow(ctx, migrationSelectVersion).Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}

// migrationLabel names m as its file does, without the extension.
func migrationLabel(m store.Migration) string {
	return fmt.Sprintf("%04d_%s", m.Version, m.Name)
}
