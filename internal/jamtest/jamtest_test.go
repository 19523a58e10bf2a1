package jamtest_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jamtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStart(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "jamtest") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	d, err := jamtest.Start(t.Context(), jamtest.Options{DataDir: dir})
	require.NoError(t, err)
	require.Equal(t, wire.StateRunning, d.Status.State)
	owner, err := d.Owner()
	require.NoError(t, err)
	me, err := owner.Profile(t.Context())
	require.NoError(t, err)
	require.Equal(t, d.Status.Band.UserID, me.ID)
	agent, err := d.Client.AgentAdd(t.Context(), wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	require.Equal(t, "local/coder", agent.Peer)

	require.NoError(t, d.Stop())
	require.NoError(t, d.Stop(), "a second Stop is harmless")

	// A second daemon on the same directory is refused, and Start says so.
	d1, err := jamtest.Start(t.Context(), jamtest.Options{DataDir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, d1.Stop()) }()
	_, err = jamtest.Start(t.Context(), jamtest.Options{DataDir: dir})
	require.ErrorContains(t, err, "is already running")
}
