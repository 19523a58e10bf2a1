package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/metrics/metricstest"
)

func scrape(t *testing.T, m *metrics.Metrics) (metricstest.Families, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	fams, err := metricstest.Parse(strings.NewReader(body))
	require.NoError(t, err, body)
	return fams, body
}

func value(t *testing.T, f metricstest.Families, name string, labels ...string) float64 {
	t.Helper()
	v, ok := f.Value(name, labels...)
	require.True(t, ok, "%s %v absent; have %v", name, labels, f.Labels(name))
	return v
}

func TestNilMetricsIsSafe(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	m.PipelineEvent("spooled")
	m.SpoolCommit(time.Millisecond, 3, nil)
	m.TurnEnded("succeeded", time.Second)
	m.APIRequest("GET /v1/status", 200, time.Millisecond)
	m.BandState("up")
	m.SetDepths(metrics.Depths{})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

func TestCountersMoveByTheRightAmounts(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	before, _ := scrape(t, m)
	// Known outcomes exist at zero before anything happens.
	require.Zero(t, value(t, before, "jam_messages_routed_total", "outcome", "routed"))
	require.Zero(t, value(t, before, "jam_turns_total", "outcome", "failed"))

	for _, k := range []string{"spooled", "spooled", "duplicate", "queued", "queued_unrouted", "system_marker", "dropped_retired",
		"delivered", "delivered", "delivery_failed", "settled", "failed", "claimed", "replied", "nonsense"} {
		m.PipelineEvent(k)
	}
	m.SpoolCommit(2*time.Millisecond, 4, nil)
	m.SpoolCommit(time.Millisecond, 1, errors.New("disk full"))
	m.TurnEnded("succeeded", 3*time.Second)
	m.TurnEnded("weird", time.Second)
	m.APIRequest("GET /v1/turns/{turn}", 200, 10*time.Millisecond)
	m.APIRequest("GET /v1/turns/{turn}", 404, time.Millisecond)
	m.APIRequest("", 404, time.Millisecond)
	m.BandState("up")
	m.BandState("up")

	f, body := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"jam_messages_spooled_total", nil, 2},
		{"jam_messages_duplicates_total", nil, 1},
		{"jam_messages_routed_total", []string{"outcome", "routed"}, 1},
		{"jam_messages_routed_total", []string{"outcome", "unrouted"}, 1},
		{"jam_messages_routed_total", []string{"outcome", "system_marker"}, 1},
		{"jam_messages_routed_total", []string{"outcome", "dropped_retired"}, 1},
		{"jam_messages_delivered_total", []string{"outcome", "delivered"}, 2},
		{"jam_messages_delivered_total", []string{"outcome", "failed"}, 1},
		{"jam_messages_settled_total", []string{"outcome", "settled"}, 1},
		{"jam_messages_settled_total", []string{"outcome", "failed"}, 1},
		{"jam_spool_commit_duration_seconds", []string{"outcome", "ok"}, 1},
		{"jam_spool_commit_duration_seconds", []string{"outcome", "error"}, 1},
		{"jam_spool_commit_entries", nil, 2},
		{"jam_turns_total", []string{"outcome", "succeeded"}, 1},
		{"jam_turns_total", []string{"outcome", "other"}, 1},
		{"jam_turn_duration_seconds", []string{"outcome", "succeeded"}, 1},
		{"jam_api_request_duration_seconds", []string{"code", "2xx", "route", "GET /v1/turns/{turn}"}, 1},
		{"jam_api_request_duration_seconds", []string{"code", "4xx", "route", "GET /v1/turns/{turn}"}, 1},
		{"jam_api_request_duration_seconds", []string{"code", "4xx", "route", "unmatched"}, 1},
		{"jam_band_connection_changes_total", []string{"state", "up"}, 2},
	} {
		require.Equal(t, c.want, value(t, f, c.name, c.labels...), "%s %v", c.name, c.labels)
	}
	sum, ok := f.Sum("jam_turn_duration_seconds", "outcome", "succeeded")
	require.True(t, ok)
	require.InDelta(t, 3, sum, 1e-9)
	// Unknown kinds count nowhere.
	require.NotContains(t, body, "nonsense")
	require.NotContains(t, body, "claimed")
	// Runtime collectors are on the daemon's registry.
	_, ok = f.Value("go_goroutines")
	require.True(t, ok)
}

func TestDepthsAreReadAtScrape(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	f, _ := scrape(t, m)
	_, ok := f.Value("jam_queue_depth", "bucket", "routed")
	require.False(t, ok, "no queue gauge before the daemon installs its reader")

	queued := 3
	var bounded atomic.Bool
	m.SetDepths(metrics.Depths{
		Queue: func(ctx context.Context) (int, int, error) {
			if _, ok := ctx.Deadline(); ok {
				bounded.Store(true)
			}
			return queued, 2, nil
		},
		Spool: func() int { return 5 },
		Band:  func() map[string]int { return map[string]int{"up": 2, "reconnecting": 1, "odd": 1} },
	})
	f, _ = scrape(t, m)
	require.Equal(t, 3.0, value(t, f, "jam_queue_depth", "bucket", "routed"))
	require.Equal(t, 2.0, value(t, f, "jam_queue_depth", "bucket", "unrouted"))
	require.Equal(t, 5.0, value(t, f, "jam_spool_depth"))
	require.Equal(t, 2.0, value(t, f, "jam_band_connections", "state", "up"))
	require.Equal(t, 1.0, value(t, f, "jam_band_connections", "state", "reconnecting"))
	require.Equal(t, 0.0, value(t, f, "jam_band_connections", "state", "stopped"))
	require.Equal(t, 1.0, value(t, f, "jam_band_connections", "state", "other"))
	require.True(t, bounded.Load(), "a scrape-time read has a deadline")
	queued = 7
	f, _ = scrape(t, m)
	require.Equal(t, 7.0, value(t, f, "jam_queue_depth", "bucket", "routed"))

	// A queue read that fails is reported as a scrape error, not as 0; the
	// rest of the scrape still answers.
	m.SetDepths(metrics.Depths{Queue: func(context.Context) (int, int, error) { return 0, 0, errors.New("store closed") },
		Spool: func() int { return 1 }})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	f, err := metricstest.Parse(rec.Body)
	require.NoError(t, err)
	_, ok = f.Value("jam_queue_depth", "bucket", "routed")
	require.False(t, ok)
	require.Equal(t, 1.0, value(t, f, "jam_spool_depth"))
}

// Two daemons in one process have registries of their own, and nothing is
// registered with the global default registry.
func TestRegistriesAreTheDaemons(t *testing.T) {
	t.Parallel()
	a, b := metrics.New(), metrics.New()
	a.PipelineEvent("spooled")
	fa, _ := scrape(t, a)
	fb, _ := scrape(t, b)
	require.Equal(t, 1.0, value(t, fa, "jam_messages_spooled_total"))
	require.Equal(t, 0.0, value(t, fb, "jam_messages_spooled_total"))
	fams, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		require.False(t, strings.HasPrefix(f.GetName(), "jam_"), "%s is on the default registry", f.GetName())
	}
}
