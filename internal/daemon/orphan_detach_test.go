package daemon_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/proc"
)

// TestOrphans_detachedGrandchild: an agent that daemonizes a process
// (setsid in a fork of a fork: a new session and group, its parent gone)
// leaves nothing behind, under either sandbox, when jamd is SIGKILLed
// mid-turn and when jamd stops cleanly: under bwrap it is in the sandbox's
// pid namespace; under local it stays below the agent's shim, its
// subreaper, which ends it.
func TestOrphans_detachedGrandchild(t *testing.T) {
	t.Parallel()
	for _, sandbox := range []string{"bwrap", "local"} {
		for _, how := range []string{"sigkill", "stop"} {
			t.Run(sandbox+"/"+how, func(t *testing.T) {
				t.Parallel()
				tool := newMarker()
				daemonize := "setsid -f sleep " + tool + " </dev/null >/dev/null 2>&1; "
				c := startOrphanCase(t, orphanHarnesses[0], sandbox, daemonize)
				var detached int
				require.Eventually(t, func() bool {
					detached = pidOf(t, "sleep\x00"+tool+"\x00")
					return detached != 0
				}, 15*time.Second, 20*time.Millisecond, "the agent daemonized its tool")
				st, err := proc.ReadStat(detached)
				require.NoError(t, err)
				require.NotEqual(t, c.pid, st.Pgid, "the tool left the agent's group")
				if how == "sigkill" {
					require.NoError(t, c.jamd.cmd.Process.Signal(syscall.SIGKILL))
					_ = c.jamd.cmd.Wait()
				} else {
					c.jamd.stop()
				}
				c.requireNothingLeft("after jamd " + map[string]string{"sigkill": "was SIGKILLed", "stop": "stopped"}[how])
				require.False(t, processAlive(detached), "the detached tool is gone")
			})
		}
	}
}

// TestOrphans_detachedGrandchildOfAStubbornAgent: under local, an agent
// that ignores SIGTERM and lingers when its stdin ends, with a detached
// process that ignores SIGTERM too, is stopped by jamd's escalation to
// SIGKILL of its group, which kills the shim with it; the detached
// process is gone all the same: the shim killed it a second after the
// group's SIGTERM.
func TestOrphans_detachedGrandchildOfAStubbornAgent(t *testing.T) {
	t.Parallel()
	r := newOrphanRig(t)
	r.start()
	marker, tool := newMarker(), newMarker()
	stubborn := "trap '' TERM; setsid -f sleep " + tool + " </dev/null >/dev/null 2>&1; "
	_, _, _, shim := r.ownedAgentMidTurn("demo", "local", markedDemoAgent(marker, stubborn, true))
	var detached int
	require.Eventually(t, func() bool {
		detached = pidOf(t, "sleep\x00"+tool+"\x00")
		return detached != 0
	}, 15*time.Second, 20*time.Millisecond, "the agent daemonized its tool")
	// The stop outlasts jamd's stop timeout (the agent takes both its
	// grace periods), which then kills the group: jamd exits uncleanly.
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGTERM))
	_ = r.jamd.cmd.Wait()
	requireNoAgentLeft(t, shim, marker, "after jamd stopped")
	require.Eventually(t, func() bool { return !processAlive(detached) }, 15*time.Second, 20*time.Millisecond,
		"the detached tool (pid %d) is gone", detached)
}

// TestOrphans_detachedGrandchildOnASecondSignal: under local, the same
// stubborn agent and detached process, and a second SIGTERM while jamd
// stops, before the group's SIGTERM: jamd kills the group's members at
// once and exits, leaving the shim to its parent-death signal, on which it
// kills the detached process too.
func TestOrphans_detachedGrandchildOnASecondSignal(t *testing.T) {
	t.Parallel()
	r := newOrphanRig(t)
	r.start()
	marker, tool := newMarker(), newMarker()
	stubborn := "trap '' TERM; setsid -f sleep " + tool + " </dev/null >/dev/null 2>&1; "
	_, _, _, shim := r.ownedAgentMidTurn("demo", "local", markedDemoAgent(marker, stubborn, true))
	var detached int
	require.Eventually(t, func() bool {
		detached = pidOf(t, "sleep\x00"+tool+"\x00")
		return detached != 0
	}, 15*time.Second, 20*time.Millisecond, "the agent daemonized its tool")
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGTERM))
	// jamd is stopping: it closed the agent's stdin, and the group lingers.
	require.Eventually(t, func() bool { return sleepers(t, marker) == 1 }, 15*time.Second, 10*time.Millisecond, "jamd began to stop its agent")
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGTERM))
	require.Error(t, r.jamd.cmd.Wait(), "a second signal ends jamd at once")
	requireNoAgentLeft(t, shim, marker, "after a second SIGTERM")
	require.Eventually(t, func() bool { return !processAlive(detached) }, 15*time.Second, 20*time.Millisecond,
		"the detached tool (pid %d) is gone", detached)
}
