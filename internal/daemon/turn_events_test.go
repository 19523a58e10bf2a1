package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// turnData is the data of turn.<state> and turn.update events.
type turnData struct {
	Turn    string            `json:"turn"`
	Session string            `json:"session"`
	State   string            `json:"state"`
	From    string            `json:"from"`
	Reason  string            `json:"reason"`
	Batch   int               `json:"batch"`
	Updates []wire.TurnUpdate `json:"updates"`
}

// TestTurnEvents_streamASlowTurn follows /v1/events while the demo agent
// thinks aloud for a few seconds: the turn's transitions come as
// turn.<state> events naming the session, room, peer and message, and its
// output as turn.update batches (far fewer than the chunks the agent
// sent), between turn.running and turn.succeeded. The daemon keeps the
// output, covering exactly the batches published.
func TestTurnEvents_streamASlowTurn(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	ctx := t.Context()
	c := o.r.client
	stream, err := c.Events(ctx, wire.EventsRequest{After: wire.EventsLive})
	require.NoError(t, err)
	defer stream.Close()

	sent, err := o.owner.SendChatMessage(ctx, o.room.ID, "@"+o.agent.Handle+" [slow] think it over", []protocol.Mention{{ID: o.agent.AgentID}})
	require.NoError(t, err)

	var kinds []string
	var updates []turnData
	var running, succeeded turnData
	for {
		ev, err := stream.Next()
		require.NoError(t, err)
		if !strings.HasPrefix(ev.Kind, "turn.") {
			continue
		}
		require.Equal(t, "local/demo", ev.Peer)
		require.Equal(t, o.room.ID, ev.Room)
		require.Equal(t, sent.ID, ev.MessageID)
		var d turnData
		require.NoError(t, json.Unmarshal(ev.Data, &d), "%s", ev.Data)
		require.NotEmpty(t, d.Turn)
		require.NotEmpty(t, d.Session)
		if n := len(kinds); n == 0 || kinds[n-1] != ev.Kind || ev.Kind != "turn.update" {
			kinds = append(kinds, ev.Kind)
		}
		switch ev.Kind {
		case "turn.update":
			updates = append(updates, d)
		case "turn.running":
			running = d
		case "turn.succeeded":
			succeeded = d
		}
		if strings.HasSuffix(ev.Kind, ".succeeded") || strings.HasSuffix(ev.Kind, ".failed") {
			break
		}
	}
	require.Equal(t, []string{"turn.queued", "turn.preparing", "turn.running", "turn.update", "turn.succeeded"}, kinds)
	require.Equal(t, "preparing", running.From)
	require.Equal(t, "end_turn", succeeded.Reason)
	require.Equal(t, running.Turn, succeeded.Turn)

	var thought, text strings.Builder
	chunks := 0
	tools := 0
	for i, u := range updates {
		require.Equal(t, i+1, u.Batch, "batches in order, none lost")
		require.Equal(t, succeeded.Turn, u.Turn)
		for _, x := range u.Updates {
			switch x.Kind {
			case "thought":
				thought.WriteString(x.Text)
				chunks += strings.Count(x.Text, "thinking… ")
			case "text":
				text.WriteString(x.Text)
			case "tool_call", "tool_call_update", "tool_call_end":
				tools++
			}
		}
	}
	require.Contains(t, text.String(), "You said: ")
	require.Contains(t, text.String(), "think it over")
	require.GreaterOrEqual(t, chunks, 20, "the agent thought aloud: %q", thought.String())
	require.Less(t, len(updates), chunks/2, "chunks are coalesced: %d events for %d thought chunks", len(updates), chunks)
	require.GreaterOrEqual(t, tools, 2, "the note's tool call and its completion")

	out, err := c.TurnOutput(ctx, succeeded.Turn)
	require.NoError(t, err)
	require.True(t, out.Kept)
	require.Equal(t, len(updates), out.Batches)
	var kept strings.Builder
	for _, u := range out.Updates {
		if u.Kind == "text" {
			kept.WriteString(u.Text)
		}
	}
	require.Equal(t, text.String(), kept.String())

	// The session shows no current turn once it is over; the turn shows
	// when it ran.
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	require.Equal(t, running.Session, ss[0].ID)
	require.Empty(t, ss[0].CurrentTurn)
	require.Equal(t, "active", ss[0].WorktreeState)
	turns, err := c.Turns(ctx, ss[0].ID)
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.False(t, turns[0].Started.IsZero())
	require.False(t, turns[0].Ended.Before(turns[0].Started))
	require.GreaterOrEqual(t, turns[0].Ended.Sub(turns[0].Started), 2*time.Second, "the slow turn took its time")

	_, err = c.TurnOutput(ctx, "turn_nope")
	require.Error(t, err)
}

