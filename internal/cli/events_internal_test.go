package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/datadir"
)

// signalBuffer is a buffer that tells when it is written to.
type signalBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newSignalBuffer() *signalBuffer { return &signalBuffer{written: make(chan struct{}, 1)} }

func (b *signalBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() {
		select {
		case b.written <- struct{}{}:
		default:
		}
	}()
	return b.buf.Write(p)
}

func (b *signalBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer holds s.
func (b *signalBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for !strings.Contains(b.String(), s) {
		select {
		case <-b.written:
		case <-timeout:
			t.Fatalf("never written: %q; have %q", s, b.String())
		}
	}
}

// TestRunEvents_retriesWhileDaemonDown starts "jam events" with no daemon:
// it says so once and keeps trying; when a daemon comes up it connects,
// follows, and resumes after the last event when the stream ends.
func TestRunEvents_retriesWhileDaemonDown(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "jamev")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	out, errOut := newSignalBuffer(), newSignalBuffer()
	opts := &EventsOptions{IO: &IOStreams{Out: out, ErrOut: errOut}, DataDir: dir, After: wire.EventsLive, RetryInterval: 5 * time.Millisecond}
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- runEvents(ctx, opts) })
	defer wg.Wait()

	errOut.waitFor(t, "jamd is not running")
	require.Equal(t, 1, strings.Count(errOut.String(), "retrying every 5ms"), "said once")

	got := make(chan wire.EventsRequest, 3)
	b := apitest.Backend{EventsFunc: func(_ context.Context, r wire.EventsRequest) (wire.EventStream, error) {
		got <- r
		s := apitest.NewStream()
		if r.After == wire.EventsLive {
			s.Send(wire.Event{Seq: 3, Kind: wire.EventKindReset, At: time.Now()}, wire.Event{Seq: 4, Kind: "agent.state", At: time.Now()})
		} else {
			cancel()
		}
		s.End(io.EOF)
		return s, nil
	}}
	srv, err := api.New(api.Config{SocketPath: filepath.Join(dir, datadir.SocketFile), Logger: slog.New(slog.DiscardHandler)}, b)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	defer func() { require.NoError(t, srv.Stop(context.Background())) }()

	require.NoError(t, <-done)
	require.Equal(t, wire.EventsRequest{After: wire.EventsLive}, <-got)
	require.Equal(t, wire.EventsRequest{After: 4}, <-got, "resumed after the last event seen")
	require.Contains(t, errOut.String(), "jam: connected to jamd again\n")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], " reset")
	require.Contains(t, lines[1], " agent.state")
}
