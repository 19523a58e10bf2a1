package spool

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/metrics/metricstest"
)

func scrapeMetrics(t *testing.T, m *metrics.Metrics) metricstest.Families {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	f, err := metricstest.Parse(rec.Body)
	require.NoError(t, err)
	return f
}

// Every group commit is observed once, by outcome, with the entries it
// carried; Depth counts what the spool holds.
func TestSpool_metricsObserveEachCommit(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	boom := errors.New("disk on fire")
	b := setup(t, Config{Metrics: m}, func(b *testBundle) {
		b.fs.BeforeAppendFunc = func(_ context.Context, call int) error {
			if call == 3 {
				return boom
			}
			return nil
		}
	})
	ctx := t.Context()
	e := b.entry(b.peer, 10)
	_, appended, err := b.sp.Push(ctx, e)
	require.NoError(t, err)
	require.True(t, appended)
	_, appended, err = b.sp.Push(ctx, e) // duplicate: a commit all the same
	require.NoError(t, err)
	require.False(t, appended)
	_, _, err = b.sp.Push(ctx, b.entry(b.peer, 10))
	require.ErrorIs(t, err, boom)

	f := scrapeMetrics(t, m)
	ok, _ := f.Value("jam_spool_commit_duration_seconds", "outcome", "ok")
	failed, _ := f.Value("jam_spool_commit_duration_seconds", "outcome", "error")
	entries, _ := f.Value("jam_spool_commit_entries")
	require.Equal(t, 2.0, ok)
	require.Equal(t, 1.0, failed)
	require.Equal(t, 3.0, entries)
	sum, _ := f.Sum("jam_spool_commit_entries")
	require.Equal(t, 3.0, sum, "each commit carried one entry")
	// Only the first entry is held: the duplicate and the failed push
	// gave their room back.
	require.Equal(t, 1, b.sp.Depth())
	b.sp.Release(e.WorkspaceID, e.Peer, len(e.Sealed))
	require.Equal(t, 0, b.sp.Depth())
}
