package sqlite

import (
	"context"
	"fmt"
	"strings"
)

// The export of a store's rows, table by table, for moving a store to
// another dialect (jam store copy). Values are passed as the database
// holds them: sealed columns stay sealed, times stay UTC microseconds.

// exportTablesQuery lists the tables of the schema, without SQLite's own
// and the migrations table (the target has its own).
const exportTablesQuery = `SELECT name FROM sqlite_schema WHERE type = 'table'
AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name`

// ExportTables lists the tables ExportRows can read.
func (s *Store) ExportTables(ctx context.Context) ([]string, error) {
	rows, err := s.reader.QueryContext(ctx, exportTablesQuery)
	if err != nil {
		return nil, fmt.Errorf("export: list tables: %w", storageFault(err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("export: list tables: %w", storageFault(err))
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export: list tables: %w", storageFault(err))
	}
	return out, nil
}

// ExportRows calls fn with the column names of table and each of its
// rows (int64, float64, string, []byte or nil per value), in rowid
// order, all read in one transaction. table must be one ExportTables
// listed.
func (s *Store) ExportRows(ctx context.Context, table string, fn func(cols []string, row []any) error) error {
	if err := s.exportable(ctx, table); err != nil {
		return err
	}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("export %s: %w", table, storageFault(err))
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	// The name is one the schema lists, quoted as an identifier.
	rows, err := tx.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
	if err != nil {
		return fmt.Errorf("export %s: %w", table, storageFault(err))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("export %s: %w", table, storageFault(err))
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("export %s: %w", table, storageFault(err))
		}
		if err := fn(cols, vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export %s: %w", table, storageFault(err))
	}
	return nil
}

// ExportCount is the number of rows of table.
func (s *Store) ExportCount(ctx context.Context, table string) (int64, error) {
	if err := s.exportable(ctx, table); err != nil {
		return 0, err
	}
	var n int64
	if err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM "`+table+`"`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, storageFault(err))
	}
	return n, nil
}

// exportable refuses a name that is not one of ExportTables.
func (s *Store) exportable(ctx context.Context, table string) error {
	tables, err := s.ExportTables(ctx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if t == table && !strings.ContainsRune(t, '"') {
			return nil
		}
	}
	return fmt.Errorf("export: no table %q", table)
}
