package daemon_test

import (
	"context"
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
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/demoagent"
	"github.com/jamhq/jam/internal/jam"
)

// demoAgentEnv makes the test binary serve the demo agent on its stdio.
const demoAgentEnv = "JAM_TEST_DEMO_AGENT_STATE"

func runDemoAgentIfAsked() {
	state := os.Getenv(demoAgentEnv)
	if state == "" {
		return
	}
	cfg := demoagent.Config{StateDir: state, WordDelay: 20 * time.Millisecond}
	if probe := os.Getenv(sandboxProbeEnv); probe != "" {
		cfg.Probe = sandboxProbe(probe)
	}
	err := demoagent.Run(context.Background(), cfg, os.Stdin, os.Stdout)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// demoAgentCommand runs the demo agent from the test binary. It keeps its
// sessions in its home, which is the agent's own (and writable in its
// sandbox).
func demoAgentCommand(t *testing.T) []string {
	return []string{"/bin/sh", "-c", demoAgentEnv + `="$HOME/demo-agent" exec "$0" -test.run='^$'`, os.Args[0]}
}

// demoAgentCommandIn runs the demo agent with its sessions in dir (the
// command's last argument), which only an unsandboxed agent
// (sandbox=local) can write.
func demoAgentCommandIn(dir string) []string {
	return []string{"/bin/sh", "-c", demoAgentEnv + `="$1" exec "$0" -test.run='^$'`, os.Args[0], dir}
}

// TestOwned_demoAgentAnswersInTwoRooms: a person mentions an owned agent
// in two rooms; each room gets its own session and working directory; the
// agent writes its note there and replies in the right room; the source
// message is settled only through that reply.
func TestOwned_demoAgentAnswersInTwoRooms(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	var rooms []string
	for _, title := range []string{"alpha", "beta"} {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: title, Agents: []string{"demo"}})
		require.NoError(t, err)
		rooms = append(rooms, room.ID)
	}
	posted := map[string]string{}
	for i, room := range rooms {
		text := []string{"fix the parser", "write the docs"}[i]
		sent, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" "+text, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		posted[room] = sent.ID
	}

	// Each room gets the agent's reply restating its own request, and the
	// request is processed on the hub.
	for i, room := range rooms {
		want := []string{"fix the parser", "write the docs"}[i]
		require.Eventually(t, func() bool {
			page, err := owner.ChatMessages(ctx, room, "", 50)
			require.NoError(t, err)
			replied, processed := false, false
			for _, m := range page.Messages {
				if m.SenderID == agent.AgentID && strings.Contains(m.Content, "You said:") {
					require.Contains(t, m.Content, want, "the reply belongs to this room's request")
					replied = true
				}
				if m.ID == posted[room] && m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
					processed = true
				}
			}
			return replied && processed
		}, 60*time.Second, 20*time.Millisecond, "room %d: reply and settlement", i)
	}
	// Band settles first; the local row goes right after.
	require.Eventually(t, func() bool {
		in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "demo"})
		require.NoError(t, err)
		return len(in.Messages) == 0
	}, 10*time.Second, 10*time.Millisecond, "nothing left queued")

	// Stop the daemon and read its store: two sessions, each with its own
	// working directory holding its own note, and one succeeded turn each.
	_, _ = r.stop()
	s := openStore(t, cfg)
	wss, err := s.WorkspaceList(context.Background())
	require.NoError(t, err)
	sessions, err := s.SessionList(context.Background(), wss[0].ID)
	require.NoError(t, err)
	require.Len(t, sessions, 2)
	seen := map[string]bool{}
	for _, ss := range sessions {
		wt, err := s.WorktreeForSession(context.Background(), wss[0].ID, ss.ID)
		require.NoError(t, err)
		require.False(t, seen[wt.Path], "each session has its own directory")
		seen[wt.Path] = true
		notes, err := os.ReadFile(filepath.Join(wt.Path, demoagent.NotesFile))
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(string(notes), "\n- "), "one note per request: %q", notes)
		require.NotEmpty(t, ss.ProviderThread)
		turns, err := s.TurnList(context.Background(), wss[0].ID, ss.ID)
		require.NoError(t, err)
		require.Len(t, turns, 1)
		require.Equal(t, "succeeded", string(turns[0].State))
	}
	tmpl, err := s.TemplateList(context.Background(), wss[0].ID)
	require.NoError(t, err)
	require.Len(t, tmpl, 1)
	require.False(t, tmpl[0].Outstanding(), "the running configuration became effective")
	live, err := s.LeaseLive(context.Background(), wss[0].ID, string(tmpl[0].ID))
	if err == nil {
		t.Fatalf("lease %s still live after a clean stop", live.ID)
	}
}

