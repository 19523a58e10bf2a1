package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/bench/internal/pgdb"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// TestMain doubles as the daemon when runJam re-executes the test binary.
func TestMain(m *testing.M) {
	if dir := os.Getenv(ChildEnv); dir != "" {
		if err := Child(context.Background(), dir, os.Getenv(StoreEnv), os.Stdin); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rc") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestRun runs the scenario at a tiny size: jam redelivers every message
// exactly once (delivered once, listed once, claimed once on the hub), the
// file spool reads every file, and the hub-alone baseline takes its sample.
func TestRun(t *testing.T) {
	t.Parallel()
	const messages, rooms, sample = 120, 7, 50
	res, err := Run(t.Context(), Options{Messages: messages, Rooms: rooms, HubSample: sample, Dir: shortDir(t)})
	require.NoError(t, err)
	require.Equal(t, messages, res.Jam.Taken)
	require.Equal(t, messages, res.Jam.Delivered)
	require.Equal(t, messages, res.Jam.Inbox)
	require.Equal(t, messages, res.Jam.Claimed)
	require.Equal(t, messages, res.File.Read)
	require.Equal(t, sample, res.Hub.Taken)
	t.Logf("%+v", res)
	for name, tm := range map[string]Times{"hub": res.Hub.Times, "file spool": res.File.Times} {
		require.Positive(t, tm.First, name)
		require.GreaterOrEqual(t, tm.All, tm.First, name)
	}
	// jam's control API answers while the backlog is redelivered; at these
	// sizes the agent may still see its first message only after the last
	// was delivered.
	require.Positive(t, res.Jam.FirstDeliveredEvent)
	require.GreaterOrEqual(t, res.Jam.All, res.Jam.FirstDeliveredEvent)
	require.GreaterOrEqual(t, res.Jam.First, res.Jam.Ready)
	require.Greater(t, res.Hub.All, res.Hub.Seconds, "extrapolated from the sample")
	require.Positive(t, res.Jam.PeakRSSKiB)
}

// TestRun_postgres runs the scenario at a tiny size with jam also over
// PostgreSQL (on the server of JAM_TEST_POSTGRES_URL; skipped without
// it): there too every message is delivered once, listed once and claimed
// once on the hub, the database is dropped afterwards, and the URL shows
// in neither the result nor the log.
func TestRun_postgres(t *testing.T) {
	t.Parallel()
	server := pgtest.ServerURL(t)
	const messages, rooms = 120, 7
	var log bytes.Buffer
	res, err := Run(t.Context(), Options{Messages: messages, Rooms: rooms, HubSample: 50, PostgresURL: server, Dir: shortDir(t), Log: &log})
	require.NoError(t, err)
	require.Equal(t, messages, res.Jam.Delivered, "SQLite")
	pg := res.Postgres
	require.NotNil(t, pg)
	t.Logf("%+v", *pg)
	require.Equal(t, messages, pg.Taken)
	require.Equal(t, messages, pg.Delivered)
	require.Equal(t, messages, pg.Inbox)
	require.Equal(t, messages, pg.Claimed)
	require.Positive(t, pg.Setup)
	require.Positive(t, pg.FirstDeliveredEvent)
	require.GreaterOrEqual(t, pg.All, pg.FirstDeliveredEvent)
	require.GreaterOrEqual(t, pg.First, pg.Ready)
	require.Positive(t, pg.PeakRSSKiB)

	left, err := pgdb.Exists(t.Context(), server, pg.Database)
	require.NoError(t, err)
	require.False(t, left, "database %s dropped", pg.Database)

	b, err := json.Marshal(res)
	require.NoError(t, err)
	for _, out := range []string{string(b), log.String()} {
		require.NotContains(t, out, "postgres://")
		require.NotContains(t, out, "postgresql://")
	}
	require.Contains(t, string(b), `"jam_postgres":`)
	require.Contains(t, log.String(), "jam over postgres:")
}

// TestRun_postgresUnreachable fails the run, and names neither the URL
// nor its password, when the PostgreSQL server does not answer.
func TestRun_postgresUnreachable(t *testing.T) {
	t.Parallel()
	_, err := runPostgres(t.Context(), Options{Messages: 1, Rooms: 1, PostgresURL: "postgres://u:sekrit@127.0.0.1:1/db?connect_timeout=2", Dir: shortDir(t)}.withDefaults(), filepath.Join(shortDir(t), "pg"))
	require.ErrorContains(t, err, "connect")
	require.NotContains(t, err.Error(), "sekrit")
}

func TestRun_invalid(t *testing.T) {
	t.Parallel()
	_, err := Run(t.Context(), Options{Dir: shortDir(t)})
	require.ErrorContains(t, err, "needs messages and rooms")
}

// TestRun_sampled stops jam after a sample and extrapolates.
func TestRun_sampled(t *testing.T) {
	t.Parallel()
	res, err := Run(t.Context(), Options{Messages: 90, Rooms: 5, JamSample: 30, HubSample: 30, Dir: shortDir(t)})
	require.NoError(t, err)
	require.Equal(t, 30, res.Jam.Taken)
	require.Greater(t, res.Jam.All, res.Jam.SampleSeconds, "extrapolated from the sample")
	require.GreaterOrEqual(t, res.Jam.First, res.Jam.FirstDeliveredEvent)
	require.Positive(t, res.Jam.PeakRSSKiB)
}

// BenchmarkRecovery reports jam's recovery of 2,000 messages queued
// across 50 rooms beside both baselines. Each iteration is a whole run on
// a fresh backlog, so run it with -benchtime 1x; jambench runs the
// default 100,000 across 1,000.
//
// Run: (cd bench && go test -run '^$' -bench BenchmarkRecovery -benchtime 1x ./internal/recovery/)
func BenchmarkRecovery(b *testing.B) {
	for range b.N {
		res, err := Run(context.Background(), Options{Messages: 2000, Rooms: 50, Dir: shortDir(b)})
		require.NoError(b, err)
		b.ReportMetric(res.Jam.First, "jam-first-s")
		b.ReportMetric(res.Jam.All, "jam-all-s")
		b.ReportMetric(res.Hub.First, "hub-first-s")
		b.ReportMetric(res.Hub.All, "hub-all-s")
		b.ReportMetric(res.File.All, "filespool-all-s")
	}
}
