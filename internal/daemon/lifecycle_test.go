package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// markingAgentScript writes an executable script at path that appends its
// MARK variable to log as it starts, then runs the demo agent: each line
// of log is one process started, with the environment it got.
func markingAgentScript(t *testing.T, path, log string) {
	t.Helper()
	script := fmt.Sprintf("#!/bin/sh\necho \"$MARK\" >> %q\n%s=\"$HOME/demo-agent\" exec %q -test.run='^$'\n", log, demoAgentEnv, os.Args[0])
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
}

// marks is what the marking agents logged.
func marks(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// lastTurn is the newest turn of the session.
func lastTurn(t *testing.T, c *apiclient.Client, session string) wire.Turn {
	t.Helper()
	ts, err := c.Turns(t.Context(), session)
	require.NoError(t, err)
	require.NotEmpty(t, ts)
	return ts[len(ts)-1]
}

// markingAgent adds an owned agent that runs the marking script, with
// MARK=one, unsandboxed (so it can write its log), in a room of its own.
func markingAgent(t *testing.T, c *apiclient.Client, name string) (wire.Agent, string, string) {
	t.Helper()
	dir := t.TempDir()
	script, log := filepath.Join(dir, "agent.sh"), filepath.Join(dir, "marks.log")
	markingAgentScript(t, script, log)
	agent, err := c.AgentAdd(t.Context(), wire.AgentAddRequest{Name: name, Runtime: &wire.AgentRuntime{Command: []string{script}, Permission: "allow",
		Sandbox: "local", Env: []string{"MARK=one"}}})
	require.NoError(t, err)
	room, err := c.RoomCreate(t.Context(), wire.RoomCreateRequest{Title: name, Agents: []string{name}})
	require.NoError(t, err)
	return agent, room.ID, log
}

// TestLifecycle_configChangeReachesTheLiveAgent: a change of a live
// agent's environment, without a restart of jamd, reaches it at the next
// turn: that turn runs on a new process (lease generation 2) started with
// the new value, and jam agent list shows no outstanding change after.
func TestLifecycle_configChangeReachesTheLiveAgent(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, room, log := markingAgent(t, c, "marker")
	askAndWait(t, owner, agent, room, "first")
	s := sessionIn(t, c, room)
	require.Equal(t, int64(1), lastTurn(t, c, s.ID).LeaseGeneration)
	require.Equal(t, []string{"one"}, marks(t, log))

	st, err := c.AgentConfig(ctx, "marker", wire.AgentConfigRequest{Set: map[string]string{"env.MARK": "two"}})
	require.NoError(t, err)
	require.Equal(t, st.DesiredGeneration, st.EffectiveGeneration+1, "outstanding until a process runs it")

	t.Cleanup(func() {
		if t.Failed() {
			ts, _ := c.Turns(t.Context(), s.ID)
			t.Logf("turns: %+v", ts)
			for _, l := range strings.Split(r.log.String(), "\n") {
				if strings.Contains(l, "runtime") || strings.Contains(l, "agent") {
					t.Log(l)
				}
			}
		}
	})
	askAndWait(t, owner, agent, room, "second")
	require.Equal(t, int64(2), lastTurn(t, c, s.ID).LeaseGeneration, "the next turn runs on a new process")
	require.Equal(t, []string{"one", "two"}, marks(t, log), "the new process has the new environment")
	a := agentNamed(t, c, agent.Handle)
	require.NotNil(t, a.Runtime)
	require.Equal(t, a.Runtime.DesiredGeneration, a.Runtime.EffectiveGeneration, "nothing outstanding: %+v", a.Runtime)
	require.Empty(t, a.Runtime.PendingChange)
	require.Equal(t, []string{"MARK"}, a.Runtime.Effective.EnvNames)
	code, out := jamCLI(t, cfg.DataDir, "agent", "list")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "outstanding")
}

