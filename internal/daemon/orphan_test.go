package daemon_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/proc"
)

// orphanMarkerEnv is set in an orphan test's agent's environment, to its
// marker: the processes carrying it are that agent's.
const orphanMarkerEnv = "JAM_TEST_ORPHAN_MARKER"

// markedDemoAgent is the demo agent with marker in its environment, and,
// in its script, shell commands before it; with linger, the script does
// not exit when the demo agent does (at the end of its stdin) but becomes
// `sleep marker`, as an agent would that goes on with a tool when jamd
// goes away.
func markedDemoAgent(marker, before string, linger bool) []string {
	run := orphanMarkerEnv + "=" + marker + " " + demoAgentEnv + `="$HOME/demo-agent" exec "$0" -test.run='^$'`
	if linger {
		run = strings.Replace(run, " exec ", " ", 1) + "; exec sleep " + marker
	}
	return []string{"/bin/sh", "-c", before + run, os.Args[0]}
}

// TestOrphans_sigkilledJamdLeavesNoAgent: jamd SIGKILLed while an owned
// agent is mid-turn leaves no process of it, under either sandbox (under
// bwrap, a tool the agent left in the background goes too).
func TestOrphans_sigkilledJamdLeavesNoAgent(t *testing.T) {
	t.Parallel()
	for _, sandbox := range []string{"local", "bwrap"} {
		t.Run(sandbox, func(t *testing.T) {
			t.Parallel()
			before := ""
			if sandbox == "bwrap" {
				requireBwrap(t)
				// A tool left in the background, in the sandbox.
				before = "sleep 3600 & "
			}
			r := newOrphanRig(t)
			r.start()
			marker := newMarker()
			_, _, _, pid := r.ownedAgentMidTurn("demo", sandbox, markedDemoAgent(marker, before, true))
			SIGKILLLeavesNoAgent(t, r.jamd.cmd.Process, groupOrMarked(t, pid, marker))
			_ = r.jamd.cmd.Wait()
		})
	}
}

// TestOrphans_restartEndsWhatAKilledJamdLeft: a recorded agent group
// still running after jamd was SIGKILLed (what a shim that could not act
// leaves: killed with jamd, by the OOM killer; or an agent of a jamd
// without shims), its leader and a tool it left in its group, is ended by
// the restarted jamd before that starts agents; the message is then
// answered by exactly one agent. The agent jamd ran is gone with it (its
// shim ended it); the leftover is a group the test starts and records in
// the ledger as jamd would have.
func TestOrphans_restartEndsWhatAKilledJamdLeft(t *testing.T) {
	t.Parallel()
	r := newOrphanRig(t)
	r.start()
	marker, toolArg := newMarker(), newMarker()
	agent, room, sent, shim := r.ownedAgentMidTurn("demo", "local", markedDemoAgent(marker, "", true))
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGKILL))
	_ = r.jamd.cmd.Wait()
	requireNoAgentLeft(t, shim, marker, "after jamd was SIGKILLed")

	// The leftover: `sleep marker` leading its group, and its tool.
	left := exec.Command("/bin/sh", "-c", "sleep "+toolArg+" & exec sleep "+marker)
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, left.Start())
	reaped := make(chan struct{})
	go func() { _ = left.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = syscall.Kill(-left.Process.Pid, syscall.SIGKILL); <-reaped })
	pid := left.Process.Pid
	var tool int
	require.Eventually(t, func() bool {
		tool = pidOf(t, "sleep\x00"+toolArg+"\x00")
		return pidOf(t, "sleep\x00"+marker+"\x00") == pid && tool != 0
	}, 15*time.Second, 20*time.Millisecond, "the leftover group runs")
	st, err := proc.ReadStat(pid)
	require.NoError(t, err)
	boot, err := proc.BootID()
	require.NoError(t, err)
	rec, err := json.Marshal(proc.Record{Pid: pid, Pgid: pid, Sid: st.Sid, StartTime: st.StartTime, BootID: boot, Started: time.Now().UTC()})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(r.dataDir, "run", strconv.Itoa(pid)+".json"), rec, 0o600))

	r.start()
	require.Eventually(t, func() bool { return !processAlive(pid) && !processAlive(tool) }, 15*time.Second, 20*time.Millisecond,
		"the restarted jamd ended the agent (pid %d) and the tool (pid %d) the killed one left", pid, tool)
	// The message is answered by the new agent, the only one.
	require.Eventually(t, func() bool {
		page, err := r.owner.ChatMessages(t.Context(), room.ID, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.ID == sent.ID && m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
				return true
			}
		}
		return false
	}, 90*time.Second, 20*time.Millisecond, "the restarted jamd's agent answers")
	leaders := 0
	for _, d := range pids(t) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(d) + "/cmdline"); err == nil && bytes.HasPrefix(b, []byte(local.ShimName+"\x00")) && bytes.Contains(b, []byte(marker)) {
			leaders++ // the agent's shim
		}
	}
	require.Equal(t, 1, leaders, "exactly one agent runs: %v", agentProcesses(t, 0, marker))
	r.jamd.stop()
	requireNoAgentLeft(t, 0, marker, "after a clean stop")
	require.Zero(t, sleepers(t, toolArg), "no tool left after a clean stop")
	ents, err := os.ReadDir(filepath.Join(r.dataDir, "run"))
	require.NoError(t, err)
	require.Empty(t, ents, "a clean stop removes the records of the agents it stopped")
}

// pids lists the processes /proc shows.
func pids(t *testing.T) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// pidOf is a running process whose cmdline is exactly cmdline (0: none).
func pidOf(t *testing.T, cmdline string) int {
	t.Helper()
	for _, pid := range pids(t) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(b) == cmdline && processAlive(pid) {
			return pid
		}
	}
	return 0
}

// TestOrphans_secondSignalWhileStoppingLeavesNoAgent: a second SIGTERM
// while jamd stops (jamd then exits at once) still ends every agent, here
// one whose group ignores SIGTERM and lingers after its stdin closes, so
// the stop takes its grace periods.
func TestOrphans_secondSignalWhileStoppingLeavesNoAgent(t *testing.T) {
	t.Parallel()
	r := newOrphanRig(t)
	r.start()
	marker := newMarker()
	sleepArg := newMarker()
	// sh leads the group, ignores SIGTERM, runs the demo agent, and when
	// it ends (its stdin closed) becomes a sleep that ignores it too.
	script := `trap '' TERM; ` + orphanMarkerEnv + "=" + marker + " " + demoAgentEnv + `="$HOME/demo-agent" "$0" -test.run='^$'; exec sleep ` + sleepArg
	_, _, _, pid := r.ownedAgentMidTurn("demo", "local", []string{"/bin/sh", "-c", script, os.Args[0]})
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGTERM))
	// jamd is stopping: it closed the agent's stdin, and the group lingers.
	require.Eventually(t, func() bool { return sleepers(t, sleepArg) == 1 }, 15*time.Second, 10*time.Millisecond, "jamd began to stop its agent")
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGTERM))
	err := r.jamd.cmd.Wait()
	require.Error(t, err, "a second signal ends jamd at once")
	requireNoAgentLeft(t, pid, sleepArg, "after a second SIGTERM while jamd stopped")
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
