package sqlitedb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"
)

// Migration is one numbered schema change. It has the fields of
// Migration, so a caller converts each with Migration(m); this
// package sits below the store and cannot name that type.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Checksum identifies the migration's text, as Migration.Checksum
// does, so a database refuses a migration edited after it was applied.
func (m Migration) Checksum() string {
	sum := sha256.Sum256([]byte(m.SQL))
	return hex.EncodeToString(sum[:])
}

// SQL of the migration ledger. The ledger is created outside the numbered
// migrations because it is what tells which of them have run.
const (
	migrationTableCreate = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)`
	migrationSelectChecksums = `SELECT version, checksum FROM schema_migrations ORDER BY version`
	migrationSelectExists    = `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`
	migrationInsert          = `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`
	migrationSelectVersion   = `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`
)

// migrate brings db up to the last of migs, which must be numbered 1..n as
// store.LoadMigrations returns them. It refuses a database that has a
// migration migs lacks, or one whose text differs from migs. schema names
// the database in the refusal.
func migrate(ctx context.Context, db *sql.DB, schema string, migs []Migration) error {
	for i, m := range migs {
		if m.Version != i+1 {
			return fmt.Errorf("migration %s is number %d of the list", Label(m), i+1)
		}
	}
	if _, err := db.ExecContext(ctx, migrationTableCreate); err != nil {
		return fmt.Errorf("create migration table: %w", StorageFault(err))
	}
	applied, err := appliedChecksums(ctx, db)
	if err != nil {
		return err
	}
	newest := 0
	for v := range applied {
		newest = max(newest, v)
	}
	if newest > len(migs) {
		return fmt.Errorf("%s schema version %d is newer than this jam build (knows %d); upgrade jam", schema, newest, len(migs))
	}
	for _, m := range migs {
		if sum, ok := applied[m.Version]; ok && sum != m.Checksum() {
			return fmt.Errorf("migration %s was changed after it was applied", Label(m))
		}
	}
	for _, m := range migs {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		if err := applyMigration(ctx, db, m); err != nil {
			return fmt.Errorf("apply migration %s: %w", Label(m), err)
		}
	}
	return nil
}

// appliedChecksums returns the checksum of each applied migration by version.
func appliedChecksums(ctx context.Context, db *sql.DB) (map[int]string, error) {
	rows, err := db.QueryContext(ctx, migrationSelectChecksums)
	if err != nil {
		return nil, fmt.Errorf("read migration table: %w", err)
	}
	defer rows.Close()
	applied := map[int]string{}
	for rows.Next() {
		var v int
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return nil, fmt.Errorf("read migration table: %w", err)
		}
		applied[v] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read migration table: %w", err)
	}
	return applied, nil
}

// applyMigration runs m and records it in one transaction, so a failed
// migration leaves neither schema changes nor a ledger row behind.
func applyMigration(ctx context.Context, db *sql.DB, m Migration) error {
	return StorageFault(InTx(ctx, db, func(tx *sql.Tx) error {
		// Another process opening the same file may have applied m since
		// the ledger was read; the IMMEDIATE transaction now excludes it.
		var n int
		if err := tx.QueryRowContext(ctx, migrationSelectExists, m.Version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, migrationInsert, m.Version, m.Name, m.Checksum(), time.Now().UnixMicro())
		return err
	}))
}

// SchemaVersion returns the highest applied migration, 0 if none.
func SchemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, migrationSelectVersion).Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}

// Label names m as its file does, without the extension.
func Label(m Migration) string {
	return fmt.Sprintf("%04d_%s", m.Version, m.Name)
}
