package ingest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// postgresURL is the server the postgres targets' tests use; they skip
// without it.
func postgresURL(t *testing.T) string {
	u := os.Getenv("JAM_BENCH_POSTGRES_URL")
	if u == "" {
		t.Skip("JAM_BENCH_POSTGRES_URL is unset")
	}
	return u
}

// TestJamDrained checks that a drained target leaves its spool empty and
// an undrained one leaves every row, on each dialect.
func TestJamDrained(t *testing.T) {
	t.Parallel()
	for _, name := range []string{Jam, JamDrained, JamPostgres, JamPostgresDrained} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var env Env
			if name == JamPostgres || name == JamPostgresDrained {
				env.PostgresURL = postgresURL(t)
			}
			tg, err := OpenEnv(t.Context(), name, t.TempDir(), env)
			require.NoError(t, err)
			jt := tg.(*jamTarget)
			defer func() { require.NoError(t, tg.Close()) }()
			res, err := Run(t.Context(), tg, Options{Producers: 4, Count: 200})
			require.NoError(t, err)
			require.Equal(t, 200, res.Count)
			require.NoError(t, jt.stopDrain())
			usage, err := jt.st.SpoolUsage(t.Context())
			require.NoError(t, err)
			var left int
			for _, u := range usage {
				left += u.Entries
			}
			if jt.drain != nil {
				require.Zero(t, left, "a drained spool keeps no entry")
				require.Equal(t, int64(200), jt.drained.Load())
				return
			}
			require.Equal(t, 200, left, "an undrained spool keeps every entry")
		})
	}
}
