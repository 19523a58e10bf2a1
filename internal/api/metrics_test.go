package api

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/metrics/metricstest"
)

func withMetrics(m *metrics.Metrics) func(*Config) { return func(c *Config) { c.Metrics = m } }

func httpGet(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// /metrics on the TCP listener requires the bearer token, scrapes as the
// Prometheus text format, and times requests by route pattern, never by
// their raw path.
func TestMetrics_tokenAndRequestDurations(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	backend := okBackend()
	backend.TurnFunc = func(_ context.Context, turn string) (wire.Turn, error) { return wire.Turn{ID: turn}, nil }
	b := setup(t, backend, "127.0.0.1:0", withMetrics(m))
	raw, err := os.ReadFile(filepath.Join(b.dir, "token"))
	require.NoError(t, err)
	token := strings.TrimSpace(string(raw))
	base := "http://" + b.srv.HTTPAddr()

	resp, body := httpGet(t, base+"/metrics", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	require.Equal(t, `Bearer realm="jam"`, resp.Header.Get("WWW-Authenticate"))
	require.NotContains(t, body, "jam_")
	resp, _ = httpGet(t, base+"/metrics", strings.Repeat("0", 64))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	for _, id := range []string{"turn-one", "turn-two"} {
		resp, _ := httpGet(t, base+"/v1/turns/"+id, token)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, _ = httpGet(t, base+"/v1/no-such-route", token)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = httpGet(t, base+"/v1/sessions", token) // not implemented by the fake: 501
	require.Equal(t, http.StatusNotImplemented, resp.StatusCode)

	resp, body = httpGet(t, base+"/metrics", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	fams, err := metricstest.Parse(strings.NewReader(body))
	require.NoError(t, err, body)
	const hist = "jam_api_request_duration_seconds"
	n, ok := fams.Value(hist, "route", "GET /v1/turns/{turn}", "code", "2xx")
	require.True(t, ok, "%v", fams.Labels(hist))
	require.Equal(t, 2.0, n)
	n, _ = fams.Value(hist, "route", "unmatched", "code", "4xx")
	require.Equal(t, 1.0, n)
	n, _ = fams.Value(hist, "route", "GET /v1/sessions", "code", "5xx")
	require.Equal(t, 1.0, n)
	require.NotContains(t, body, "turn-one", "a raw path is a label")
	require.NotContains(t, body, "no-such-route", "a raw path is a label")

	// The socket serves it too (the socket file's mode is its guard).
	sresp, err := b.unix.Get("http://jamd/metrics")
	require.NoError(t, err)
	sbody, err := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sresp.StatusCode)
	fams, err = metricstest.Parse(strings.NewReader(string(sbody)))
	require.NoError(t, err)
	n, _ = fams.Value(hist, "route", "GET /metrics", "code", "2xx")
	require.GreaterOrEqual(t, n, 1.0, "the earlier scrape was timed")
}

// Without metrics the route answers not_found in the error envelope.
func TestMetrics_off(t *testing.T) {
	t.Parallel()
	b := setup(t, okBackend(), "")
	status, _, body := call(t, b, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, `"code":"not_found"`)
	require.Contains(t, body, "metrics are off")
}

// With the web UI mounted on the listener, /metrics is still the API's:
// not a UI page, and refused without the token.
func TestMetrics_withUIStillRequiresToken(t *testing.T) {
	t.Parallel()
	srv, _, token := setupUI(t, Config{HTTPAddr: "127.0.0.1:0", UI: fakeUI{}, Metrics: metrics.New()})
	base := "http://" + srv.HTTPAddr()
	resp, body := httpGet(t, base+"/metrics", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	require.NotContains(t, body, "ui page")
	resp, body = httpGet(t, base+"/metrics", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := metricstest.Parse(strings.NewReader(body))
	require.NoError(t, err)
}