// TestLifecycle_restartAndRetry: jam agent restart stops the idle agent's
// process, and the next turn runs on a new one (lease generation + 1); a
// restart while a turn runs lets the turn finish first; a
// cancelled turn's message is run again by jam turn retry, as a new turn
// of the same message, and answered; a retry of a turn that succeeded is a
// conflict (exit 5).
func TestLifecycle_restartAndRetry(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, room, log := markingAgent(t, c, "restarter")
	askAndWait(t, owner, agent, room, "first")
	s := sessionIn(t, c, room)

	code, out := jamCLI(t, cfg.DataDir, "agent", "restart", "restarter", "--json")
	require.Equal(t, 0, code, out)
	// Stopped now, or (when the answered turn has not quite ended) as it
	// ends: either way one process, before the next turn.
	require.Regexp(t, `^\{"agent":"local/restarter","stopped":(1,"pending":0|0,"pending":1)\}$`, strings.Join(strings.Fields(out), ""))
	askAndWait(t, owner, agent, room, "second")
	require.Equal(t, int64(2), lastTurn(t, c, s.ID).LeaseGeneration)
	require.Equal(t, []string{"one", "one"}, marks(t, log), "a second process started")

	// A restart while a turn runs lets it finish on its process; the
	// next turn runs on a new one.
	busy, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" [slow] busy", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		tr := lastTurn(t, c, s.ID)
		return tr.Message == busy.ID && tr.State == "running"
	}, 60*time.Second, 20*time.Millisecond, "the slow turn runs")
	res, err := c.AgentRestart(ctx, "restarter")
	require.NoError(t, err)
	require.Equal(t, wire.AgentRestarted{Agent: "local/restarter", Pending: 1}, res)
	waitDelivery(t, c, room, busy.ID, agent.AgentID, protocol.DeliveryProcessed)
	require.Eventually(t, func() bool { return lastTurn(t, c, s.ID).State == "succeeded" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, int64(2), lastTurn(t, c, s.ID).LeaseGeneration, "the running turn finished on its process")
	askAndWait(t, owner, agent, room, "after")
	require.Equal(t, int64(3), lastTurn(t, c, s.ID).LeaseGeneration, "the next turn runs on a new process")

	sent, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" [slow] third", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	var turn wire.Turn
	require.Eventually(t, func() bool {
		turn = lastTurn(t, c, s.ID)
		return turn.Message == sent.ID && turn.State == "running"
	}, 60*time.Second, 20*time.Millisecond, "the slow turn runs")
	require.NoError(t, c.CancelTurn(ctx, turn.ID))
	waitDelivery(t, c, room, sent.ID, agent.AgentID, protocol.DeliveryFailed)

	code, out = jamCLI(t, cfg.DataDir, "turn", "retry", turn.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "retrying "+turn.ID+" as turn ")
	waitDelivery(t, c, room, sent.ID, agent.AgentID, protocol.DeliveryProcessed)
	var retried wire.Turn
	require.Eventually(t, func() bool {
		retried = lastTurn(t, c, s.ID)
		return retried.State == "succeeded"
	}, 30*time.Second, 20*time.Millisecond, "the retry ends")
	require.NotEqual(t, turn.ID, retried.ID)
	require.Equal(t, sent.ID, retried.Message, "the retry answers the same message")

	code, out = jamCLI(t, cfg.DataDir, "turn", "retry", retried.ID)
	require.Equal(t, 5, code, out)
	require.Contains(t, out, "only a failed, cancelled or interrupted turn is retried")
	code, out = jamCLI(t, cfg.DataDir, "turn", "retry", turn.ID)
	require.Equal(t, 5, code, out)
}

// TestLifecycle_sessionArchiveCloseAndRoomLeave: an archived session's
// worktree is archived and the next message resumes the same session; a
// closed session stays closed and the room's next message is answered in
// a new session; jam room leave takes the agent out of the room on Band and
// closes its session there.
func TestLifecycle_sessionArchiveCloseAndRoomLeave(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	c := r.client
	repo := gitRepo(t, "lifecycle")
	agent, err := c.AgentAdd(t.Context(), wire.AgentAddRequest{Name: "keeper", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Repo: repo}})
	require.NoError(t, err)
	created, err := c.RoomCreate(t.Context(), wire.RoomCreateRequest{Title: "keeper", Agents: []string{"keeper"}})
	require.NoError(t, err)
	room := created.ID
	askAndWait(t, owner, agent, room, "first")
	s := sessionIn(t, c, room)
	require.DirExists(t, s.Worktree)

	var code int
	var out string
	require.Eventually(t, func() bool { // once its turn has let the session go
		code, out = jamCLI(t, cfg.DataDir, "session", "archive", s.ID)
		return code != 5
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, 0, code, out)
	archived := sessionIn(t, c, room)
	require.Equal(t, "archived", archived.Lifecycle)
	require.Equal(t, "archived", archived.WorktreeState)
	require.NoDirExists(t, s.Worktree)

	askAndWait(t, owner, agent, room, "second")
	resumed := sessionIn(t, c, room)
	require.Equal(t, s.ID, resumed.ID, "the same session resumed")
	require.Equal(t, "open", resumed.Lifecycle)
	require.Equal(t, "active", resumed.WorktreeState)
	require.DirExists(t, s.Worktree)

	code, out = jamCLI(t, cfg.DataDir, "session", "close", s.ID)
	require.Equal(t, 2, code, "no terminal and no --yes: %s", out)
	code, out = jamCLI(t, cfg.DataDir, "session", "close", s.ID, "--yes")
	require.Equal(t, 0, code, out)
	askAndWait(t, owner, agent, room, "third")
	fresh := sessionIn(t, c, room)
	ss, err := c.Sessions(t.Context())
	require.NoError(t, err)
	for _, x := range ss {
		if x.ID == s.ID {
			require.Equal(t, "closed", x.Lifecycle, "the closed session is kept, closed")
			require.Equal(t, "archived", x.WorktreeState)
		}
		if x.Lifecycle != "closed" {
			fresh = x
		}
	}
	require.NotEqual(t, s.ID, fresh.ID, "a new session answers the room")
	code, out = jamCLI(t, cfg.DataDir, "session", "send", s.ID, "hello")
	require.Equal(t, 5, code, "a closed session takes no message: %s", out)

	code, out = jamCLI(t, cfg.DataDir, "room", "leave", room, "keeper", "--yes")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "session "+fresh.ID+" closed")
	require.False(t, inRoom(t, owner, room, agent.AgentID), "the agent left the room on Band")
	ss, err = c.Sessions(t.Context())
	require.NoError(t, err)
	for _, x := range ss {
		require.Equal(t, "closed", x.Lifecycle, "session %s", x.ID)
	}
	a := agentNamed(t, c, agent.Handle)
	require.Empty(t, a.Bindings, "the room's binding is retired")
}

