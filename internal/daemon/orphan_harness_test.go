package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/proc"
	"github.com/jamhq/jam/internal/realagent"
)

// orphanStep bounds one exchange with a real CLI through jamd (seconds
// alone, 10-30 s on two loaded cores, more under the race detector).
const orphanStep = 3 * time.Minute

// orphanHarness is a harness kind run as an owned agent for the orphan
// tests.
type orphanHarness struct {
	kind     string // the agent's harness kind
	protocol string // what jamd speaks to it: acp, claude, codex
	real     bool   // a real CLI on the fake model (else the demo agent)
	// runtime is the agent's runtime under sandbox (bwrap: the network
	// cut), its processes carrying marker in their environment, wrapped
	// by wrap (a shell prefix; "" for none); area is what the agent owns
	// outside jamd's data directory (its home, under local).
	runtime func(t *testing.T, model *fakemodel.Server, sandbox, marker, wrap string) (rt *wire.AgentRuntime, area []string)
}

// wrapped is argv behind a shell that runs the script wrap, in which
// "$@" runs argv (appended when wrap does not say it); "" is argv alone.
func wrapped(wrap string, argv []string) []string {
	if wrap == "" {
		return argv
	}
	if !strings.Contains(wrap, `"$@"`) {
		wrap += `"$@"`
	}
	return append([]string{"/bin/sh", "-c", wrap, "sh"}, argv...)
}

var orphanHarnesses = []orphanHarness{
	{kind: "acp", protocol: "acp", runtime: func(t *testing.T, _ *fakemodel.Server, sandbox, marker, wrap string) (*wire.AgentRuntime, []string) {
		return &wire.AgentRuntime{Harness: "acp", Command: markedDemoAgent(marker, wrap, false), Permission: "allow", Sandbox: sandbox}, nil
	}},
	{kind: "opencode", protocol: "acp", real: true, runtime: func(t *testing.T, model *fakemodel.Server, sandbox, marker, wrap string) (*wire.AgentRuntime, []string) {
		oc := realagent.NewOpenCode(t, model)
		if sandbox == "bwrap" {
			return &wire.AgentRuntime{Harness: "opencode", Command: wrapped(wrap, oc.SandboxKindCommand()), Env: append(oc.SandboxEnv(), orphanMarkerEnv+"="+marker),
				Permission: "allow", Sandbox: sandbox, Network: "off"}, nil
		}
		return &wire.AgentRuntime{Harness: "opencode", Command: wrapped(wrap, oc.KindCommand()), Env: append(oc.Env, orphanMarkerEnv+"="+marker),
			Permission: "allow", Sandbox: sandbox}, []string{oc.Home}
	}},
	{kind: "claude", protocol: "claude", real: true, runtime: func(t *testing.T, model *fakemodel.Server, sandbox, marker, wrap string) (*wire.AgentRuntime, []string) {
		cl := realagent.NewClaude(t, model)
		if sandbox == "bwrap" {
			return &wire.AgentRuntime{Harness: "claude", Command: wrapped(wrap, cl.SandboxCommand()), Env: append(cl.SandboxEnv(), orphanMarkerEnv+"="+marker),
				Permission: "allow", Sandbox: sandbox, Network: "off"}, nil
		}
		return &wire.AgentRuntime{Harness: "claude", Command: wrapped(wrap, cl.Command()), Env: append(cl.Env, orphanMarkerEnv+"="+marker),
			Permission: "allow", Sandbox: sandbox}, []string{cl.Home}
	}},
	{kind: "codex", protocol: "codex", real: true, runtime: func(t *testing.T, model *fakemodel.Server, sandbox, marker, wrap string) (*wire.AgentRuntime, []string) {
		cx := realagent.NewCodex(t, model)
		if sandbox == "bwrap" {
			return &wire.AgentRuntime{Harness: "codex", Command: wrapped(wrap, cx.SandboxCommand()), Env: append(cx.SandboxEnv(), orphanMarkerEnv+"="+marker),
				Permission: "allow", Sandbox: sandbox, Network: "off"}, nil
		}
		return &wire.AgentRuntime{Harness: "codex", Command: wrapped(wrap, cx.Command()), Env: append(cx.Env, orphanMarkerEnv+"="+marker),
			Permission: "allow", Sandbox: sandbox}, []string{cx.Home}
	}},
	{kind: "copilot", protocol: "acp", real: true, runtime: func(t *testing.T, model *fakemodel.Server, sandbox, marker, wrap string) (*wire.AgentRuntime, []string) {
		cp := realagent.NewCopilot(t, model)
		if sandbox == "bwrap" {
			return &wire.AgentRuntime{Harness: "copilot", Command: wrapped(wrap, cp.SandboxCommand()), Env: append(cp.SandboxEnv(), orphanMarkerEnv+"="+marker),
				Permission: "allow", Sandbox: sandbox, Network: "off", ReadOnly: []string{cp.Cache}}, nil
		}
		return &wire.AgentRuntime{Harness: "copilot", Command: wrapped(wrap, cp.Command()), Env: append(cp.Env, orphanMarkerEnv+"="+marker),
			Permission: "allow", Sandbox: sandbox}, []string{cp.Home}
	}},
}

