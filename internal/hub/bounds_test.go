package hub_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/hub"
)

func shortBounds(c *hub.Config) {
	c.ReadHeaderTimeout = 300 * time.Millisecond
	c.ReadTimeout = 300 * time.Millisecond
	c.WriteTimeout = 300 * time.Millisecond
	c.IdleTimeout = 300 * time.Millisecond
}

// closedWithin returns nil when the server closes c within d (a read of
// whatever answer came ends with EOF or a reset, not a timeout).
func closedWithin(c net.Conn, d time.Duration) error {
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("still open after %s", d)
	}
	return nil
}

func TestHub_stalledConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, shortBounds)
	addr := strings.TrimPrefix(b.hub.URL(), "http://")
	post := func(key string) string {
		return "POST /api/v1/me/chats HTTP/1.1\r\nHost: " + addr + "\r\n" + key + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	}
	cases := []struct{ name, send string }{
		{"nothing sent", ""},
		{"partial headers", "GET /api/v1/me/profile HTTP/1.1\r\nHost: " + addr + "\r\n"},
		{"idle keep-alive after one request", "GET /api/v1/me/profile HTTP/1.1\r\nHost: " + addr + "\r\nX-API-Key: " + b.owner + "\r\n\r\n"},
		{"unauthenticated POST, body never sent", post("")},
		{"authenticated POST, body never sent", post("X-API-Key: " + b.owner + "\r\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer c.Close()
			if tc.send != "" {
				_, err = io.WriteString(c, tc.send)
				require.NoError(t, err)
			}
			require.NoError(t, closedWithin(c, 5*time.Second))
		})
	}
}

// TestHub_socketOutlivesTheTimeouts: a WebSocket is not cut by the HTTP
// timeouts once upgraded.
func TestHub_socketOutlivesTheTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t, shortBounds)
	a := b.register("alpha")
	ws := b.socket(a.Key)
	timer := time.NewTimer(1500 * time.Millisecond) // past every timeout (300 ms)
	<-timer.C
	r := ws.request(nil, phoenix.TopicPhoenix, phoenix.EventHeartbeat)
	require.Equal(t, phoenix.StatusOK, r.Status)
}

// TestHub_answersWhileFloodedWithIdleConnections: connections beyond the
// cap make the idlest one go, so a flood of idle connections leaves the
// hub answering.
func TestHub_answersWhileFloodedWithIdleConnections(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *hub.Config) { c.MaxConns = 8 })
	addr := strings.TrimPrefix(b.hub.URL(), "http://")
	for range 256 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.hub.URL()+"/api/v1/me/profile", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", b.owner)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestHub_answersAreNotSniffedOrCached: success and error answers alike.
func TestHub_answersAreNotSniffedOrCached(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ path, key string }{
		{"/api/v1/me/profile", b.owner},
		{"/api/v1/me/profile", ""},
		{"/api/v1/nope", b.owner},
	} {
		resp := b.doResp("GET", tc.path, tc.key, nil, nil)
		resp.Body.Close()
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), tc.path)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), tc.path)
	}
}
