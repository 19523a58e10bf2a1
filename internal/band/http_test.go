package band

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHTTP_boundsRequestsInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Write([]byte(`{"data":{"id":"a"}}`))
	}))
	defer srv.Close()
	h := NewHTTP(HTTPConfig{MaxInFlight: 2})
	defer h.CloseIdle()
	c, err := NewClient(h, srv.URL, APIKey("band_a_x"))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { _, _ = c.AgentMe(context.Background()) })
	}
	<-arrived
	<-arrived
	require.Equal(t, 2, h.InFlight(), "a third request waits for a permit")
	select {
	case <-arrived:
		t.Fatal("third request reached the server while two were in flight")
	default:
	}
	close(release)
	wg.Wait()
	require.Equal(t, 0, h.InFlight())
}

func TestHTTP_bodyHoldsPermitUntilClosed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 1000)))
	}))
	defer srv.Close()
	h := NewHTTP(HTTPConfig{MaxInFlight: 1})
	defer h.CloseIdle()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := h.do(req)
	require.NoError(t, err)
	require.Equal(t, 1, h.InFlight(), "an unread body keeps its permit")
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 0, h.InFlight(), "reading to EOF releases it")
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 0, h.InFlight(), "close after EOF releases nothing twice")
}

func TestClient_refusesRedirects(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	}))
	defer srv.Close()
	h := NewHTTP(HTTPConfig{})
	defer h.CloseIdle()
	c, err := NewClient(h, srv.URL, APIKey("k"))
	require.NoError(t, err)
	_, err = c.AgentMe(context.Background())
	var be *Error
	require.ErrorAs(t, err, &be)
	require.Equal(t, http.StatusFound, be.Status)
}

func TestClient_refreshesExpiredTokenOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"token_expired","message":"expired","request_id":"r1"}}`))
			return
		}
		w.Write([]byte(`{"data":{"id":"u1","email":"a@b","handle":"a","role":"user"}}`))
	}))
	defer srv.Close()
	h := NewHTTP(HTTPConfig{})
	defer h.CloseIdle()
	refreshes := 0
	ts := NewTokenSource("stale", func(context.Context) (string, error) { refreshes++; return "fresh", nil })
	c, err := NewClient(h, srv.URL, ts)
	require.NoError(t, err)
	p, err := c.Profile(context.Background())
	require.NoError(t, err)
	require.Equal(t, "u1", p.ID)
	require.Equal(t, 1, refreshes)
	require.Equal(t, []string{"Bearer stale", "Bearer fresh"}, seen)

	// An API key cannot refresh: the 401 comes back as is.
	c2, err := NewClient(h, srv.URL, APIKey("band_u_x"))
	require.NoError(t, err)
	_, err = c2.Profile(context.Background())
	require.ErrorIs(t, err, jam.ErrUnauthenticated)
}

func TestParseError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		header    http.Header
		body      string
		want      Error
		retryable bool
	}{
		{name: "nested 422", status: 422, body: `{"error":{"code":"mentions_required","message":"need one","request_id":"r9","details":{"/message/mentions":["can't be blank"]}}}`,
			want: Error{Status: 422, Code: "mentions_required", Message: "need one", RequestID: "r9", Details: map[string][]string{"/message/mentions": {"can't be blank"}}}},
		{name: "flat", status: 401, body: `{"error":"unauthorized","message":"bad key"}`, want: Error{Status: 401, Code: "unauthorized", Message: "bad key"}, retryable: true},
		{name: "rate limited", status: 429, header: http.Header{"Retry-After": {"7"}}, body: `{"error":{"code":"too_many_requests","message":"slow","request_id":"x"}}`,
			want: Error{Status: 429, Code: "too_many_requests", Message: "slow", RequestID: "x", RetryAfter: 7 * time.Second}, retryable: true},
		{name: "retry_after in body", status: 503, body: `{"error":{"code":"tracking_failed","message":"m","retry_after":3}}`,
			want: Error{Status: 503, Code: "tracking_failed", Message: "m", RetryAfter: 3 * time.Second}, retryable: true},
		{name: "html gateway", status: 502, body: `<html>bad gateway</html>`, want: Error{Status: 502, Code: "http_502", Message: "Bad Gateway: <html>bad gateway</html>"}, retryable: true},
		{name: "forbidden", status: 403, body: `{"error":{"code":"limit_reached","message":"quota"}}`, want: Error{Status: 403, Code: "limit_reached", Message: "quota"}},
		{name: "too early", status: 425, body: ``, want: Error{Status: 425, Code: "http_425", Message: "Too Early"}, retryable: true},
		{name: "conflict", status: 409, body: `{}`, want: Error{Status: 409, Code: "http_409", Message: "Conflict: {}"}, retryable: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			got := parseError(&http.Response{StatusCode: tc.status, Header: h}, []byte(tc.body))
			require.Equal(t, tc.want, *got)
			require.Equal(t, tc.retryable, got.Retryable())
			require.Equal(t, tc.retryable, Retryable(got))
		})
	}
}

func TestRetryable_transport(t *testing.T) {
	t.Parallel()
	h := NewHTTP(HTTPConfig{Timeout: time.Second})
	c, err := NewClient(h, "http://127.0.0.1:1", APIKey("k")) // nothing listens on port 1
	require.NoError(t, err)
	_, err = c.AgentMe(context.Background())
	require.Error(t, err)
	require.True(t, Retryable(err), "a refused connection is retryable: %v", err)
	require.False(t, Retryable(errors.New("other")))
}

func FuzzParseError(f *testing.F) {
	f.Add(422, `{"error":{"code":"x","message":"y","request_id":"z","details":{"/a":["b"]}}}`)
	f.Add(401, `{"error":"unauthorized","message":"m"}`)
	f.Add(500, `not json`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 999 {
			return
		}
		e := parseError(&http.Response{StatusCode: status, Header: http.Header{}}, []byte(body))
		if e.Code == "" || e.Status != status {
			t.Fatalf("parse of %d %q lost the status or code: %+v", status, body, e)
		}
		_ = e.Error()
		if _, err := json.Marshal(e); err != nil {
			t.Fatal(err)
		}
	})
}