// TestLifecycle_agentRemoveAndAccountRemove: an account an agent uses is
// not removed (conflict); jam agent remove stops the owned agent's
// process, closes its sessions, drops its binding and queue, and keeps it
// on Band; with --delete-on-band it is deleted there too, and the same
// name can be added again; then the account goes.
func TestLifecycle_agentRemoveAndAccountRemove(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	owner := ownerClient(t, st)
	ctx := t.Context()
	c := r.client
	key, err := os.ReadFile(st.Band.OwnerKeyFile)
	require.NoError(t, err)
	_, err = c.AccountAdd(ctx, wire.AccountAddRequest{Profile: "work", BandURL: st.Band.URL, Key: strings.TrimSpace(string(key))})
	require.NoError(t, err)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "leaver", Account: "work", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	created, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "leaver", Account: "work", Agents: []string{"leaver"}})
	require.NoError(t, err)
	askAndWait(t, owner, agent, created.ID, "first")
	s := sessionIn(t, c, created.ID)

	code, out := jamCLI(t, cfg.DataDir, "account", "remove", "work", "--yes")
	require.Equal(t, 5, code, out)
	require.Contains(t, out, "work/leaver")
	code, out = jamCLI(t, cfg.DataDir, "account", "remove", "local", "--yes")
	require.Equal(t, 5, code, "the account jamd was started with: %s", out)

	code, out = jamCLI(t, cfg.DataDir, "agent", "remove", "leaver")
	require.Equal(t, 2, code, "no terminal and no --yes: %s", out)
	code, out = jamCLI(t, cfg.DataDir, "agent", "remove", "leaver", "--yes", "--json")
	require.Equal(t, 0, code, out)
	require.JSONEq(t, `{"agent":"work/leaver","sessions":1,"bindings":1,"dropped":0,"deleted_on_band":false}`, out)
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	for _, a := range agents {
		require.NotEqual(t, "work/leaver", a.Peer, "jam agent list does not show it")
	}
	code, out = jamCLI(t, cfg.DataDir, "agent", "list")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "leaver")
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	require.Equal(t, s.ID, ss[0].ID)
	require.Equal(t, "closed", ss[0].Lifecycle, "kept as history, closed")
	turns, err := c.Turns(ctx, s.ID)
	require.NoError(t, err)
	require.NotEmpty(t, turns)
	require.True(t, inRoom(t, owner, created.ID, agent.AgentID), "Band's agent is kept, in its room")

	// Deleted on Band too, its name is free there, and it is added again.
	_, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "gone", Account: "work"})
	require.NoError(t, err)
	code, out = jamCLI(t, cfg.DataDir, "agent", "remove", "gone", "--yes", "--delete-on-band")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "deleted on Band")
	mine, err := owner.MyAgents(ctx)
	require.NoError(t, err)
	for _, a := range mine {
		require.NotEqual(t, "gone", a.Name, "deleted on Band")
	}
	again, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "gone", Account: "work", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err, "the same name is added again")
	require.Equal(t, "work/gone", again.Peer)
	code, out = jamCLI(t, cfg.DataDir, "agent", "remove", "gone", "--yes")
	require.Equal(t, 0, code, out)

	code, out = jamCLI(t, cfg.DataDir, "account", "remove", "work", "--yes")
	require.Equal(t, 0, code, out)
	accts, err := c.Accounts(ctx)
	require.NoError(t, err)
	for _, a := range accts {
		require.NotEqual(t, "work", a.Profile)
	}
}
