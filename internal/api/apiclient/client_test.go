package apiclient_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend is the shared fake daemon.
type backend = apitest.Backend

var _ api.Backend = statusBackend(nil)

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamc")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startServer(t *testing.T, socket string, b api.Backend) *api.Server {
	t.Helper()
	srv, err := api.New(api.Config{SocketPath: socket, Logger: slog.New(slog.DiscardHandler)}, b)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	return srv
}

func TestClient_Status(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	startServer(t, socket, statusBackend(nil))
	c := apiclient.New(socket)
	defer c.Close()
	st, err := c.Status(t.Context())
	require.NoError(t, err)
	require.Equal(t, 7, st.PID)
}

func TestClient_errorEnvelope(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	startServer(t, socket, statusBackend(jam.ErrUnavailable))
	c := apiclient.New(socket)
	defer c.Close()
	_, err := c.Status(t.Context())
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.Equal(t, wire.CodeUnavailable, ae.Code)
	require.Equal(t, http.StatusServiceUnavailable, ae.HTTPStatus)
}

func TestClient_notRunning(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	// Closing a unix listener unlinks its file; recreate the file without a
	// listener, as a killed daemon leaves it.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())

	cases := []struct {
		name   string
		socket string
	}{
		{name: "no socket", socket: filepath.Join(dir, "missing.sock")},
		{name: "stale socket", socket: stale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := apiclient.New(tc.socket)
			defer c.Close()
			_, err := c.Status(t.Context())
			require.ErrorIs(t, err, apiclient.ErrNotRunning)
			require.ErrorContains(t, err, tc.socket)
		})
	}
}

func TestClient_nonEnvelopeError(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(l) })
	defer func() { srv.Close(); wg.Wait() }()

	c := apiclient.New(socket)
	defer c.Close()
	_, err = c.Status(t.Context())
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.Equal(t, wire.CodeInternal, ae.Code)
	require.Equal(t, http.StatusBadGateway, ae.HTTPStatus)
}

func TestClient_WaitReady(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	c := apiclient.New(socket)
	defer c.Close()

	// Nothing listens: WaitReady gives up when its context ends.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err := c.WaitReady(ctx, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, err, apiclient.ErrNotRunning)

	// A daemon that starts while WaitReady polls is found.
	type result struct {
		st  wire.Status
		err error
	}
	done := make(chan result, 1)
	polling := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		close(polling)
		st, err := c.WaitReady(t.Context(), 5*time.Millisecond)
		done <- result{st, err}
	})
	<-polling
	startServer(t, socket, statusBackend(nil))
	r := <-done
	wg.Wait()
	require.NoError(t, r.err)
	require.Equal(t, 7, r.st.PID)
}

// statusBackend answers Status with pid 7 and err.
func statusBackend(err error) backend {
	return backend{StatusFunc: func(context.Context) (wire.Status, error) {
		return wire.Status{State: wire.StateRunning, PID: 7}, err
	}}
}
