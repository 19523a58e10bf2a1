package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// base is a schema of two migrations.
var base = []Migration{
	{Version: 1, Name: "init", SQL: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"},
	{Version: 2, Name: "more", SQL: "ALTER TABLE items ADD COLUMN note TEXT;"},
}

func with(extra ...Migration) []Migration { return append(append([]Migration{}, base...), extra...) }

// open opens path with opts and closes the DB when t ends.
func open(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	d, err := Open(t.Context(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func tables(t *testing.T, q *sql.DB) []string {
	t.Helper()
	rows, err := q.QueryContext(t.Context(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestOpen_migrations(t *testing.T) {
	t.Parallel()
	extra := Migration{Version: 3, Name: "extra", SQL: "CREATE TABLE extra (x INTEGER NOT NULL);"}
	edited := with()
	edited[0].SQL += "\n-- edited\n"
	tests := []struct {
		name    string
		first   []Migration // the migrations the file was created with
		second  []Migration // the migrations of the build that reopens it
		wantErr string
		wantVer int
	}{
		{name: "same schema opens", first: base, second: base, wantVer: 2},
		{name: "newer schema is refused", first: with(extra), second: base,
			wantErr: "thing schema version 3 is newer than this jam build (knows 2); upgrade jam"},
		{name: "changed migration is refused", first: base, second: edited,
			wantErr: "migration 0001_init was changed after it was applied"},
		{name: "new migration is applied", first: base, second: with(extra), wantVer: 3},
		{name: "failed migration leaves no trace", first: base,
			second:  with(Migration{Version: 3, Name: "bad", SQL: "CREATE TABLE half (x INTEGER); SELECT * FROM missing;"}),
			wantErr: "apply migration 0003_bad"},
		{name: "a gap in the list is refused", first: base,
			second:  with(Migration{Version: 4, Name: "gap", SQL: "CREATE TABLE gap (x INTEGER);"}),
			wantErr: "migration 0004_gap is number 3 of the list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "x.db")
			d, err := Open(ctx, path, Options{Schema: "thing", Migrations: tt.first})
			require.NoError(t, err)
			before := tables(t, d.Reader)
			require.NoError(t, d.Close())

			d, err = Open(ctx, path, Options{Schema: "thing", Migrations: tt.second})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, d)
				// The refused or failed open changed nothing.
				d = open(t, path, Options{Schema: "thing", Migrations: tt.first})
				require.Equal(t, before, tables(t, d.Reader))
				v, err := SchemaVersion(ctx, d.Reader)
				require.NoError(t, err)
				require.Equal(t, len(tt.first), v)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			require.Equal(t, len(tt.first), d.PriorVersion)
			v, err := SchemaVersion(ctx, d.Reader)
			require.NoError(t, err)
			require.Equal(t, tt.wantVer, v)
		})
	}
}

func TestOpen_newFileHasPriorVersionZero(t *testing.T) {
	t.Parallel()
	d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base})
	require.Zero(t, d.PriorVersion)
	require.Equal(t, []string{"items", "schema_migrations"}, tables(t, d.Reader))
}

func TestOpen_fileMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	d := open(t, path, Options{Migrations: base})
	_, err := d.Writer.ExecContext(t.Context(), "INSERT INTO items (name) VALUES ('a')")
	require.NoError(t, err)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), p)
	}
}

func TestOpen_readerRefusesWrites(t *testing.T) {
	t.Parallel()
	d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base})
	_, err := d.Reader.ExecContext(t.Context(), "INSERT INTO items (name) VALUES ('a')")
	var e *msqlite.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, sqlite3.SQLITE_READONLY, e.Code()&0xff)
	// The writer may.
	_, err = d.Writer.ExecContext(t.Context(), "INSERT INTO items (name) VALUES ('a')")
	require.NoError(t, err)
}