// TestWorktrees_archiveRemoveThroughTheAPI: an owned agent with a
// repository works in a git worktree; the control API lists it with its
// uncommitted note, refuses to remove it without force, archives it
// (the note committed on the kept branch), restores it, and removes it.
func TestWorktrees_archiveRemoveThroughTheAPI(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Repo: repo}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "git", Agents: []string{"demo"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" note this", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	var wt wire.Worktree
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 || ss[0].CurrentTurn != "" {
			return false
		}
		turns, err := c.Turns(ctx, ss[0].ID)
		require.NoError(t, err)
		if len(turns) != 1 || turns[0].State != "succeeded" {
			return false
		}
		wts, err := c.Worktrees(ctx)
		require.NoError(t, err)
		require.Len(t, wts, 1)
		wt = wts[0]
		return true
	}, 60*time.Second, 20*time.Millisecond, "the turn ran")
	require.Equal(t, "active", wt.State)
	require.Equal(t, "local/demo", wt.Agent)
	require.Equal(t, room.ID, wt.Room)
	require.Equal(t, repo, wt.Repo)
	require.Equal(t, 1, wt.Changes, "the agent's uncommitted note")
	require.FileExists(t, filepath.Join(wt.Path, "NOTES.md"))

	_, err = c.WorktreeRemove(ctx, wt.Session, wire.WorktreeRemoveRequest{})
	var apiErr *apiclient.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, wire.CodeConflict, apiErr.Code)
	require.Contains(t, apiErr.Message, "uncommitted")
	_, err = c.WorktreeArchive(ctx, "sess_nope")
	require.ErrorAs(t, err, &apiErr)
	require.Contains(t, []wire.Code{wire.CodeNotFound, wire.CodeInvalidArgument}, apiErr.Code)

	archived, err := c.WorktreeArchive(ctx, wt.Session)
	require.NoError(t, err)
	require.Equal(t, "archived", archived.State)
	require.NoDirExists(t, wt.Path)
	note, err := exec.Command("git", "-C", repo, "show", wt.Branch+":NOTES.md").CombinedOutput()
	require.NoError(t, err, "%s", note)
	require.Contains(t, string(note), "note this")

	restored, err := c.WorktreeRestore(ctx, wt.Session, wire.WorktreeRestoreRequest{})
	require.NoError(t, err)
	require.Equal(t, "active", restored.State)
	require.Equal(t, 0, restored.Changes, "the note is committed now")
	b, err := os.ReadFile(filepath.Join(wt.Path, "NOTES.md"))
	require.NoError(t, err)
	require.Contains(t, string(b), "note this")

	removed, err := c.WorktreeRemove(ctx, wt.Session, wire.WorktreeRemoveRequest{})
	require.NoError(t, err)
	require.Equal(t, "removed", removed.State)
	require.NoDirExists(t, wt.Path)
	_, err = exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch).CombinedOutput()
	require.Error(t, err, "the branch is deleted")

	// Each action is an operation a person can read back, the refused
	// remove too (with its code); the unknown session is none.
	ops, err := c.Operations(ctx, wire.OperationQuery{Subject: wt.Session})
	require.NoError(t, err)
	var seen []string
	for _, op := range ops {
		seen = append(seen, op.Kind+":"+op.State+":"+op.ErrorCode)
	}
	require.Equal(t, []string{"worktree_remove:succeeded:", "worktree_restore:succeeded:", "worktree_archive:succeeded:", "worktree_remove:failed:conflict"}, seen,
		"newest first")
	op, err := c.Operation(ctx, ops[2].ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"worktree":"`+wt.ID+`","state":"archived","branch":"`+wt.Branch+`"}`, string(op.Result))
	require.Len(t, op.Evidence, 2)
	require.Equal(t, "start", op.Evidence[0].Event)
	require.Equal(t, "end", op.Evidence[1].Event)
	failed, err := c.Operation(ctx, ops[3].ID)
	require.NoError(t, err)
	require.Contains(t, failed.Error, "uncommitted")
	require.Equal(t, "error", failed.Evidence[1].Event)
}
