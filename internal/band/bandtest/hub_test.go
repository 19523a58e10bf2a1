package bandtest_test

import (
	"context"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/bandtest"
	"github.com/jamhq/jam/internal/hub"
)

// stopTimeout bounds a hub's Stop in the tests.
const stopTimeout = 30 * time.Second

func TestHub(t *testing.T) {
	t.Parallel()
	bandtest.Exercise(t, startHub)
}

// startHub starts a hub on a free loopback port with its own data
// directory, stopped when t ends. Restart stops it and starts a new hub on
// the same data directory and address, so URLs and keys stay valid.
func startHub(t *testing.T) bandtest.Target {
	t.Helper()
	cfg := hub.Config{
		Addr:    "127.0.0.1:0",
		DataDir: t.TempDir(),
		Logger:  slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	h := newHub(t, cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		require.NoError(t, h.Stop(ctx), "stop hub")
	})
	u, err := url.Parse(h.URL())
	require.NoError(t, err, "hub URL %q", h.URL())
	cfg.Addr = u.Host
	return bandtest.Target{
		BaseURL:  h.URL(),
		OwnerKey: h.OwnerKey(),
		Restart: func(t *testing.T) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			require.NoError(t, h.Stop(ctx), "stop hub for restart")
			key := h.OwnerKey()
			h = newHub(t, cfg)
			require.Equal(t, u.String(), h.URL(), "a restarted hub must keep its URL")
			require.Equal(t, key, h.OwnerKey(), "a restarted hub must keep its owner key")
		},
	}
}

func newHub(t *testing.T, cfg hub.Config) *hub.Hub {
	t.Helper()
	h, err := hub.New(cfg)
	require.NoError(t, err, "hub.New")
	// Not a timeout context: a service may derive its lifetime from the
	// context Start gets.
	require.NoError(t, h.Start(context.Background()), "hub.Start")
	return h
}
