package band

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	const secret = "band_u_s3cret"
	get := func(raw string) error {
		return &url.Error{Op: "Get", URL: raw, Err: syscall.ECONNREFUSED}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string // the message after
		same bool   // returned as is
	}{
		{name: "nil", err: nil, same: true},
		{name: "no url", err: errors.New("heartbeat unanswered"), same: true},
		{name: "url without query", err: get("http://h:1/api/v1/agent/me"), same: true},
		{
			name: "query",
			err:  get("ws://h:1/api/v1/socket/websocket?api_key=" + secret + "&vsn=2.0.0"),
			want: `Get "ws://h:1/api/v1/socket/websocket": connection refused`,
		},
		{
			name: "wrapped twice, as the websocket dial does",
			err:  fmt.Errorf("failed to WebSocket dial: %w", fmt.Errorf("failed to send handshake request: %w", get("ws://h:1/s?token="+secret))),
			want: `failed to WebSocket dial: failed to send handshake request: Get "ws://h:1/s": connection refused`,
		},
		{
			name: "userinfo and fragment",
			err:  get("https://me:" + secret + "@band.example/api/v1/me#" + secret),
			want: `Get "https://band.example/api/v1/me": connection refused`,
		},
		{
			name: "quote-escaped characters",
			err:  get("http://h/a?k=" + secret + "%22\"x"),
			want: `Get "http://h/a": connection refused`,
		},
		{
			name: "unparsable url",
			err:  get("http://me:" + secret + "@h:port/p%zz?k=" + secret),
			want: `Get "http://h:port/p%zz": connection refused`,
		},
		{
			name: "two urls joined",
			err:  errors.Join(get("http://a/x?k="+secret), fmt.Errorf("then: %w", get("http://b/y?k="+secret))),
			want: "Get \"http://a/x\": connection refused\nthen: Get \"http://b/y\": connection refused",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redactURL(tc.err)
			if tc.same {
				require.Equal(t, tc.err, got)
				return
			}
			require.Equal(t, tc.want, got.Error())
			require.NotContains(t, got.Error(), secret)
			// The cause still answers, and the *url.Error it unwraps to is
			// redacted too.
			require.ErrorIs(t, got, syscall.ECONNREFUSED)
			var ue *url.Error
			require.ErrorAs(t, got, &ue)
			require.NotContains(t, ue.Error(), secret)
			require.Contains(t, tc.err.Error(), secret, "the original is not changed")
		})
	}
}

func FuzzSafeURL(f *testing.F) {
	for _, s := range []string{"", "http://h/p?q=1", "https://u:p@h:1/a#f", "ws://h/%zz?k=v", "h?x#y", "//u@h/p", "http://[::1]:8/x?y", "//@//@", "//a@//b@//c@/p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := safeURL(raw)
		if strings.ContainsAny(got, "?#") {
			t.Fatalf("safeURL(%q) = %q keeps a query or fragment", raw, got)
		}
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if v, err := url.Parse(got); err == nil && v.User != nil {
				t.Fatalf("safeURL(%q) = %q keeps userinfo", raw, got)
			}
		}
	})
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestClient_transportErrorQuotesNoQuery(t *testing.T) {
	t.Parallel()
	h := NewHTTP(HTTPConfig{})
	defer h.CloseIdle()
	c, err := NewClient(h, "http://"+closedAddr(t), APIKey("band_u_rest_key"))
	require.NoError(t, err)
	_, err = c.ChatMessages(t.Context(), "r1", "cursor-secret", 10)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "cursor-secret")
	require.NotContains(t, err.Error(), "?")
	require.NotContains(t, err.Error(), "band_u_rest_key")
	require.ErrorIs(t, err, jam.ErrUnavailable, "a redacted transport failure is still retryable")
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
}