// TestOwned_killedAgentIsReplacedAndTheMessageAnswered: the agent process
// dies mid-turn; the turn ends interrupted, a new lease with a higher
// generation runs the next turn, which answers the message once.
func TestOwned_killedAgentIsReplacedAndTheMessageAnswered(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	cfg, r, owner, agent, room := o.cfg, o.r, o.owner, o.agent, o.room
	ctx := t.Context()

	// A second reader of the daemon's store, to see the turn and its lease.
	db := openStore(t, cfg)
	wss, err := db.WorkspaceList(ctx)
	require.NoError(t, err)
	ws := wss[0].ID

	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] refactor everything", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	var pid int
	var sessionID jam.SessionID
	require.Eventually(t, func() bool {
		sessions, err := db.SessionList(ctx, ws)
		require.NoError(t, err)
		if len(sessions) != 1 {
			return false
		}
		sessionID = sessions[0].ID
		turns, err := db.TurnList(ctx, ws, sessionID)
		require.NoError(t, err)
		if len(turns) == 0 || turns[0].State != jam.TurnRunning {
			return false
		}
		l, err := db.LeaseLive(ctx, ws, string(sessions[0].TemplateID))
		if err != nil {
			return false
		}
		pid = l.Pid
		return true
	}, 30*time.Second, 10*time.Millisecond, "the turn runs")
	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL), "kill the agent's process group mid-turn")
	defer func() {
		if t.Failed() {
			t.Log(r.log.String())
		}
	}()

	// The next turn, on a new process, answers the message exactly once.
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, room.ID, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.ID == sent.ID && m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "settled by the next turn")
	page, err := owner.ChatMessages(ctx, room.ID, "", 50)
	require.NoError(t, err)
	replies := 0
	for _, m := range page.Messages {
		if m.SenderID == agent.AgentID {
			replies++
		}
	}
	require.Equal(t, 1, replies, "one reply")

	// Each turn was one attempt, shown by the single-turn read: the
	// killed process's ended with its turn, the next ran on the new lease.
	var shown []wire.Turn
	require.Eventually(t, func() bool {
		ts, err := r.client.Turns(ctx, string(sessionID))
		require.NoError(t, err)
		if len(ts) != 2 || ts[1].State != string(jam.TurnSucceeded) {
			return false
		}
		shown = nil
		for _, tr := range ts {
			one, err := r.client.Turn(ctx, tr.ID)
			require.NoError(t, err)
			shown = append(shown, one)
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "both turns ended")
	for i, want := range []struct {
		gen     int64
		outcome jam.TurnState
	}{{1, jam.TurnInterrupted}, {2, jam.TurnSucceeded}} {
		require.Equal(t, string(sessionID), shown[i].Session)
		require.Len(t, shown[i].Executions, 1, "turn %d: one attempt", i)
		e := shown[i].Executions[0]
		require.Equal(t, []any{shown[i].Lease, want.gen, "ended", string(want.outcome), shown[i].Reason},
			[]any{e.Lease, e.LeaseGeneration, e.State, e.Outcome, e.Reason}, "turn %d", i)
		require.False(t, e.Ended.Before(e.Started), "turn %d", i)
	}
	require.Equal(t, pid, shown[0].Executions[0].Pid, "the killed process ran the first attempt")
	require.NotEqual(t, pid, shown[1].Executions[0].Pid)

	_, _ = r.stop()
	turns, err := db.TurnList(ctx, ws, sessionID)
	require.NoError(t, err)
	require.Len(t, turns, 2)
	require.Equal(t, jam.TurnInterrupted, turns[0].State)
	require.Equal(t, jam.ReasonProcessExited, turns[0].Reason)
	require.Equal(t, jam.TurnSucceeded, turns[1].State)
	require.Greater(t, turns[1].LeaseGeneration, turns[0].LeaseGeneration, "the next turn ran on a replaced lease")
	require.Equal(t, turns[0].SourceMessageID, turns[1].SourceMessageID)
	for i, tr := range turns {
		execs, err := db.ExecutionList(ctx, ws, tr.ID)
		require.NoError(t, err)
		require.Len(t, execs, 1, "turn %d: one execution in the store", i)
		require.Equal(t, int64(i+1), execs[0].LeaseGeneration)
		require.Equal(t, tr.State, execs[0].Outcome, "ended with its turn")
	}
}

// TestOwned_restartMidTurnResumes: jamd stops while a turn runs; the turn
// ends interrupted, and after the restart the next turn answers the
// message once, in the same agent session (resumed) and worktree.
func TestOwned_restartMidTurnResumes(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	cfg, r, c, owner, agent, room := o.cfg, o.r, o.r.client, o.owner, o.agent, o.room
	ctx := t.Context()
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] migrate the schema", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	var session wire.Session
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		session = ss[0]
		turns, err := c.Turns(ctx, session.ID)
		require.NoError(t, err)
		return len(turns) == 1 && turns[0].State == "running"
	}, 30*time.Second, 10*time.Millisecond, "the turn runs")
	// Read again: the provider thread is recorded before the turn runs.
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	session = ss[0]
	require.NotEmpty(t, session.ProviderThread)
	err, _ = r.stop()
	require.NoError(t, err)

	r2 := start(t, cfg)
	r2.waitReady(t)
	c2 := r2.client
	var turns []wire.Turn
	require.Eventually(t, func() bool {
		turns, err = c2.Turns(ctx, session.ID)
		require.NoError(t, err)
		return len(turns) == 2 && turns[1].State == "succeeded"
	}, 60*time.Second, 20*time.Millisecond, "the next turn answers after the restart")
	require.Equal(t, "interrupted", turns[0].State)
	require.Equal(t, "daemon_restarted", turns[0].Reason)
	require.Equal(t, sent.ID, turns[1].Message)
	ss, err = c2.Sessions(ctx)
	require.NoError(t, err)
	require.Equal(t, session.ProviderThread, ss[0].ProviderThread, "the agent's session was resumed, not replaced")
	require.Equal(t, session.Worktree, ss[0].Worktree)

	page, err := ownerClient(t, r2.waitReady(t)).ChatMessages(ctx, room.ID, "", 50)
	require.NoError(t, err)
	replies := 0
	for _, m := range page.Messages {
		if m.SenderID == agent.AgentID {
			replies++
		}
	}
	require.Equal(t, 1, replies, "answered once")
}

