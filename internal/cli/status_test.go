package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
)

// TestStatus_store: status names the store's driver, where it is and its
// versions, and a problem the daemon reports for it.
func TestStatus_store(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		store wire.StoreStatus
		want  []string
	}{
		{"postgres", wire.StoreStatus{Driver: "postgres", Location: "db.example:5432/jam", SchemaVersion: 16, ServerVersion: "15.4 (Debian 15.4-1)"},
			[]string{"  store        postgres db.example:5432/jam (PostgreSQL 15.4 (Debian 15.4-1), schema 16)\n"}},
		{"sqlite", wire.StoreStatus{Driver: "sqlite", Location: "/d/jam.db", SchemaVersion: 16, ServerVersion: "3.46.0"},
			[]string{"  store        sqlite /d/jam.db (SQLite 3.46.0, schema 16)\n"}},
		{"postgres down", wire.StoreStatus{Driver: "postgres", Location: "db.example:5432/jam", SchemaVersion: 16, ServerVersion: "15.4",
			Error: "the store does not answer: unavailable"},
			[]string{"  store        postgres db.example:5432/jam (PostgreSQL 15.4, schema 16)\n", "  store error  the store does not answer: unavailable\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, backend{StatusFunc: func(context.Context) (wire.Status, error) {
				return wire.Status{State: wire.StateRunning, PID: 7, Store: tc.store}, nil
			}})
			r := b.run(t, invocation{args: []string{"status"}})
			require.Equal(t, 0, r.code, r.stderr)
			for _, w := range tc.want {
				require.Contains(t, r.stdout, w)
			}
			require.Equal(t, len(tc.want), strings.Count(r.stdout, "  store "), r.stdout)
		})
	}
}
