package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/executor/bwrap"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// codexRuntime is an owned Codex agent's runtime: the real codex
// app-server in jam's sandbox with the network cut, configured by -c
// options (its CODEX_HOME is its own home's), reaching the fake model
// through the bridge; the allow policy answers its approvals. Where
// bubblewrap cannot run (and JAM_REQUIRE_BWRAP is not 1) it runs
// unsandboxed.
func codexRuntime(t *testing.T, cx *realagent.Codex) *wire.AgentRuntime {
	t.Helper()
	rt := &wire.AgentRuntime{Harness: "codex", Command: cx.SandboxCommand(), Env: cx.SandboxEnv(), Permission: "allow",
		Sandbox: "bwrap", Network: "off"}
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Logf("running codex unsandboxed: %v", err)
		rt = &wire.AgentRuntime{Harness: "codex", Command: cx.Command(), Env: cx.Env, Permission: "allow", Sandbox: "local"}
	}
	return rt
}

func codexExec(cmd string) fakemodel.Reply {
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "exec_command", Arguments: args}}
}

// roomState is the agent's last reply in a room and whether a message is
// settled.
func roomState(t *testing.T, owner *band.Client, room, msg, agent string) (reply string, processed bool) {
	t.Helper()
	page, err := owner.ChatMessages(t.Context(), room, "", 50)
	require.NoError(t, err)
	for _, m := range page.Messages {
		if m.SenderID == agent {
			reply = m.Content
		}
		if m.ID == msg && m.Metadata.DeliveryStatus[agent].Status == protocol.DeliveryProcessed {
			processed = true
		}
	}
	return reply, processed
}

// TestCodex_ownedAnswersInTwoRooms: an owned agent with harness=codex in
// two rooms. Each room's turn runs an exec_command (approved by the allow
// policy) that edits a file in that room's own worktree; the reply
// appears in its room, and the message settles only once the answer is
// out, not while the model holds it.
func TestCodex_ownedAnswersInTwoRooms(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	defer func() {
		if t.Failed() {
			t.Log(r.log.String())
		}
	}()
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "codex", Runtime: codexRuntime(t, cx)})
	require.NoError(t, err)
	require.Equal(t, "codex", agent.Runtime.Desired.Harness)

	// Each room's two model responses report their own usage; jam usage
	// --by room shows exactly their sums (input less its cached part,
	// which jam counts apart).
	want := map[string]wire.UsageSum{}
	for i, word := range []string{"alpha", "beta"} {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: word, Agents: []string{"codex"}})
		require.NoError(t, err)
		gate := make(chan struct{})
		call := codexExec("echo " + word + " > edited.txt")
		call.Usage = &fakemodel.Usage{Input: 1200 + i, Cached: 200, Output: 30 + i, Reasoning: 5}
		answer := fakemodel.Reply{Text: []string{"Edited ", "for " + word + "."}, Hold: gate,
			Usage: &fakemodel.Usage{Input: 1500 + 10*i, Cached: 1000, Output: 9, Reasoning: 1 + i}}
		want[room.ID] = wire.UsageSum{Turns: 1, InputTokens: int64(1200 + i - 200 + 1500 + 10*i - 1000), CachedTokens: 1200,
			OutputTokens: int64(30 + i + 9), ReasoningTokens: int64(5 + 1 + i), Unpriced: 1}
		model.Push(call, answer)
		before := len(model.Requests())
		sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" edit the file for "+word, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)

		// The command ran, and the model holds its answer: no reply, not
		// settled.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		reqs, err := model.WaitRequests(wctx, before+2, fakemodel.Turn)
		cancel()
		require.NoError(t, err, "codex asks the model twice: the call, then with its output")
		require.NotEmpty(t, reqs[len(reqs)-1].ToolResults(), "the second request carries the command's output")
		reply, processed := roomState(t, owner, room.ID, sent.ID, agent.AgentID)
		require.Empty(t, reply, "no reply before the model answers")
		require.False(t, processed, "not settled before the model answers")
		close(gate)
		require.Eventually(t, func() bool {
			reply, processed = roomState(t, owner, room.ID, sent.ID, agent.AgentID)
			return processed
		}, 3*time.Minute, 50*time.Millisecond, "%s: settled once answered", word)
		require.True(t, strings.HasSuffix(reply, "Edited for "+word+"."), "%s: the room's own answer: %q", word, reply)
	}

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 2)
	seen := map[string]bool{}
	for _, s := range ss {
		require.NotEmpty(t, s.ProviderThread, "codex's thread id is recorded")
		require.False(t, seen[s.Worktree], "each room has its own worktree")
		seen[s.Worktree] = true
		b, err := os.ReadFile(filepath.Join(s.Worktree, "edited.txt"))
		require.NoError(t, err, "the command edited the room's worktree")
		require.Contains(t, []string{"alpha\n", "beta\n"}, string(b))
		require.Eventually(t, func() bool {
			ts, err := c.Turns(ctx, s.ID)
			require.NoError(t, err)
			return len(ts) == 1 && ts[0].State == "succeeded"
		}, 30*time.Second, 20*time.Millisecond, "one turn, succeeded")
	}

	code, out := jamCLI(t, cfg.DataDir, "usage", "--by", "room", "--json")
	require.Equal(t, 0, code, out)
	var rep wire.UsageReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	got := map[string]wire.UsageSum{}
	for _, row := range rep.Rows {
		got[row.Key] = row.UsageSum
	}
	require.Equal(t, want, got, "jam usage --by room: exactly what the fake model reported")
}

