package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	cfg Config
	st  *Store
}

// setup opens a store in a fresh directory, sealing content with a key
// of its own as jamd does, and closes it when t ends. The checkpoint
// interval is an hour so the background loop never races a test that
// checkpoints by hand.
func setup(t *testing.T) *testBundle {
	t.Helper()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	cfg := Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box}
	st, err := Open(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return &testBundle{cfg: cfg, st: st}
}

// embedded returns this build's migrations.
func embedded(t *testing.T) []store.Migration {
	t.Helper()
	migs, err := store.LoadMigrations(migrationFS, "migrations")
	require.NoError(t, err)
	return migs
}

func TestStore_conformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, opener)
}

// opener is the suite's [storetest.Opener]: one database file per call,
// and every handle a separate Open of that file with the same sealing
// key, as two processes on one machine would have.
func opener(t *testing.T) func(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	cfg := Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box}
	return func(t *testing.T) *Store {
		t.Helper()
		st, err := Open(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
}

func TestStore_pragmas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	// Hold every reader connection at once, so each one the pool can hand
	// out is checked, not just the first.
	var conns []*sql.Conn
	for range b.cfg.withDefaults().ReadConns {
		c, err := b.st.reader.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, c.Close()) })
		conns = append(conns, c)
	}
	w, err := b.st.writer.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close()) })

	pragma := func(c *sql.Conn, name string) string {
		t.Helper()
		var v string
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v))
		return v
	}
	for i, c := range append(conns, w) {
		require.Equal(t, "wal", pragma(c, "journal_mode"), "conn %d", i)
		require.Equal(t, "2", pragma(c, "synchronous"), "conn %d", i)
		require.Equal(t, "1", pragma(c, "foreign_keys"), "conn %d", i)
		require.Equal(t, "5000", pragma(c, "busy_timeout"), "conn %d", i)
		require.Equal(t, "2", pragma(c, "temp_store"), "conn %d", i) // MEMORY
	}
	for _, c := range conns {
		require.Equal(t, "1", pragma(c, "query_only"))
	}
	require.Equal(t, "0", pragma(w, "query_only"))
	require.Equal(t, "0", pragma(w, "wal_autocheckpoint"))
}

func TestStore_readerRefusesWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.reader.ExecContext(t.Context(),
		"INSERT INTO workspaces (id, name, created_at) VALUES ('ws_x', 'x', 1)")
	var e *msqlite.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, sqlite3.SQLITE_READONLY, e.Code()&0xff)
}

func TestOpen_fileMode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fi, err := os.Stat(b.cfg.Path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())

	// SQLite gives the WAL the main file's mode.
	fi, err = os.Stat(b.cfg.Path + "-wal")
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
}

func TestOpen_reopenKeepsDataAndAppliesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg := Config{Path: filepath.Join(t.TempDir(), "jam.db")}

	st, err := Open(ctx, cfg)
	require.NoError(t, err)
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{
		ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "alpha", At: time.Now(),
	})
	require.NoError(t, err)
	before := ledger(t, st)
	require.NoError(t, st.Close())

	st, err = Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.Equal(t, before, ledger(t, st), "reopening must not re-apply migrations")
	got, err := st.WorkspaceGet(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, w.Name, got.Name)
}

