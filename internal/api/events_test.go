package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var evAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func wireEvent(seq int64, kind string) wire.Event {
	return wire.Event{Seq: seq, Kind: kind, At: evAt}
}

// streamBackend answers GET /v1/events with stream and records the
// request it got.
func streamBackend(stream wire.EventStream, got chan<- wire.EventsRequest) fakeBackend {
	return fakeBackend{EventsFunc: func(_ context.Context, r wire.EventsRequest) (wire.EventStream, error) {
		if got != nil {
			got <- r
		}
		return stream, nil
	}}
}

// get requests path with headers and returns the response.
func (b *testBundle) get(t *testing.T, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://jamd"+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.unix.Do(req)
	require.NoError(t, err)
	return resp
}

func TestEvents_ndjson(t *testing.T) {
	t.Parallel()
	stream := apitest.NewStream(
		wireEvent(7, wire.EventKindReset),
		wire.Event{Seq: 8, Kind: "message.queued", At: evAt, Peer: "p/a", Room: "r", MessageID: "m", Data: json.RawMessage(`{"binding":"bind_1"}`)},
	)
	got := make(chan wire.EventsRequest, 1)
	b := setup(t, streamBackend(stream, got), "")
	resp := b.get(t, "/v1/events")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	require.Equal(t, wire.EventsRequest{After: wire.EventsLive}, <-got, "no position: live")

	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.JSONEq(t, `{"seq":7,"kind":"reset","at":"2026-01-02T03:04:05Z"}`, line)
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.JSONEq(t, `{"seq":8,"kind":"message.queued","at":"2026-01-02T03:04:05Z","peer":"p/a","room":"r","message_id":"m","data":{"binding":"bind_1"}}`, line)

	// Events sent later arrive without anything else written first.
	stream.Send(wireEvent(9, "agent.state"))
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.JSONEq(t, `{"seq":9,"kind":"agent.state","at":"2026-01-02T03:04:05Z"}`, line)

	// The end of the stream ends the response, and the server closes it.
	stream.Send(wire.Event{Seq: 9, Kind: wire.EventKindStreamResync, At: evAt, Data: json.RawMessage(`{"reason":"lagged"}`)})
	stream.End(io.EOF)
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"stream_resync"`)
	_, err = r.ReadString('\n')
	require.ErrorIs(t, err, io.EOF)
	<-stream.Closed()
}

func TestEvents_position(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		headers []string
		want    int64
	}{
		{"after", "/v1/events?after=42", nil, 42},
		{"after zero", "/v1/events?after=0", nil, 0},
		{"last event id", "/v1/events", []string{"Last-Event-ID", "17"}, 17},
		{"after beats last event id", "/v1/events?after=5", []string{"Last-Event-ID", "17"}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stream := apitest.NewStream()
			stream.End(io.EOF)
			got := make(chan wire.EventsRequest, 1)
			b := setup(t, streamBackend(stream, got), "")
			resp := b.get(t, tt.path, tt.headers...)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, wire.EventsRequest{After: tt.want}, <-got)
		})
	}
}

func TestEvents_badRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, streamBackend(apitest.NewStream(), nil), "")
	tests := []struct {
		name    string
		path    string
		headers []string
		want    string
	}{
		{"after not a number", "/v1/events?after=soon", nil, "query parameter after=soon is not a sequence number"},
		{"after negative", "/v1/events?after=-1", nil, "is not a sequence number"},
		{"after twice", "/v1/events?after=1&after=2", nil, `query parameter "after" is given 2 times`},
		{"unknown parameter", "/v1/events?since=1", nil, `unknown query parameter "since"`},
		{"bad format", "/v1/events?format=xml", nil, "format=xml is not ndjson or sse"},
		{"bad last event id", "/v1/events", []string{"Last-Event-ID", "x"}, "Last-Event-ID=x is not a sequence number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := b.get(t, tt.path, tt.headers...)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			e := decodeError(t, resp)
			require.Equal(t, wire.CodeInvalidArgument, e.Code)
			require.Contains(t, e.Message, tt.want)
		})
	}
}

func TestEvents_backendError(t *testing.T) {
	t.Parallel()
	b := setup(t, fakeBackend{EventsFunc: func(context.Context, wire.EventsRequest) (wire.EventStream, error) {
		return nil, fmt.Errorf("event log: %w", jam.ErrUnavailable)
	}}, "")
	resp := b.get(t, "/v1/events")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, wire.CodeUnavailable, decodeError(t, resp).Code)

	b = setup(t, fakeBackend{}, "")
	resp = b.get(t, "/v1/events")
	require.Equal(t, wire.CodeNotImplemented, decodeError(t, resp).Code)
}

func TestEvents_sse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
	}{
		{"accept header", "/v1/events", []string{"Accept", "text/html, text/event-stream;q=0.9"}},
		{"format parameter", "/v1/events?format=sse", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stream := apitest.NewStream(wireEvent(3, "agent.state"), wireEvent(4, "message.queued"))
			stream.End(io.EOF)
			b := setup(t, streamBackend(stream, nil), "")
			resp := b.get(t, tc.path, tc.headers...)
			defer resp.Body.Close()
			require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t,
				"id: 3\ndata: {\"seq\":3,\"kind\":\"agent.state\",\"at\":\"2026-01-02T03:04:05Z\"}\n\n"+
					"id: 4\ndata: {\"seq\":4,\"kind\":\"message.queued\",\"at\":\"2026-01-02T03:04:05Z\"}\n\n",
				string(body))
		})
	}
	t.Run("ndjson wins when asked for", func(t *testing.T) {
		t.Parallel()
		stream := apitest.NewStream()
		stream.End(io.EOF)
		b := setup(t, streamBackend(stream, nil), "")
		resp := b.get(t, "/v1/events?format=ndjson", "Accept", "text/event-stream")
		defer resp.Body.Close()
		require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	})
}

func TestEvents_sseHeartbeat(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "jamapi")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	stream := apitest.NewStream()
	srv, err := New(Config{SocketPath: filepath.Join(dir, "s.sock"), Logger: slog.New(slog.DiscardHandler), Heartbeat: time.Millisecond}, streamBackend(stream, nil))
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	b := &testBundle{srv: srv, unix: unixClient(t, filepath.Join(dir, "s.sock"))}

	resp := b.get(t, "/v1/events?format=sse")
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": heartbeat\n", line, "an idle SSE stream sends comment heartbeats")
}

func TestEvents_overLongLineBecomesResync(t *testing.T) {
	t.Parallel()
	big := wire.Event{Seq: 5, Kind: "big", At: evAt, Data: json.RawMessage(`{"x":"` + strings.Repeat("x", wire.MaxEventLine) + `"}`)}
	stream := apitest.NewStream(wireEvent(4, "small"), big, wireEvent(6, "small"))
	stream.End(io.EOF)
	b := setup(t, streamBackend(stream, nil), "")
	resp := b.get(t, "/v1/events")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	require.Len(t, lines, 3)
	require.JSONEq(t, `{"seq":5,"kind":"stream_resync","at":"2026-01-02T03:04:05Z","data":{"reason":"line_too_long"}}`, lines[1],
		"the resync carries the skipped event's seq, so resuming after it skips it")
	require.Contains(t, lines[2], `"seq":6`, "the stream goes on")
}

// endless is a stream that always has another 1 KiB event ready.
type endless struct {
	seq    atomic.Int64
	closed chan struct{}
}

func (e *endless) TryNext(context.Context) (wire.Event, bool, error) {
	return wire.Event{Seq: e.seq.Add(1), Kind: "flood", At: evAt, Data: json.RawMessage(`{"pad":"` + strings.Repeat("p", 1024) + `"}`)}, true, nil
}
func (e *endless) Ready() <-chan struct{} { return nil }
func (e *endless) Close()                 { close(e.closed) }

// TestEvents_stopWhileOpen stops the server while a stream is open and its
// client reads nothing: the server's writes are blocked on a full socket,
// and Stop still completes well within its deadline.
func TestEvents_stopWhileOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream func() wire.EventStream
		// clean: the client sees a complete response; a write cut
		// mid-way leaves it truncated instead.
		clean bool
	}{
		{"idle stream", func() wire.EventStream { return apitest.NewStream(wireEvent(1, "one")) }, true},
		{"writes blocked on a client that reads nothing", func() wire.EventStream { return &endless{closed: make(chan struct{})} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := os.MkdirTemp("", "jamapi")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			socket := filepath.Join(dir, "s.sock")
			stream := tc.stream()
			srv, err := New(Config{SocketPath: socket, Logger: slog.New(slog.DiscardHandler)}, streamBackend(stream, nil))
			require.NoError(t, err)
			require.NoError(t, srv.Start(t.Context()))
			c := unixClient(t, socket)
			resp, err := c.Get("http://jamd/v1/events")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			require.NoError(t, srv.Stop(ctx), "stop drains instead of running out of time")
			_, err = io.Copy(io.Discard, resp.Body)
			if tc.clean {
				require.NoError(t, err, "the stream ends cleanly for the client")
			}
		})
	}
}

// unixClient returns an HTTP client that dials socket.
func unixClient(t *testing.T, socket string) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
