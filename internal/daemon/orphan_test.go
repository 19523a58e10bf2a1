package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/jam"
)

// orphanMarkerEnv is set in an orphan test's agent's environment, to its
// marker: the processes carrying it are that agent's.
const orphanMarkerEnv = "JAM_TEST_ORPHAN_MARKER"

// orphanRig is a hub in the test process and a jamd started as its own
// process, so the test can SIGKILL it.
type orphanRig struct {
	t       *testing.T
	cfg     config.Config
	dataDir string
	jamd    *child
	client  *apiclient.Client
	owner   *band.Client
}

func newOrphanRig(t *testing.T) *orphanRig {
	t.Helper()
	h, owner := startHubWithOwner(t)
	cfg := testConfig(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "jamd.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logf.Close() })
	r := &orphanRig{t: t, cfg: cfg, dataDir: cfg.DataDir, owner: owner,
		jamd:   &child{t: t, log: logf, args: []string{"--data-dir", cfg.DataDir, "--band", h.URL(), "--band-key", h.OwnerKey(), "--log-level", "debug"}},
		client: apiclient.New(filepath.Join(cfg.DataDir, "jamd.sock"))}
	t.Cleanup(func() { r.client.Close() })
	t.Cleanup(func() {
		if r.jamd.cmd != nil && r.jamd.cmd.ProcessState == nil {
			_ = r.jamd.cmd.Process.Kill()
			_ = r.jamd.cmd.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("jamd log:\n%s", b)
		}
	})
	return r
}

// start starts jamd and waits until it serves.
func (r *orphanRig) start() {
	r.t.Helper()
	r.jamd.cmd = nil
	r.jamd.start()
	ctx, cancel := context.WithTimeout(r.t.Context(), 60*time.Second)
	defer cancel()
	_, err := r.client.WaitReady(ctx, 10*time.Millisecond)
	require.NoError(r.t, err)
}

// ownedAgentMidTurn adds an owned agent running command under sandbox,
// mentions it with a [slow] prompt and waits until its turn runs; it
// returns the agent, the room and the pid (the group's id) of its lease.
func (r *orphanRig) ownedAgentMidTurn(name, sandbox string, command []string) (wire.Agent, wire.Room, protocol.MessageSent, int) {
	r.t.Helper()
	ctx := r.t.Context()
	agent, err := r.client.AgentAdd(ctx, wire.AgentAddRequest{Name: name, Runtime: &wire.AgentRuntime{
		Command: command, Permission: "allow", Sandbox: sandbox}})
	require.NoError(r.t, err)
	room, err := r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: name, Agents: []string{name}})
	require.NoError(r.t, err)
	sent, err := r.owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] take your time", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(r.t, err)
	pid := r.runningTurnPid(0)
	return agent, room, sent, pid
}

// runningTurnPid waits until a turn runs on a lease whose pid is not
// other, and returns that pid.
func (r *orphanRig) runningTurnPid(other int) int {
	r.t.Helper()
	db := openStore(r.t, r.cfg)
	ctx := r.t.Context()
	var pid int
	require.Eventually(r.t, func() bool {
		wss, err := db.WorkspaceList(ctx)
		if err != nil || len(wss) == 0 {
			return false
		}
		ws := wss[0].ID
		sessions, err := db.SessionList(ctx, ws)
		if err != nil || len(sessions) != 1 {
			return false
		}
		turns, err := db.TurnList(ctx, ws, sessions[0].ID)
		if err != nil || len(turns) == 0 || turns[len(turns)-1].State != jam.TurnRunning {
			return false
		}
		l, err := db.LeaseLive(ctx, ws, string(sessions[0].TemplateID))
		if err != nil || l.Pid == other {
			return false
		}
		pid = l.Pid
		return true
	}, 60*time.Second, 10*time.Millisecond, "a turn runs on the agent")
	require.NoError(r.t, db.Close())
	return pid
}

// agentProcesses lists the processes of an agent: those in group pgid
// (0: none) and those whose command line or environment carries marker.
func agentProcesses(t *testing.T, pgid int, marker string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name: state ppid pgrp ...
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue // a zombie runs nothing
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if (pgid != 0 && f[2] == strconv.Itoa(pgid)) || bytes.Contains(cmdline, []byte(marker)) || bytes.Contains(environ, []byte(marker)) {
			found = append(found, fmt.Sprintf("pid %d pgid %s: %s", pid, f[2], bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return found
}

// requireNoAgentLeft polls until no process of the agent is left.
func requireNoAgentLeft(t *testing.T, pgid int, marker, why string) {
	t.Helper()
	var left []string
	require.Eventually(t, func() bool {
		left = agentProcesses(t, pgid, marker)
		return len(left) == 0
	}, 15*time.Second, 20*time.Millisecond, "%s: agent processes left: %v", why, &left)
}

// SIGKILLLeavesNoAgent is the check harnesstest will run for every
// harness: given jamd started as its own process (jamd, not yet waited
// for) and an owned agent mid-turn, whose process group is pgid and whose
// processes carry marker in their argv or environment, SIGKILL jamd and
// find no process of the agent left.
func SIGKILLLeavesNoAgent(t *testing.T, jamd *os.Process, pgid int, marker string) {
	t.Helper()
	require.NotEmpty(t, agentProcesses(t, pgid, marker), "the agent runs before jamd is killed")
	require.NoError(t, jamd.Signal(syscall.SIGKILL))
	requireNoAgentLeft(t, pgid, marker, "after jamd was SIGKILLed")
}

// newMarker is a number no other process shows: an agent's processes
// carry it in their environment, and it is the argument of the sleep its
// script may end with.
func newMarker() string { return strconv.FormatUint(100_000_000+rand.Uint64N(800_000_000), 10) }

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
			SIGKILLLeavesNoAgent(t, r.jamd.cmd.Process, pid, marker)
			_ = r.jamd.cmd.Wait()
		})
	}
}

// TestOrphans_restartEndsWhatAKilledJamdLeft: an agent that outlived a
// SIGKILLed jamd (started through setpriv --pdeathsig clear, it is not
// tied to jamd's life; and it goes on when its stdin ends), with a tool it
// left in its group, is ended by the restarted jamd before that starts
// agents: the message is then answered by exactly one agent.
func TestOrphans_restartEndsWhatAKilledJamdLeft(t *testing.T) {
	t.Parallel()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to clear the parent-death signal")
	}
	r := newOrphanRig(t)
	r.start()
	marker, toolArg := newMarker(), newMarker()
	cmd := append([]string{setpriv, "--pdeathsig", "clear"}, markedDemoAgent(marker, "sleep "+toolArg+" & ", true)...)
	agent, room, sent, pid := r.ownedAgentMidTurn("demo", "local", cmd)
	require.NoError(t, r.jamd.cmd.Process.Signal(syscall.SIGKILL))
	_ = r.jamd.cmd.Wait()
	// What the restarted jamd has to end: the agent, now `sleep marker`,
	// and its tool.
	var tool int
	require.Eventually(t, func() bool {
		tool = pidOf(t, "sleep\x00"+toolArg+"\x00")
		return processAlive(pid) && pidOf(t, "sleep\x00"+marker+"\x00") == pid && tool != 0
	}, 15*time.Second, 20*time.Millisecond, "the agent outlives the killed jamd")

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
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(d) + "/cmdline"); err == nil && bytes.Contains(b, []byte(marker)) {
			leaders++
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
