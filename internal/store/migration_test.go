package store_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

	tests := []struct {
		name    string
		fsys    fstest.MapFS
		want    []store.Migration
		wantErr string
	}{
		{
			name: "good sequence",
			fsys: fstest.MapFS{
				"m/0002_add_index.sql": file("CREATE INDEX i ON t (x);"),
				"m/0001_init.sql":      file("CREATE TABLE t (x INTEGER);"),
				"m/0003_v3.sql":        file(""),
			},
			want: []store.Migration{
				{Version: 1, Name: "init", SQL: "CREATE TABLE t (x INTEGER);"},
				{Version: 2, Name: "add_index", SQL: "CREATE INDEX i ON t (x);"},
				{Version: 3, Name: "v3", SQL: ""},
			},
		},
		{
			name: "empty directory",
			fsys: fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir}},
		},
		{
			name:    "missing directory",
			fsys:    fstest.MapFS{},
			wantErr: "read migrations",
		},
		{
			name: "gap",
			fsys: fstest.MapFS{
				"m/0001_init.sql": file(""),
				"m/0003_late.sql": file(""),
			},
			wantErr: "migration 0003_late: want version 2",
		},
		{
			name:    "does not start at one",
			fsys:    fstest.MapFS{"m/0002_init.sql": file("")},
			wantErr: "migration 0002_init: want version 1",
		},
		{
			name: "duplicate number",
			fsys: fstest.MapFS{
				"m/0001_a.sql": file(""),
				"m/0001_b.sql": file(""),
			},
			wantErr: "want version 2",
		},
		{
			name:    "bad name: short number",
			fsys:    fstest.MapFS{"m/001_init.sql": file("")},
			wantErr: `migration "001_init.sql": name must be NNNN_name.sql`,
		},
		{
			name:    "bad name: upper case",
			fsys:    fstest.MapFS{"m/0001_Init.sql": file("")},
			wantErr: `migration "0001_Init.sql": name must be NNNN_name.sql`,
		},
		{
			name:    "bad name: no name",
			fsys:    fstest.MapFS{"m/0001.sql": file("")},
			wantErr: `migration "0001.sql": name must be NNNN_name.sql`,
		},
		{
			name: "non-sql file",
			fsys: fstest.MapFS{
				"m/0001_init.sql": file(""),
				"m/README.md":     file("notes"),
			},
			wantErr: `migration "README.md": name must be NNNN_name.sql`,
		},
		{
			name: "directory entry",
			fsys: fstest.MapFS{
				"m/0001_init.sql":     file(""),
				"m/0002_nested.sql/x": file(""),
			},
			wantErr: `migration "0002_nested.sql" is a directory`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := store.LoadMigrations(tt.fsys, "m")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestMigration_Checksum(t *testing.T) {
	t.Parallel()
	a := store.Migration{Version: 1, Name: "init", SQL: "CREATE TABLE t (x INTEGER);"}
	b := a
	b.SQL += "\n"
	require.Len(t, a.Checksum(), 64)
	require.Equal(t, a.Checksum(), a.Checksum())
	require.NotEqual(t, a.Checksum(), b.Checksum(), "any edit must change the checksum")
}
