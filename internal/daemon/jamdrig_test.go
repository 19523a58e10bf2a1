package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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

func newOrphanRig(t *testing.T) *orphanRig { return newJamdRig(t, nil) }

// newJamdRig is the rig every test of a jamd process uses: with calls,
// jamd reaches the hub through a front that counts its calls. jamd is not
// started; on failure its log is shown.
func newJamdRig(t *testing.T, calls *hubCalls) *orphanRig {
	t.Helper()
	h, owner := startHubWithOwner(t)
	hubURL := h.URL()
	if calls != nil {
		hubURL = calls.front(t, h.Handler()).URL
	}
	cfg := testConfig(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "jamd.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logf.Close() })
	r := &orphanRig{t: t, cfg: cfg, dataDir: cfg.DataDir, owner: owner,
		jamd:   &child{t: t, log: logf, store: cfg.Store, args: []string{"--data-dir", cfg.DataDir, "--band", hubURL, "--band-key", h.OwnerKey(), "--log-level", "debug"}},
		client: apiclient.NewWrapped(filepath.Join(cfg.DataDir, "jamd.sock"), controlAPI.Transport)}
	t.Cleanup(func() { r.client.Close() })
	t.Cleanup(func() {
		if r.jamd.cmd != nil && r.jamd.cmd.ProcessState == nil {
			_ = r.jamd.cmd.Process.Kill()
			_ = r.jamd.cmd.Wait()
		}
		if t.Failed() {
			logTail(t, logf.Name())
		}
	})
	return r
}

// start starts jamd and waits until it serves.
func (r *orphanRig) start() {
	r.t.Helper()
	r.jamd.cmd = nil
	r.jamd.start()
	// A kept-alive connection to a jamd killed since would answer the
	// first call with a reset: start every wait on fresh connections.
	r.client.Close()
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

// SIGKILLLeavesNoAgent is the check every harness gets: given jamd
// started as its own process (jamd, not yet waited for) and an owned agent
// mid-turn, whose processes left lists, SIGKILL jamd and find none of them
// left within 15 s. It returns how long they took to go.
func SIGKILLLeavesNoAgent(t *testing.T, jamd *os.Process, left func() []string) time.Duration {
	t.Helper()
	require.NotEmpty(t, left(), "the agent runs before jamd is killed")
	t0 := time.Now()
	require.NoError(t, jamd.Signal(syscall.SIGKILL))
	var procs []string
	require.Eventually(t, func() bool {
		procs = left()
		return len(procs) == 0
	}, 15*time.Second, 20*time.Millisecond, "after jamd was SIGKILLed: agent processes left: %v", &procs)
	return time.Since(t0)
}

// groupOrMarked lists the processes of group pgid or carrying marker (see
// agentProcesses).
func groupOrMarked(t *testing.T, pgid int, marker string) func() []string {
	return func() []string { return agentProcesses(t, pgid, marker) }
}

// newMarker is a number no other process shows: an agent's processes
// carry it in their environment, and it is the argument of the sleep its
// script may end with.
func newMarker() string { return strconv.FormatUint(100_000_000+rand.Uint64N(800_000_000), 10) }