// TestCodex_ownedRestartMidTurnResumes: jamd stops while a Codex turn
// streams; the restarted jamd resumes the thread (thread/resume, the same
// provider thread), the message is answered once, and the model is sent
// the earlier turn's prompt with the new one.
func TestCodex_ownedRestartMidTurnResumes(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "codex", Runtime: codexRuntime(t, cx)})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "r", Agents: []string{"codex"}})
	require.NoError(t, err)
	// The first answer never comes while this jamd runs.
	model.Push(fakemodel.Reply{Text: []string{"never"}, Hold: make(chan struct{})})
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" migrate the schema", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err = model.WaitRequests(wctx, 1, fakemodel.Turn)
	require.NoError(t, err, "the turn reached the model")
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	session := ss[0]
	require.NotEmpty(t, session.ProviderThread)
	err, _ = r.stop()
	require.NoError(t, err)

	before := len(model.Requests())
	r2 := start(t, cfg)
	defer func() {
		if t.Failed() {
			t.Log(r.log.String(), r2.log.String())
		}
	}()
	r2.waitReady(t)
	c2 := r2.client
	var turns []wire.Turn
	require.Eventually(t, func() bool {
		turns, err = c2.Turns(ctx, session.ID)
		require.NoError(t, err)
		return len(turns) == 2 && turns[1].State == "succeeded"
	}, 3*time.Minute, 50*time.Millisecond, "the next turn answers after the restart")
	require.Equal(t, "interrupted", turns[0].State)
	require.Equal(t, sent.ID, turns[1].Message)
	ss, err = c2.Sessions(ctx)
	require.NoError(t, err)
	require.Equal(t, session.ProviderThread, ss[0].ProviderThread, "codex's thread was resumed, not replaced")
	after := model.Requests()[before:]
	require.NotEmpty(t, after)
	var hist strings.Builder
	for _, m := range after[len(after)-1].Messages {
		hist.WriteString(string(m.Content) + "\n")
	}
	require.Equal(t, 2, strings.Count(hist.String(), "migrate the schema"), "the resumed thread sent the earlier prompt and the new one: %s", hist.String())

	page, err := ownerClient(t, r2.waitReady(t)).ChatMessages(ctx, room.ID, "", 50)
	require.NoError(t, err)
	replies := 0
	for _, m := range page.Messages {
		if m.SenderID == agent.AgentID {
			replies++
			require.Contains(t, m.Content, "FAKE-REPLY")
		}
	}
	require.Equal(t, 1, replies, "answered once")
}