// TestOwned_cancelledTurnSettlesNothing: a person cancels a running turn;
// it ends cancelled and the message stays queued, unsettled.
func TestOwned_cancelledTurnSettlesNothing(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	c, owner, agent, room := o.r.client, o.owner, o.agent, o.room
	ctx := t.Context()
	_, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] rewrite it in Rust", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	var session wire.Session
	var turn wire.Turn
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		session = ss[0]
		turns, err := c.Turns(ctx, session.ID)
		require.NoError(t, err)
		if len(turns) == 1 {
			turn = turns[0]
		}
		return turn.State == "running"
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, c.CancelTurn(ctx, turn.ID))
	require.Eventually(t, func() bool {
		turns, err := c.Turns(ctx, session.ID)
		require.NoError(t, err)
		return turns[0].State == "cancelled"
	}, 30*time.Second, 10*time.Millisecond)
	require.ErrorContains(t, c.CancelTurn(ctx, turn.ID), "is cancelled")
	in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "demo"})
	require.NoError(t, err)
	require.Len(t, in.Messages, 1, "the message is not settled")
}

// owned is a running daemon with the demo agent, owned, in one room.
type owned struct {
	cfg   config.Config
	r     *running
	owner *band.Client
	agent wire.Agent
	room  wire.Room
}

func startOwned(t *testing.T) owned {
	t.Helper()
	o := owned{cfg: testConfig(t)}
	o.r = start(t, o.cfg)
	o.owner = ownerClient(t, o.r.waitReady(t))
	var err error
	o.agent, err = o.r.client.AgentAdd(t.Context(), wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	o.room, err = o.r.client.RoomCreate(t.Context(), wire.RoomCreateRequest{Title: "r", Agents: []string{"demo"}})
	require.NoError(t, err)
	return o
}
