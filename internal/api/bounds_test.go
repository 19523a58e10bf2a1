package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
)

// shortBounds are timeouts short enough for a test to watch them act.
func shortBounds(cfg Config) Config {
	cfg.ReadHeaderTimeout = 300 * time.Millisecond
	cfg.ReadTimeout = 300 * time.Millisecond
	cfg.WriteTimeout = 300 * time.Millisecond
	cfg.IdleTimeout = 300 * time.Millisecond
	return cfg
}

// boundedSetup starts a server with a TCP listener and the config edit
// applies; it returns the server, its socket path and its token.
func boundedSetup(t *testing.T, backend Backend, edit func(Config) Config) (*Server, string, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamapi")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := Config{SocketPath: filepath.Join(dir, "s.sock"), HTTPAddr: "127.0.0.1:0", TokenPath: filepath.Join(dir, "token"), Logger: slog.New(slog.DiscardHandler)}
	srv, err := New(edit(cfg), backend)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	token, err := os.ReadFile(cfg.TokenPath)
	require.NoError(t, err)
	return srv, cfg.SocketPath, strings.TrimSpace(string(token))
}

// closedWithin reports whether the server closes c within d: a read ends
// with EOF or a reset, after reading whatever answer came first.
func closedWithin(c net.Conn, d time.Duration) error {
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("still open after %s", d)
	}
	return nil // EOF (Copy returns nil) or reset: closed
}

func TestServer_stalledConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	srv, socket, token := boundedSetup(t, okBackend(), shortBounds)
	cases := []struct {
		name, network, send string
	}{
		{"tcp: nothing sent", "tcp", ""},
		{"tcp: partial headers", "tcp", "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"},
		{"tcp: idle keep-alive after one request", "tcp", "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n\r\n"},
		{"tcp: unauthenticated POST, body never sent", "tcp", "POST /v1/send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"},
		{"tcp: authenticated POST, body never sent", "tcp", "POST /v1/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"},
		{"tcp: web ui path, body never sent", "tcp", "POST /signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"},
		{"socket: idle keep-alive after one request", "unix", "GET /v1/status HTTP/1.1\r\nHost: jamd\r\n\r\n"},
		{"socket: POST, body never sent", "unix", "POST /v1/send HTTP/1.1\r\nHost: jamd\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := socket
			if tc.network == "tcp" {
				addr = srv.HTTPAddr()
			}
			c, err := net.Dial(tc.network, addr)
			require.NoError(t, err)
			defer c.Close()
			if tc.send != "" {
				_, err = io.WriteString(c, tc.send)
				require.NoError(t, err)
			}
			// 300 ms bounds; 5 s leaves room for a loaded machine.
			require.NoError(t, closedWithin(c, 5*time.Second))
		})
	}
}

// TestServer_heldResponsesOutliveTheTimeouts: an event stream and a long
// poll legitimately last longer than the read, write and idle timeouts.
func TestServer_heldResponsesOutliveTheTimeouts(t *testing.T) {
	t.Parallel()
	streams := make(chan *apitest.Stream, 2)
	backend := fakeBackend{EventsFunc: func(context.Context, wire.EventsRequest) (wire.EventStream, error) {
		s := apitest.NewStream()
		streams <- s
		return s, nil
	}}
	release := make(chan struct{})
	backend.WaitInboxFunc = func(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
		select {
		case <-release:
			return wire.Inbox{Messages: []wire.InboxMessage{{ID: "m1"}}}, nil
		case <-ctx.Done():
			return wire.Inbox{}, ctx.Err()
		}
	}
	srv, socket, token := boundedSetup(t, backend, shortBounds)

	for _, network := range []string{"unix", "tcp"} {
		addr, auth := socket, ""
		if network == "tcp" {
			addr, auth = srv.HTTPAddr(), "Authorization: Bearer "+token+"\r\n"
		}
		ev, err := net.Dial(network, addr)
		require.NoError(t, err)
		defer ev.Close()
		_, err = io.WriteString(ev, "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"+auth+"\r\n")
		require.NoError(t, err)
		evr := bufio.NewReader(ev)
		require.NoError(t, ev.SetReadDeadline(time.Now().Add(10*time.Second)))
		status, err := evr.ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, status, "200")
		stream := <-streams

		body := `{"timeout_ms":60000}`
		wait, err := net.Dial(network, addr)
		require.NoError(t, err)
		defer wait.Close()
		_, err = fmt.Fprintf(wait, "POST /v1/waitInbox HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", auth, len(body), body)
		require.NoError(t, err)

		// Well past every timeout (300 ms), both are still answered.
		timer := time.NewTimer(1500 * time.Millisecond)
		<-timer.C
		stream.Send(wireEvent(int64(len(network)), "agent.state"))
		var line string
		for !strings.HasPrefix(line, "{") {
			line, err = evr.ReadString('\n')
			require.NoError(t, err, "the event stream outlives the timeouts")
		}
		require.Contains(t, line, `"agent.state"`)

		release <- struct{}{}
		require.NoError(t, wait.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(wait), nil)
		require.NoError(t, err, "the long poll outlives the timeouts")
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		require.Contains(t, string(b), `"m1"`)
	}
}

// TestServer_socketAnswersWhileTCPIsFull: the two listeners have caps of
// their own; filling the TCP one with idle connections leaves the socket
// answering, and a new TCP client is still served (the idlest goes).
func TestServer_socketAnswersWhileTCPIsFull(t *testing.T) {
	t.Parallel()
	srv, socket, token := boundedSetup(t, okBackend(), func(c Config) Config {
		c.MaxHTTPConns, c.MaxSocketConns = 8, 8
		return c
	})
	for range 64 {
		c, err := net.Dial("tcp", srv.HTTPAddr())
		require.NoError(t, err)
		defer c.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, network := range []string{"unix", "tcp"} {
		addr := socket
		if network == "tcp" {
			addr = srv.HTTPAddr()
		}
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/v1/status", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err, network)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, network)
	}
}

// TestServer_answersAreNotSniffedOrCached: every API answer, success or
// error, on either listener, says nosniff and no-store.
func TestServer_answersAreNotSniffedOrCached(t *testing.T) {
	t.Parallel()
	srv, socket, token := boundedSetup(t, okBackend(), func(c Config) Config { return c })
	cases := []struct {
		name, network, path, token string
		status                     int
	}{
		{"socket status", "unix", "/v1/status", "", 200},
		{"socket unknown route", "unix", "/v1/nope", "", 404},
		{"tcp status", "tcp", "/v1/status", token, 200},
		{"tcp without the token", "tcp", "/v1/status", "", 401},
		{"tcp foreign host", "tcp", "/v1/status", token, 403},
		{"tcp api prefix", "tcp", "/api/x", token, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := socket
			if tc.network == "tcp" {
				addr = srv.HTTPAddr()
			}
			tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, tc.network, addr)
			}}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1"+tc.path, nil)
			require.NoError(t, err)
			if tc.status == 403 {
				req.Host = "evil.example"
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
			require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		})
	}
}