func TestOpen_pragmas(t *testing.T) {
	t.Parallel()
	for _, manual := range []bool{false, true} {
		t.Run(map[bool]string{false: "automatic checkpoint", true: "manual checkpoint"}[manual], func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base, ReadConns: 3, ManualCheckpoint: manual})
			// Hold every reader connection at once, so each one the pool
			// can hand out is checked, not just the first.
			conn := func(db *sql.DB) *sql.Conn {
				c, err := db.Conn(ctx)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, c.Close()) })
				return c
			}
			var readers []*sql.Conn
			for range 3 {
				readers = append(readers, conn(d.Reader))
			}
			w := conn(d.Writer)
			all := append(append([]*sql.Conn{}, readers...), w)
			if manual {
				all = append(all, conn(d.Checkpointer))
			} else {
				require.Nil(t, d.Checkpointer)
			}
			pragma := func(c *sql.Conn, name string) string {
				t.Helper()
				var v string
				require.NoError(t, c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v))
				return v
			}
			for i, c := range all {
				require.Equal(t, "wal", pragma(c, "journal_mode"), "conn %d", i)
				require.Equal(t, "2", pragma(c, "synchronous"), "conn %d", i) // FULL
				require.Equal(t, "1", pragma(c, "foreign_keys"), "conn %d", i)
				require.Equal(t, "5000", pragma(c, "busy_timeout"), "conn %d", i)
				require.Equal(t, "2", pragma(c, "temp_store"), "conn %d", i) // MEMORY
			}
			for _, c := range readers {
				require.Equal(t, "1", pragma(c, "query_only"))
			}
			require.Equal(t, "0", pragma(w, "query_only"))
			require.Equal(t, map[bool]string{false: "1000", true: "0"}[manual], pragma(w, "wal_autocheckpoint"))
			require.Equal(t, 1, d.Writer.Stats().MaxOpenConnections)
			require.Equal(t, 3, d.Reader.Stats().MaxOpenConnections)
		})
	}
}

// TestOpen_writerBeginsImmediate: a transaction on the writer holds the
// write lock from BEGIN on, before it has run a statement.
func TestOpen_writerBeginsImmediate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "x.db")
	a := open(t, path, Options{Migrations: base})
	b := open(t, path, Options{Migrations: base})

	tx, err := a.Writer.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck // the test's outcome is the insert's error

	c, err := b.Writer.Conn(ctx)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ExecContext(ctx, "PRAGMA busy_timeout = 0") // fail at once instead of waiting 5 s
	require.NoError(t, err)
	_, err = c.ExecContext(ctx, "INSERT INTO items (name) VALUES ('b')")
	var e *msqlite.Error
	require.ErrorAs(t, err, &e, "the other writer must be locked out by an empty transaction")
	require.Equal(t, sqlite3.SQLITE_BUSY, e.Code()&0xff)
}

func TestOpen_twoOpensOfOneFile(t *testing.T) {
	t.Parallel()

	t.Run("several migrate one file at once", func(t *testing.T) {
		t.Parallel()
		// Each round is a file at version 1 that every Open migrates to 2
		// at once: an Open that read the ledger before another applied
		// migration 2 must skip it, not apply it twice. (The file exists
		// and is in WAL mode already; see the package doc on new files.)
		for round := range 5 {
			path := filepath.Join(t.TempDir(), "x.db")
			first, err := Open(t.Context(), path, Options{Migrations: base[:1]})
			require.NoError(t, err)
			require.NoError(t, first.Close())
			var wg sync.WaitGroup
			dbs := make([]*DB, 6)
			errs := make([]error, len(dbs))
			for i := range dbs {
				wg.Go(func() { dbs[i], errs[i] = Open(t.Context(), path, Options{Migrations: base}) })
			}
			wg.Wait()
			for i := range dbs {
				require.NoError(t, errs[i], "round %d", round)
				t.Cleanup(func() { require.NoError(t, dbs[i].Close()) })
			}
			var n int
			require.NoError(t, dbs[0].Reader.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM schema_migrations").Scan(&n))
			require.Equal(t, len(base), n, "each migration is recorded once")
		}
	})

	t.Run("each sees the other's writes", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "x.db")
		a := open(t, path, Options{Migrations: base, ManualCheckpoint: true})
		b := open(t, path, Options{Migrations: base})
		_, err := a.Writer.ExecContext(ctx, "INSERT INTO items (name) VALUES ('from a')")
		require.NoError(t, err)
		_, err = b.Writer.ExecContext(ctx, "INSERT INTO items (name) VALUES ('from b')")
		require.NoError(t, err)
		for _, d := range []*DB{a, b} {
			var n int
			require.NoError(t, d.Reader.QueryRowContext(ctx, "SELECT COUNT(*) FROM items").Scan(&n))
			require.Equal(t, 2, n)
		}
		_, err = b.Writer.ExecContext(ctx, "INSERT INTO items (name) VALUES ('from a')")
		require.True(t, IsConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE), "%v", err)
	})
}

