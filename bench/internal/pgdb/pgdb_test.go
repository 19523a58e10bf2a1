package pgdb

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCreate makes a database, connects to it through the URL it got, and
// drops it while that connection is still open.
func TestCreate(t *testing.T) {
	t.Parallel()
	server := pgtest.ServerURL(t)
	dbURL, name, drop, err := Create(t.Context(), server, "jambench_pgdb_")
	require.NoError(t, err)
	require.Regexp(t, `^jambench_pgdb_[0-9a-f]{32}$`, name)
	require.Contains(t, dbURL, "/"+name)
	ok, err := Exists(t.Context(), server, name)
	require.NoError(t, err)
	require.True(t, ok)
	open, err := Exists(t.Context(), dbURL, name) // a session on the new database
	require.NoError(t, err)
	require.True(t, open)
	require.NoError(t, drop())
	ok, err = Exists(t.Context(), server, name)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, drop(), "dropping twice is not an error")
}

func TestCreate_errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url, prefix, want string
	}{
		{"prefix with a quote", "postgres://127.0.0.1:1/db", `x"; DROP`, "invalid prefix"},
		{"empty prefix", "postgres://127.0.0.1:1/db", "", "invalid prefix"},
		{"prefix starting with a digit", "postgres://127.0.0.1:1/db", "1x", "invalid prefix"},
		{"URL that does not parse", "postgres://u:sekrit@[::1/db", "p_", "does not parse"},
		{"server that does not answer", "postgres://u:sekrit@127.0.0.1:1/db?connect_timeout=2", "p_", "connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := Create(t.Context(), tc.url, tc.prefix)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "sekrit")
		})
	}
}