// ledger returns schema_migrations as "version name checksum applied_at" lines.
func ledger(t *testing.T, st *Store) []string {
	t.Helper()
	rows, err := st.reader.QueryContext(t.Context(),
		"SELECT version || ' ' || name || ' ' || checksum || ' ' || applied_at FROM schema_migrations ORDER BY version")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		out = append(out, line)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestOpen_migrations(t *testing.T) {
	t.Parallel()
	// The extra migrations come right after this build's last one.
	n := len(embedded(t))
	extra := store.Migration{Version: n + 1, Name: "extra", SQL: "CREATE TABLE extra (x INTEGER NOT NULL);"}

	tests := []struct {
		name    string
		first   func(t *testing.T) []store.Migration // migrations the file was created with
		second  func(t *testing.T) []store.Migration // migrations of the build that reopens it
		wantErr string
		wantVer int
	}{
		{
			name:    "newer schema is refused",
			first:   func(t *testing.T) []store.Migration { return append(embedded(t), extra) },
			second:  embedded,
			wantErr: fmt.Sprintf("store schema version %d is newer than this jam build (knows %d); upgrade jam", n+1, n),
		},
		{
			name:  "edited migration is refused",
			first: embedded,
			second: func(t *testing.T) []store.Migration {
				migs := embedded(t)
				migs[0].SQL += "\n-- edited\n"
				return migs
			},
			wantErr: "migration 0001_init was changed after it was applied",
		},
		{
			name:    "new migration is applied",
			first:   embedded,
			second:  func(t *testing.T) []store.Migration { return append(embedded(t), extra) },
			wantVer: n + 1,
		},
		{
			name:  "failed migration leaves no trace",
			first: embedded,
			second: func(t *testing.T) []store.Migration {
				bad := store.Migration{Version: n + 1, Name: "bad", SQL: "CREATE TABLE half (x INTEGER); SELECT * FROM missing;"}
				return append(embedded(t), bad)
			},
			wantErr: fmt.Sprintf("apply migration %04d_bad", n+1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			cfg := Config{Path: filepath.Join(t.TempDir(), "jam.db")}
			st, err := open(ctx, cfg, tt.first(t))
			require.NoError(t, err)
			require.NoError(t, st.Close())

			st, err = open(ctx, cfg, tt.second(t))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, st)
				// The refused or failed open changed nothing.
				st, err = open(ctx, cfg, tt.first(t))
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, st.Close()) })
				var n int
				require.NoError(t, st.reader.QueryRowContext(ctx,
					"SELECT COUNT(*) FROM sqlite_schema WHERE name = 'half'").Scan(&n))
				require.Zero(t, n)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			info, err := st.Info(ctx)
			require.NoError(t, err)
			require.Equal(t, tt.wantVer, info.SchemaVersion)
		})
	}
}

func TestConfig_validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"empty path", Config{}},
		{"memory", Config{Path: ":memory:"}},
		{"uri", Config{Path: "file:jam.db"}},
		{"question mark", Config{Path: "/tmp/a?b"}},
		{"negative read conns", Config{Path: "jam.db", ReadConns: -1}},
		{"negative interval", Config{Path: "jam.db", CheckpointInterval: -time.Second}},
		{"negative truncate bytes", Config{Path: "jam.db", CheckpointTruncateBytes: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, tt.cfg.withDefaults().validate(), jam.ErrInvalid)
		})
	}
}

func TestConfig_withDefaults(t *testing.T) {
	t.Parallel()
	cfg := Config{Path: "jam.db"}.withDefaults()
	require.NoError(t, cfg.validate())
	require.NotNil(t, cfg.Logger)
	require.Equal(t, 4, cfg.ReadConns)
	require.Equal(t, time.Second, cfg.CheckpointInterval)
	require.Equal(t, int64(64<<20), cfg.CheckpointTruncateBytes)
}

func TestStore_Close(t *testing.T) {
	t.Parallel()
	cfg := Config{Path: filepath.Join(t.TempDir(), "jam.db")}
	st, err := Open(t.Context(), cfg)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.NoError(t, st.Close())
	_, err = st.Info(t.Context())
	require.Error(t, err, "a closed store must fail, not panic")
}

// fillWAL commits enough to make the WAL a few hundred KiB.
func fillWAL(t *testing.T, st *Store) {
	t.Helper()
	ctx := t.Context()
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{
		ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "alpha", At: time.Now(),
	})
	require.NoError(t, err)
	value := strings.Repeat("v", 4<<10)
	for i := range 100 {
		_, err := st.SettingPut(ctx, store.SettingPutParams{
			WorkspaceID: w.ID, Key: fmt.Sprintf("k%03d", i), Value: value, At: time.Now(),
		})
		require.NoError(t, err)
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return fi.Size()
}

func TestStore_checkpoint(t *testing.T) {
	t.Parallel()

	t.Run("passive keeps the file", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fillWAL(t, b.st)
		before := walSize(t, b.cfg.Path)
		require.Positive(t, before)
		require.NoError(t, b.st.checkpointTick(t.Context())) // far below 64 MiB
		require.Equal(t, before, walSize(t, b.cfg.Path))
	})

	t.Run("tick truncates past the limit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fillWAL(t, b.st)
		require.Greater(t, walSize(t, b.cfg.Path), int64(64<<10))
		b.st.truncateBytes = 64 << 10 // the loop is idle (hourly), so no race
		require.NoError(t, b.st.checkpointTick(t.Context()))
		require.Zero(t, walSize(t, b.cfg.Path))

		// The data survived the move into the main file.
		ws, err := b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		require.Len(t, ws, 1)
	})

	t.Run("close truncates", func(t *testing.T) {
		t.Parallel()
		cfg := Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour}
		st, err := Open(t.Context(), cfg)
		require.NoError(t, err)
		fillWAL(t, st)
		require.Positive(t, walSize(t, cfg.Path))
		require.NoError(t, st.Close())
		require.Zero(t, walSize(t, cfg.Path))
	})
}