func TestClient_timeoutStillClassifiesAfterRedaction(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	h := NewHTTP(HTTPConfig{})
	defer h.CloseIdle()
	c, err := NewClient(h, srv.URL, APIKey("k"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = c.ChatMessages(ctx, "r1", "cursor-secret", 10)
	require.ErrorIs(t, err, context.DeadlineExceeded, "engine and CLI classify on it")
	require.ErrorIs(t, err, jam.ErrUnavailable)
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	require.True(t, ue.Timeout())
	require.NotContains(t, err.Error(), "cursor-secret")
}

func TestNewClient_badURLErrorQuotesNoUserinfo(t *testing.T) {
	t.Parallel()
	_, err := NewClient(NewHTTP(HTTPConfig{}), "ftp://me:pw-secret@h/x?k=q-secret", APIKey("k"))
	require.ErrorContains(t, err, `"ftp://h/x"`)
	_, err = SocketURL("ftp://me:pw-secret@h/x?k=q-secret")
	require.ErrorContains(t, err, `"ftp://h/x"`)
	for _, raw := range []string{"https://me:pw-secret@h/x", "https://h/x?k=q-secret", "https://h/x#f-secret", "https://h/x?"} {
		_, err = NewClient(NewHTTP(HTTPConfig{}), raw, APIKey("k"))
		require.ErrorContains(t, err, "without credentials, query or fragment", raw)
		require.NotContains(t, err.Error(), "secret")
		_, err = SocketURL(raw)
		require.ErrorContains(t, err, "without credentials, query or fragment", raw)
		require.NotContains(t, err.Error(), "secret")
	}
}

// TestSocket_credentialGoesByHeaderOnly: whatever the credential, the
// handshake URL carries vsn and agent_id only.
func TestSocket_credentialGoesByHeaderOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cred       Credential
		agentID    string
		wantQuery  url.Values
		wantHeader map[string]string
	}{
		{name: "agent key", cred: APIKey("band_a_k1"), wantQuery: url.Values{"vsn": {"2.0.0"}}, wantHeader: map[string]string{"X-Api-Key": "band_a_k1", "Authorization": ""}},
		{name: "owner key acting as an agent", cred: APIKey("band_u_k2"), agentID: "a-1",
			wantQuery: url.Values{"vsn": {"2.0.0"}, "agent_id": {"a-1"}}, wantHeader: map[string]string{"X-Api-Key": "band_u_k2", "Authorization": ""}},
		{name: "bearer token", cred: NewTokenSource("jwt-k3", nil), wantQuery: url.Values{"vsn": {"2.0.0"}}, wantHeader: map[string]string{"Authorization": "Bearer jwt-k3", "X-Api-Key": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fp := newFakePhoenix(t)
			cfg := testSocketConfig(fp.srv.URL, tc.cred)
			cfg.AgentID = tc.agentID
			s, err := NewSocket(cfg)
			require.NoError(t, err)
			runSocket(t, s, newRecorder(func(context.Context, *Session) error { return nil }))
			fc := fp.accept(t)
			require.Equal(t, tc.wantQuery, fc.query)
			for k, v := range tc.wantHeader {
				require.Equal(t, v, fc.header.Get(k), k)
			}
		})
	}
}

// TestSocket_dialErrorQuotesNoCredential: a failed dial, which Run logs
// and reports to the handler, names neither the key nor the URL's query.
func TestSocket_dialErrorQuotesNoCredential(t *testing.T) {
	t.Parallel()
	const key = "band_a_dial_secret"
	var logged strings.Builder
	cfg := testSocketConfig("http://"+closedAddr(t), APIKey(key))
	cfg.AgentID = "agent-1"
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil)) // read once Run has returned
	s, err := NewSocket(cfg)
	require.NoError(t, err)
	rec := newRecorder(func(context.Context, *Session) error { return nil })
	cancel, done := runSocket(t, s, rec)
	sc := rec.waitState(t, StateReconnecting)
	cancel()
	<-done
	require.ErrorContains(t, sc.err, "dial")
	require.ErrorIs(t, sc.err, syscall.ECONNREFUSED)
	for _, text := range []string{sc.err.Error(), logged.String()} {
		require.NotContains(t, text, key)
		require.NotContains(t, text, "agent-1", "no part of the query")
		require.NotContains(t, text, "vsn")
	}
	require.Contains(t, logged.String(), "/api/v1/socket/websocket", "the error still names where it dialled")
}

// TestSocket_handshakeRedirectIsNotFollowed: Go forwards a custom header
// such as X-Api-Key to any host a redirect names, so the handshake does not
// follow redirects.
func TestSocket_handshakeRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	s, err := NewSocket(testSocketConfig(redirect.URL, APIKey("band_a_redirected")))
	require.NoError(t, err)
	rec := newRecorder(func(context.Context, *Session) error { return nil })
	cancel, done := runSocket(t, s, rec)
	sc := rec.waitState(t, StateReconnecting)
	cancel()
	<-done
	require.ErrorContains(t, sc.err, "HTTP 307")
	require.Zero(t, elsewhere.Load(), "the redirect's target saw the handshake")
}
