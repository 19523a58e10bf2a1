package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
)

// The import of another dialect's rows, table by table, into an empty
// database (jam store copy). The schemas of the dialects are the same
// under the same migration numbers (see the migrations), so a row moves
// value for value: sealed columns stay sealed (their aad names the table,
// the workspace and the row's key, never the dialect), times stay UTC
// microseconds, identity columns keep their values and their sequences
// continue after them.

// ImportSource yields the rows of each table (sqlite.Store's Export*).
type ImportSource interface {
	ExportTables(ctx context.Context) ([]string, error)
	ExportRows(ctx context.Context, table string, fn func(cols []string, row []any) error) error
}

// importBatch is how many rows one COPY carries.
const importBatch = 1000

// importColumn is one column of the target schema.
type importColumn struct {
	typ      string // information_schema data_type
	identity bool
	nullable bool
}

// Import copies every table of src into this store, in one transaction,
// in the order of the foreign keys, and returns how many rows each table
// received. It refuses (jam.ErrConflict) a database that holds any row
// already, and (jam.ErrInvalid) a table or column of src this schema does
// not have: nothing is written then.
func (s *Store) Import(ctx context.Context, src ImportSource) (map[string]int64, error) {
	tables, err := src.ExportTables(ctx)
	if err != nil {
		return nil, err
	}
	var counts map[string]int64
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		counts = map[string]int64{}
		schema, err := importSchema(ctx, tx)
		if err != nil {
			return err
		}
		for name := range schema {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM `+pgx.Identifier{name}.Sanitize()).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%w: the target database is not empty (table %s has %d rows); copy into an empty database", jam.ErrConflict, name, n)
			}
		}
		for _, t := range tables {
			if _, ok := schema[t]; !ok {
				return fmt.Errorf("%w: the target schema has no table %s", jam.ErrInvalid, t)
			}
		}
		order, err := importOrder(ctx, tx, tables)
		if err != nil {
			return err
		}
		for _, t := range order {
			n, err := importTable(ctx, tx, src, t, schema[t])
			if err != nil {
				return fmt.Errorf("import %s: %w", t, err)
			}
			counts[t] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: %w", s.loc, err)
	}
	return counts, nil
}

// ImportCounts is the number of rows of each table Import fills.
func (s *Store) ImportCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.inTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		schema, err := importSchema(ctx, tx)
		if err != nil {
			return err
		}
		for name := range schema {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM `+pgx.Identifier{name}.Sanitize()).Scan(&n); err != nil {
				return err
			}
			out[name] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: count rows: %w", s.loc, err)
	}
	return out, nil
}

// importSchema lists the tables of the current schema (without the
// migrations table) and their columns.
func importSchema(ctx context.Context, tx pgx.Tx) (map[string]map[string]importColumn, error) {
	rows, err := tx.Query(ctx, `SELECT c.table_name, c.column_name, c.data_type, c.is_identity = 'YES', c.is_nullable = 'YES'
FROM information_schema.columns c JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
WHERE c.table_schema = current_schema() AND c.table_name <> 'schema_migrations'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]importColumn{}
	for rows.Next() {
		var table, col string
		var c importColumn
		if err := rows.Scan(&table, &col, &c.typ, &c.identity, &c.nullable); err != nil {
			return nil, err
		}
		if out[table] == nil {
			out[table] = map[string]importColumn{}
		}
		out[table][col] = c
	}
	return out, rows.Err()
}

// importOrder sorts tables so that each comes after the tables its
// foreign keys reference.
func importOrder(ctx context.Context, tx pgx.Tx, tables []string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT c.conrelid::regclass::text, c.confrelid::regclass::text
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
WHERE c.contype = 'f' AND n.nspname = current_schema()`)
	if err != nil {
		return nil, err
	}
	deps := map[string][]string{}
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			rows.Close()
			return nil, err
		}
		if from != to {
			deps[from] = append(deps[from], to)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sorted := slices.Clone(tables)
	slices.Sort(sorted)
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(t string) error
	visit = func(t string) error {
		switch state[t] {
		case 1:
			return fmt.Errorf("%w: the foreign keys of %s form a cycle", jam.ErrInvalid, t)
		case 2:
			return nil
		}
		state[t] = 1
		for _, d := range deps[t] {
			if slices.Contains(tables, d) {
				if err := visit(d); err != nil {
					return err
				}
			}
		}
		state[t] = 2
		out = append(out, t)
		return nil
	}
	for _, t := range sorted {
		if err := visit(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// importTable copies one table with COPY, in batches, converting the
// values SQLite keeps in another type (a boolean as 0 or 1, a blob read
// back as text), and moves its identity sequences past the copied ids.
func importTable(ctx context.Context, tx pgx.Tx, src ImportSource, table string, schema map[string]importColumn) (int64, error) {
	var cols []string
	var batch [][]any
	var total int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(batch))
		if err != nil {
			return err
		}
		total += n
		batch = batch[:0]
		return nil
	}
	err := src.ExportRows(ctx, table, func(c []string, row []any) error {
		if cols == nil {
			for _, name := range c {
				if _, ok := schema[name]; !ok {
					return fmt.Errorf("%w: the target table has no column %s", jam.ErrInvalid, name)
				}
			}
			cols = slices.Clone(c)
		}
		conv := make([]any, len(row))
		for i, v := range row {
			cv, err := importValue(v, schema[cols[i]])
			if err != nil {
				return fmt.Errorf("column %s: %w", cols[i], err)
			}
			conv[i] = cv
		}
		batch = append(batch, conv)
		if len(batch) == importBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return 0, err
	}
	for name, c := range schema {
		if !c.identity {
			continue
		}
		// setval(seq, max, true) continues after max; an empty table
		// starts at 1 (is_called false).
		q := fmt.Sprintf(`SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX(%[1]s), 1), MAX(%[1]s) IS NOT NULL) FROM %[2]s`,
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{table}.Sanitize())
		if _, err := tx.Exec(ctx, q, pgx.Identifier{table}.Sanitize(), name); err != nil {
			return 0, fmt.Errorf("sequence of %s: %w", name, err)
		}
	}
	return total, nil
}

// importValue converts a value as SQLite returns it to the column's type.
// SQLite reads an empty BLOB back as a nil slice (which COPY would send
// as NULL), so a nil for a NOT NULL bytea column (a job's empty payload, result or error) is the empty value.
func importValue(v any, col importColumn) (any, error) {
	switch col.typ {
	case "boolean":
		switch x := v.(type) {
		case int64:
			return x != 0, nil
		case bool, nil:
			return x, nil
		}
		return nil, fmt.Errorf("%w: %T is not a boolean", jam.ErrInvalid, v)
	case "bytea":
		if s, ok := v.(string); ok {
			return []byte(s), nil
		}
		if b, ok := v.([]byte); (v == nil || ok && b == nil) && !col.nullable {
			return []byte{}, nil
		}
	case "text":
		if b, ok := v.([]byte); ok {
			if !strings.ContainsRune(string(b), 0) {
				return string(b), nil
			}
			return nil, errors.New("a NUL byte in text")
		}
	}
	return v, nil
}