// orphanCase is one harness's agent mid-turn under a jamd process.
type orphanCase struct {
	*orphanRig
	h      orphanHarness
	model  *fakemodel.Server
	marker string
	area   []string // the data directory, and what runtime named
	agent  wire.Agent
	room   wire.Room
	sent   protocol.MessageSent
	pid    int // the lease's process, leading its group
}

// startOrphanCase starts jamd with an agent of h under sandbox, mentions
// it and returns once its turn runs (the fake model holding its answer, or
// the demo agent thinking on a [slow] prompt).
func startOrphanCase(t *testing.T, h orphanHarness, sandbox, wrap string) *orphanCase {
	t.Helper()
	if sandbox == "bwrap" {
		requireBwrap(t)
	}
	c := &orphanCase{h: h, marker: newMarker()}
	if h.real {
		c.model = fakemodel.New(fakemodel.Config{})
		require.NoError(t, c.model.Start())
		t.Cleanup(c.model.Stop)
	}
	rt, area := h.runtime(t, c.model, sandbox, c.marker, wrap)
	rt.Repo = gitRepo(t, "app")
	rt.HandshakeTimeout = orphanStep.String()
	c.orphanRig = newOrphanRig(t)
	c.area = append([]string{c.dataDir}, area...)
	c.start()
	ctx := t.Context()
	var err error
	c.agent, err = c.client.AgentAdd(ctx, wire.AgentAddRequest{Name: h.kind, Runtime: rt})
	require.NoError(t, err)
	require.Equal(t, sandbox, c.agent.Runtime.Desired.Sandbox)
	c.room, err = c.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: h.kind, Agents: []string{h.kind}})
	require.NoError(t, err)
	if h.real {
		gate := make(chan struct{})
		t.Cleanup(func() { close(gate) })
		c.model.Push(fakemodel.Reply{Text: []string{"never"}, Hold: gate})
	}
	c.sent, err = c.owner.SendChatMessage(ctx, c.room.ID, "@"+c.agent.Handle+" [slow] migrate the schema", []protocol.Mention{{ID: c.agent.AgentID}})
	require.NoError(t, err)
	if h.real {
		wctx, cancel := context.WithTimeout(ctx, orphanStep)
		_, err := c.model.WaitRequests(wctx, 1, fakemodel.Turn)
		cancel()
		require.NoError(t, err, "the turn reaches the model")
	}
	c.pid = c.runningPid()
	require.NotEmpty(t, c.left(), "the agent runs")
	return c
}

// runningPid waits until the agent's turn runs and returns the pid of its
// execution (jamd's API; the store is jamd's while it runs).
func (c *orphanCase) runningPid() int {
	c.t.Helper()
	ctx := c.t.Context()
	pid := 0
	require.Eventually(c.t, func() bool {
		ss, err := c.client.Sessions(ctx)
		if err != nil || len(ss) != 1 {
			return false
		}
		ts, err := c.client.Turns(ctx, ss[0].ID)
		if err != nil || len(ts) != 1 || ts[0].State != "running" {
			return false
		}
		turn, err := c.client.Turn(ctx, ts[0].ID)
		if err != nil || len(turn.Executions) == 0 {
			return false
		}
		pid = turn.Executions[len(turn.Executions)-1].Pid
		return pid > 0
	}, orphanStep, 20*time.Millisecond, "the agent's turn runs")
	return pid
}

