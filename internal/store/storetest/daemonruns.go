package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// daemonRunCases covers [store.DaemonRuns].
func daemonRunCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *testBundle { t.Helper(); return newTestBundle(t, open) }

	t.Run("DaemonRun_previous", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		start := func(node string, pid int, at time.Time) store.DaemonRunStartResult {
			t.Helper()
			res, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: node, PID: pid, Version: "v1", At: at})
			require.NoError(t, err)
			require.Equal(t, node, res.Run.Node)
			require.Equal(t, pid, res.Run.PID)
			require.False(t, res.Run.Clean())
			return res
		}

		first := start("node-a", 100, epoch)
		require.Nil(t, first.Previous)

		// The first run never stopped: the second sees it as unclean.
		second := start("node-a", 101, epoch.Add(time.Minute))
		require.NotNil(t, second.Previous)
		requireDaemonRun(t, first.Run, *second.Previous)
		require.False(t, second.Previous.Clean())

		// Another node has its own history.
		other := start("node-b", 200, epoch.Add(time.Minute))
		require.Nil(t, other.Previous)

		stoppedAt := epoch.Add(2 * time.Minute)
		require.NoError(t, b.st.DaemonRunStop(ctx, second.Run.ID, stoppedAt))
		third := start("node-a", 102, epoch.Add(3*time.Minute))
		require.NotNil(t, third.Previous)
		require.Equal(t, second.Run.ID, third.Previous.ID)
		require.True(t, third.Previous.Clean())
		requireTime(t, stoppedAt, third.Previous.StoppedAt)
	})

	t.Run("DaemonRunStop_errors", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		res, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: "n", PID: 1, Version: "v1", At: epoch})
		require.NoError(t, err)

		require.NoError(t, b.st.DaemonRunStop(ctx, res.Run.ID, epoch.Add(time.Second)))
		require.ErrorIs(t, b.st.DaemonRunStop(ctx, res.Run.ID, epoch.Add(2*time.Second)), jam.ErrConflict)
		require.ErrorIs(t, b.st.DaemonRunStop(ctx, res.Run.ID+1000, epoch), jam.ErrNotFound)
	})
	t.Run("DaemonRun_timesUTCMicroseconds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		run, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: "n", PID: 1, Version: "v1", At: epoch})
		require.NoError(t, err)
		requireTime(t, epoch, run.Run.StartedAt)
		require.NoError(t, b.st.DaemonRunStop(ctx, run.Run.ID, epoch.Add(time.Hour)))
		next, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: "n", PID: 2, Version: "v1", At: epoch})
		require.NoError(t, err)
		requireTime(t, epoch, next.Previous.StartedAt)
		requireTime(t, epoch.Add(time.Hour), next.Previous.StoppedAt)
	})

	basicInvalid(t, setup, "DaemonRun_invalidParams", "run ")
}