func TestOpen_invalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts Options
	}{
		{"empty path", "", Options{}},
		{"memory", ":memory:", Options{}},
		{"uri", "file:x.db", Options{}},
		{"question mark", filepath.Join(dir, "a?b"), Options{}},
		{"negative read conns", filepath.Join(dir, "x.db"), Options{ReadConns: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := Open(t.Context(), tt.path, tt.opts)
			require.ErrorIs(t, err, jam.ErrInvalid)
			require.Nil(t, d)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused open creates no file")
}

func TestOpen_missingDirectory(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), filepath.Join(t.TempDir(), "no", "x.db"), Options{})
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		params []string
		want   url.Values
	}{
		{"common pragmas only", "/d/x.db", nil, url.Values{"_pragma": commonPragmas}},
		{"pragma and driver parameter", "/d/x.db", []string{"query_only(1)", "_txlock=immediate"},
			url.Values{"_pragma": append(append([]string{}, commonPragmas...), "query_only(1)"), "_txlock": {"immediate"}}},
		{"path with a space and a percent", "/d i/50%.db", []string{"journal_mode(WAL)"},
			url.Values{"_pragma": append(append([]string{}, commonPragmas...), "journal_mode(WAL)")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := dsn(tt.path, tt.params...)
			// The driver splits at the first '?' and takes the path as is.
			path, query, ok := strings.Cut(got, "?")
			require.True(t, ok)
			require.Equal(t, tt.path, path)
			q, err := url.ParseQuery(query)
			require.NoError(t, err)
			require.Equal(t, tt.want, q)
		})
	}
	require.NotContains(t, commonPragmas, "", "sanity")
	require.Equal(t, "/x?_pragma=busy_timeout%285000%29&_pragma=foreign_keys%281%29&_pragma=synchronous%28FULL%29&_pragma=temp_store%28MEMORY%29", dsn("/x"))
}

func TestStorageFault(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base})
	_, err := d.Writer.ExecContext(ctx, "INSERT INTO items (name) VALUES ('a')")
	require.NoError(t, err)

	// A real full database: cap the file at its current size.
	var pages int
	require.NoError(t, d.Writer.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages))
	_, err = d.Writer.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages))
	require.NoError(t, err)
	full := InTx(ctx, d.Writer, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO items (name) SELECT printf('%.*c', 100000, 'x')")
		return err
	})
	_, readOnly := d.Reader.ExecContext(ctx, "INSERT INTO items (name) VALUES ('b')")
	_, schemaErr := d.Writer.ExecContext(ctx, "INSERT INTO nowhere VALUES (1)")
	_, constraint := d.Writer.ExecContext(ctx, "INSERT INTO items (name) VALUES ('a')")

	tests := []struct {
		name string
		err  error
		full bool
	}{
		{"nil", nil, false},
		{"SQLITE_FULL", full, true},
		{"SQLITE_READONLY", readOnly, true},
		{"already classified", StorageFault(full), true},
		{"a constraint", constraint, false},
		{"a schema error", schemaErr, false},
		{"not a driver error", errors.New("other"), false},
		{"cancelled", context.Canceled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StorageFault(tt.err)
			require.Equal(t, tt.full, errors.Is(got, jam.ErrStorageFull), "%v", got)
			if tt.err == nil {
				require.NoError(t, got)
				return
			}
			require.ErrorIs(t, got, tt.err, "the cause stays reachable")
			if !tt.full {
				require.Equal(t, tt.err, got, "an unclassified error is returned as it is")
			}
		})
	}
	require.Error(t, full)
	require.True(t, IsConstraint(constraint, sqlite3.SQLITE_CONSTRAINT_UNIQUE))
	require.False(t, IsConstraint(full, sqlite3.SQLITE_CONSTRAINT_UNIQUE))
	// The classified transaction rolled back and the writer stays usable.
	_, err = d.Writer.ExecContext(ctx, "PRAGMA max_page_count = 1000000")
	require.NoError(t, err)
	_, err = d.Writer.ExecContext(ctx, "INSERT INTO items (name) VALUES ('c')")
	require.NoError(t, err)
}

func TestInTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base})
	count := func() int {
		var n int
		require.NoError(t, d.Reader.QueryRowContext(ctx, "SELECT COUNT(*) FROM items").Scan(&n))
		return n
	}
	boom := errors.New("boom")
	err := InTx(ctx, d.Writer, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO items (name) VALUES ('a')")
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Zero(t, count(), "fn's error rolls back")
	require.NoError(t, InTx(ctx, d.Writer, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO items (name) VALUES ('a')")
		return err
	}))
	require.Equal(t, 1, count())
}

func TestCheckpoint(t *testing.T) {
	t.Parallel()
	fill := func(t *testing.T, d *DB) {
		t.Helper()
		for i := range 50 {
			_, err := d.Writer.ExecContext(t.Context(), "INSERT INTO items (name) VALUES (printf('%d-%.*c', ?, 4000, 'x'))", i)
			require.NoError(t, err)
		}
	}

	t.Run("passive keeps the file, truncate empties it", func(t *testing.T) {
		t.Parallel()
		d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base, ManualCheckpoint: true})
		fill(t, d)
		before := d.WALSize()
		require.Greater(t, before, int64(100<<10))
		require.NoError(t, d.Checkpoint(t.Context(), false))
		require.Equal(t, before, d.WALSize())
		require.NoError(t, d.Checkpoint(t.Context(), true))
		require.Zero(t, d.WALSize())
	})

	t.Run("close truncates", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "x.db")
		d, err := Open(t.Context(), path, Options{Migrations: base, ManualCheckpoint: true})
		require.NoError(t, err)
		fill(t, d)
		require.Positive(t, d.WALSize())
		require.NoError(t, d.Close())
		require.Zero(t, d.WALSize())
		require.NoError(t, d.Close(), "a second Close is harmless")
	})

	t.Run("needs the checkpointer", func(t *testing.T) {
		t.Parallel()
		d := open(t, filepath.Join(t.TempDir(), "x.db"), Options{Migrations: base})
		require.ErrorContains(t, d.Checkpoint(t.Context(), false), "opened without ManualCheckpoint")
	})
}

// FuzzDSN: for every path ValidatePath accepts, the driver's split of the
// DSN (at the first '?') gives back the path and exactly the parameters.
func FuzzDSN(f *testing.F) {
	for _, s := range []string{"/d/x.db", "x.db", "/d i/50%.db", "/a&b=c#d.db", "/ü/\x00.db", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if ValidatePath(path) != nil {
			return
		}
		got := dsn(path, "query_only(1)", "_txlock=immediate")
		p, query, ok := strings.Cut(got, "?")
		require.True(t, ok)
		require.Equal(t, path, p)
		q, err := url.ParseQuery(query)
		require.NoError(t, err)
		require.Equal(t, url.Values{
			"_pragma": append(append([]string{}, commonPragmas...), "query_only(1)"),
			"_txlock": {"immediate"},
		}, q)
	})
}
