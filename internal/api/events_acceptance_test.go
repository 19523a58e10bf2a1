package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// brokerBackend serves GET /v1/events from a real broker, adapted the way
// the daemon adapts it.
type brokerBackend struct {
	fakeBackend
	b *events.Broker
}

func (bb brokerBackend) Events(_ context.Context, r wire.EventsRequest) (wire.EventStream, error) {
	s, err := bb.b.Subscribe(r.After)
	if err != nil {
		return nil, err
	}
	return subStream{s}, nil
}

type subStream struct{ s *events.Subscription }

func (ss subStream) TryNext(ctx context.Context) (wire.Event, bool, error) {
	e, ok, err := ss.s.TryNext(ctx)
	if !ok || err != nil {
		return wire.Event{}, ok, err
	}
	ev := wire.Event{Seq: e.Seq, Kind: e.Kind, At: e.At, Room: string(e.Room), MessageID: string(e.MessageID), Data: e.Data}
	if !e.Peer.IsZero() {
		ev.Peer = e.Peer.String()
	}
	return ev, true, nil
}
func (ss subStream) Ready() <-chan struct{} { return ss.s.Ready() }
func (ss subStream) Close()                 { ss.s.Close() }

// acceptance is a daemon-shaped stack: the SQLite store, a broker over it,
// and the control API on a unix socket.
type acceptance struct {
	broker *events.Broker
	srv    *Server
	client *apiclient.Client
}

func setupAcceptance(t *testing.T) *acceptance {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamacc")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "jam.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	ws, err := st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "default", At: time.Now()})
	require.NoError(t, err)
	br, err := events.New(events.Config{Workspace: ws.ID}, st)
	require.NoError(t, err)
	require.NoError(t, br.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, br.Stop(context.Background())) })

	socket := filepath.Join(dir, "jamd.sock")
	srv, err := New(Config{SocketPath: socket, Logger: slog.New(slog.DiscardHandler)}, brokerBackend{b: br})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	c := apiclient.New(socket)
	t.Cleanup(c.Close)
	return &acceptance{broker: br, srv: srv, client: c}
}

// open opens a stream that the test's end closes.
func (a *acceptance) open(t *testing.T, after int64) *apiclient.EventStream {
	t.Helper()
	s, err := a.client.Events(t.Context(), wire.EventsRequest{After: after})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// pad makes each event's line about 700 bytes, so that the 10,000 events
// (7 MB) are far more than a stalled client's socket buffers (at most
// 4 MiB on Linux) and its subscription buffer (1024 events) can hold.
var pad = strings.Repeat("p", 600)

func publishN(t *testing.T, br *events.Broker, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		require.NoError(t, br.Publish(t.Context(), events.Event{Kind: "test.n", Data: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))}))
	}
}

// readIndex reads one event and returns its "i" (-1 for events without).
func readIndex(t *testing.T, s *apiclient.EventStream) (wire.Event, int) {
	t.Helper()
	ev, err := s.Next()
	require.NoError(t, err)
	if ev.Kind != "test.n" {
		return ev, -1
	}
	var d struct{ I int }
	require.NoError(t, json.Unmarshal(ev.Data, &d))
	return ev, d.I
}

// TestEvents_acceptanceStalledSubscriber is the acceptance test of the
// event stream: three subscribers over the real route, one of which stops
// reading while 10,000 events are published. The other two receive all
// 10,000, in order, without ever falling behind; the stalled one, once it
// reads again, gets what was buffered for it, a stream_resync naming the
// last event it got, and the end of its stream; resuming with ?after= it
// receives every event it missed, in order, with no duplicate.
func TestEvents_acceptanceStalledSubscriber(t *testing.T) {
	t.Parallel()
	const total, chunk = 10000, 500
	a := setupAcceptance(t)
	fast := []*apiclient.EventStream{a.open(t, wire.EventsLive), a.open(t, wire.EventsLive)}
	stalled := a.open(t, wire.EventsLive)
	for _, s := range append(fast, stalled) {
		ev, _ := readIndex(t, s)
		require.Equal(t, wire.EventKindReset, ev.Kind)
		require.Equal(t, int64(0), ev.Seq)
	}

	// Publish in chunks and let the fast subscribers read each chunk
	// before the next: they are never more than a chunk behind, while the
	// stalled one reads nothing at all.
	for from := 1; from <= total; from += chunk {
		publishN(t, a.broker, from, from+chunk-1)
		for _, s := range fast {
			for i := from; i < from+chunk; i++ {
				ev, got := readIndex(t, s)
				require.Equal(t, i, got, "fast subscriber: event %d", ev.Seq)
				require.Equal(t, int64(i), ev.Seq)
			}
		}
	}
	require.Equal(t, uint64(1), a.broker.Stats().Lagged, "only the stalled subscriber lagged")

	// The stalled subscriber reads again.
	want := 1
	for {
		ev, got := readIndex(t, stalled)
		if ev.Kind == wire.EventKindStreamResync {
			require.Equal(t, int64(want-1), ev.Seq, "the resync names the last event delivered")
			require.JSONEq(t, `{"reason":"lagged"}`, string(ev.Data))
			break
		}
		require.Equal(t, want, got)
		want++
	}
	require.Less(t, want-1, total, "it fell behind before the end")
	_, err := stalled.Next()
	require.ErrorIs(t, err, io.EOF, "the stream ends after the resync")

	resumed := a.open(t, int64(want-1))
	for ; want <= total; want++ {
		ev, got := readIndex(t, resumed)
		require.Equal(t, want, got, "resumed: event %d", ev.Seq)
		require.Equal(t, int64(want), ev.Seq)
	}

	// All three continue live from here.
	publishN(t, a.broker, total+1, total+1)
	for _, s := range append(fast, resumed) {
		_, got := readIndex(t, s)
		require.Equal(t, total+1, got)
	}
}

// TestEvents_stopEndsOpenStreams stops the stack while streams are open,
// one of them stalled: the server's stop completes and every client sees
// its stream end.
func TestEvents_stopEndsOpenStreams(t *testing.T) {
	t.Parallel()
	a := setupAcceptance(t)
	reading := a.open(t, wire.EventsLive)
	stalled := a.open(t, wire.EventsLive)
	// Publish in chunks the reader drains before the next, so only the
	// stalled subscriber can lag: a reader slower than one burst of 3,000
	// publishes (the validating test server makes it slower) would fill
	// its own 1,024-event buffer and be cut before Stop.
	readIndex(t, reading) // the stream's opening event
	for from := 1; from <= 3000; from += 500 {
		publishN(t, a.broker, from, from+499)
		for range 500 {
			readIndex(t, reading)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, a.srv.Stop(ctx))
	_, err := reading.Next()
	require.ErrorIs(t, err, io.EOF)
	for err == nil {
		_, err = stalled.Next()
	}
	_, err = a.client.Events(t.Context(), wire.EventsRequest{After: wire.EventsLive})
	require.ErrorIs(t, err, apiclient.ErrNotRunning)
}