// left lists the agent's processes: those of its lease's group, of every
// group the process ledger (run/) records, whose environment carries the
// marker, or whose working directory is in the agent's area.
func (c *orphanCase) left() []string {
	c.t.Helper()
	groups := map[int]bool{c.pid: true}
	ents, _ := os.ReadDir(filepath.Join(c.dataDir, "run"))
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(c.dataDir, "run", e.Name())); err == nil {
			if r, err := proc.DecodeRecord(b); err == nil {
				groups[r.Pgid] = true
			}
		}
	}
	pids, err := proc.Pids()
	require.NoError(c.t, err)
	var found []string
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil || st.State == 'Z' || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid)
		environ, _ := os.ReadFile(dir + "/environ")
		cwd, _ := os.Readlink(dir + "/cwd")
		why := ""
		switch {
		case groups[st.Pgid]:
			why = "in group " + strconv.Itoa(st.Pgid)
		case bytes.Contains(environ, []byte(orphanMarkerEnv+"="+c.marker)):
			why = "marked"
		default:
			for _, a := range c.area {
				if cwd == a || strings.HasPrefix(cwd, a+"/") {
					why = "in " + cwd
				}
			}
		}
		if why != "" {
			cmdline, _ := os.ReadFile(dir + "/cmdline")
			found = append(found, fmt.Sprintf("pid %d (%s): %s", pid, why, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return found
}

// requireNothingLeft polls until no process of the agent is left.
func (c *orphanCase) requireNothingLeft(why string) {
	c.t.Helper()
	var left []string
	require.Eventually(c.t, func() bool {
		left = c.left()
		return len(left) == 0
	}, 15*time.Second, 20*time.Millisecond, "%s: agent processes left: %v", why, &left)
}

// restartAnswersOnce starts jamd again and waits until the message is
// settled, answered by one reply; then stops it cleanly, which leaves
// nothing either.
func (c *orphanCase) restartAnswersOnce() {
	c.t.Helper()
	t0 := time.Now()
	c.start()
	var replies []string
	require.Eventually(c.t, func() bool {
		page, err := c.owner.ChatMessages(c.t.Context(), c.room.ID, "", 50)
		require.NoError(c.t, err)
		replies = nil
		processed := false
		for _, m := range page.Messages {
			if m.SenderID == c.agent.AgentID {
				replies = append(replies, m.Content)
			}
			if m.ID == c.sent.ID && m.Metadata.DeliveryStatus[c.agent.AgentID].Status == protocol.DeliveryProcessed {
				processed = true
			}
		}
		return processed
	}, orphanStep, 50*time.Millisecond, "the restarted jamd answers")
	require.Len(c.t, replies, 1, "answered once")
	c.t.Logf("the restarted jamd answered in %v", time.Since(t0).Round(time.Millisecond))
	c.jamd.stop()
	c.requireNothingLeft("after a clean stop")
}

// TestOrphans_everyHarnessSIGKILLed: for every harness kind under bwrap,
// and all but OpenCode under local, jamd SIGKILLed while its owned agent
// is mid-turn leaves no process of the agent (by the ledger's groups, the
// marker in the environment and the working directory), and the restarted
// jamd answers the message once.
func TestOrphans_everyHarnessSIGKILLed(t *testing.T) {
	t.Parallel()
	for _, h := range orphanHarnesses {
		for _, sandbox := range []string{"bwrap", "local"} {
			if h.kind == "opencode" && sandbox == "local" {
				// The costliest case (about 95 s under the race detector on
				// two loaded cores); ACP under local is the demo agent's
				// and Copilot's.
				continue
			}
			t.Run(h.kind+"/"+sandbox, func(t *testing.T) {
				t.Parallel()
				c := startOrphanCase(t, h, sandbox, "")
				took := SIGKILLLeavesNoAgent(t, c.jamd.cmd.Process, c.left)
				_ = c.jamd.cmd.Wait()
				t.Logf("%s under %s: nothing left %v after the SIGKILL", h.kind, sandbox, took.Round(time.Millisecond))
				c.restartAnswersOnce()
			})
		}
	}
}

// TestOrphans_secondSIGTERMPerProtocol: for a harness of each protocol
// (opencode for ACP, claude, codex) under either sandbox, a second
// SIGTERM while jamd stops (jamd then kills every agent group and exits at
// once) leaves no process of the agent. The agent's group ignores SIGTERM
// and lingers when its CLI ends (a shell around it becomes a sleep), so
// the stop would take its grace periods.
func TestOrphans_secondSIGTERMPerProtocol(t *testing.T) {
	t.Parallel()
	for _, h := range orphanHarnesses {
		if h.kind != "opencode" && h.kind != "claude" && h.kind != "codex" {
			continue
		}
		for _, sandbox := range []string{"bwrap", "local"} {
			t.Run(h.kind+"/"+sandbox, func(t *testing.T) {
				t.Parallel()
				linger := newMarker()
				c := startOrphanCase(t, h, sandbox, `trap '' TERM; "$@"; exec sleep `+linger)
				t0 := time.Now()
				require.NoError(t, c.jamd.cmd.Process.Signal(syscall.SIGTERM))
				// jamd is stopping: it closed the agent's stdin, the CLI
				// ended, and the group lingers.
				require.Eventually(t, func() bool { return sleepers(t, linger) == 1 }, orphanStep, 10*time.Millisecond, "jamd began to stop its agent")
				require.NoError(t, c.jamd.cmd.Process.Signal(syscall.SIGTERM))
				require.Error(t, c.jamd.cmd.Wait(), "a second signal ends jamd at once")
				c.requireNothingLeft("after a second SIGTERM while jamd stopped")
				t.Logf("%s under %s: nothing left %v after the first SIGTERM", h.kind, sandbox, time.Since(t0).Round(time.Millisecond))
			})
		}
	}
}