// codexRunningTurn waits for the only session's turn to run and the model
// to be asked, and returns the session and the turn as jamd shows it.
func codexRunningTurn(t *testing.T, c *apiclient.Client, model *fakemodel.Server) (wire.Session, wire.Turn) {
	t.Helper()
	ctx := t.Context()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err := model.WaitRequests(wctx, 1, fakemodel.Turn)
	require.NoError(t, err, "the turn reached the model")
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	ts, err := c.Turns(ctx, ss[0].ID)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.Equal(t, "running", ts[0].State)
	one, err := c.Turn(ctx, ts[0].ID)
	require.NoError(t, err)
	return ss[0], one
}

// TestCodex_ownedKilledMidTurn: Codex's process group is killed while the
// model holds its answer; the turn ends interrupted, the next turn runs on
// a new process (lease generation 2) and answers the message once.
func TestCodex_ownedKilledMidTurn(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	r := start(t, testConfig(t))
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	defer func() {
		if t.Failed() {
			t.Log(r.log.String())
		}
	}()
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "codex", Runtime: codexRuntime(t, cx)})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "r", Agents: []string{"codex"}})
	require.NoError(t, err)
	model.Push(fakemodel.Reply{Text: []string{"never"}, Hold: make(chan struct{})})
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" refactor everything", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	session, turn := codexRunningTurn(t, c, model)
	require.Len(t, turn.Executions, 1)
	pid := turn.Executions[0].Pid
	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL), "kill codex's process group mid-turn")

	var ts []wire.Turn
	require.Eventually(t, func() bool {
		ts, err = c.Turns(ctx, session.ID)
		require.NoError(t, err)
		return len(ts) == 2 && ts[1].State == "succeeded"
	}, 3*time.Minute, 50*time.Millisecond, "the next turn answers")
	require.Equal(t, "interrupted", ts[0].State)
	require.Equal(t, sent.ID, ts[1].Message)
	second, err := c.Turn(ctx, ts[1].ID)
	require.NoError(t, err)
	require.Len(t, second.Executions, 1)
	require.Equal(t, int64(2), second.Executions[0].LeaseGeneration, "a new process ran it")
	require.NotEqual(t, pid, second.Executions[0].Pid)
	require.Eventually(t, func() bool {
		_, processed := roomState(t, owner, room.ID, sent.ID, agent.AgentID)
		return processed
	}, time.Minute, 50*time.Millisecond, "settled")
	page, err := owner.ChatMessages(ctx, room.ID, "", 50)
	require.NoError(t, err)
	replies := 0
	for _, m := range page.Messages {
		if m.SenderID == agent.AgentID {
			replies++
		}
	}
	require.Equal(t, 1, replies, "answered once")
}

// TestCodex_ownedCancelledTurn: a person cancels a running Codex turn
// (turn/interrupt); it ends cancelled, nothing is posted, and the message
// stays queued, unsettled.
func TestCodex_ownedCancelledTurn(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	r := start(t, testConfig(t))
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	defer func() {
		if t.Failed() {
			t.Log(r.log.String())
		}
	}()
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "codex", Runtime: codexRuntime(t, cx)})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "r", Agents: []string{"codex"}})
	require.NoError(t, err)
	slow := make([]string, 200)
	for i := range slow {
		slow[i] = "slow "
	}
	model.Push(fakemodel.Reply{Text: slow, Delay: fakemodel.Duration(300 * time.Millisecond)})
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" rewrite it in Rust", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	session, turn := codexRunningTurn(t, c, model)
	require.NoError(t, c.CancelTurn(ctx, turn.ID))
	require.Eventually(t, func() bool {
		ts, err := c.Turns(ctx, session.ID)
		require.NoError(t, err)
		return ts[0].State == "cancelled"
	}, time.Minute, 20*time.Millisecond, "the turn ends cancelled")
	in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "codex"})
	require.NoError(t, err)
	require.Len(t, in.Messages, 1, "the message is not settled")
	reply, processed := roomState(t, owner, room.ID, sent.ID, agent.AgentID)
	require.Empty(t, reply, "nothing posted")
	require.False(t, processed)
}
