package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/demoagent"
)

// TestApprovals_askAllowDenyTimeout: under permission ask each turn of the
// demo agent waits on an approval, announced in the room with the
// approval's id and the person's handle and listed by the API. Allowed,
// the tool runs (the note is written); denied, it is refused; unanswered,
// the timeout denies it. Each answer is in the turn's output and resolves
// the room's question; a second answer is a conflict, an unknown id not
// found.
func TestApprovals_askAllowDenyTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ApprovalTimeout = 3 * time.Second
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "ask"}})
	require.NoError(t, err)
	require.Equal(t, "ask", agent.Runtime.Desired.Permission)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "asks", Agents: []string{"demo"}})
	require.NoError(t, err)
	me, err := owner.Profile(ctx)
	require.NoError(t, err)

	notes := func() int { return demoNotes(t, c) }
	turnEnds := func(n int) wire.Turn { return nthTurnEnds(t, c, n) }
	roomEvents := func() []protocol.Message {
		page, err := owner.ChatMessages(ctx, room.ID, "", 100)
		require.NoError(t, err)
		var out []protocol.Message
		for _, m := range page.Messages {
			if m.MessageType == "attention" {
				out = append(out, m)
			}
		}
		return out
	}

	for i, want := range []string{"allow", "deny", "timeout"} {
		_, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" note "+want, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		a := waitApproval(t, c)
		require.Equal(t, "@"+agent.Handle, a.Agent)
		require.Contains(t, a.Title, demoagent.NotesFile)
		require.Equal(t, room.ID, a.Room)
		require.Eventually(t, func() bool {
			for _, m := range roomEvents() {
				if strings.Contains(m.Content, a.ID) && strings.Contains(m.Content, "@"+me.Handle) {
					return true
				}
			}
			return false
		}, 10*time.Second, 10*time.Millisecond, "the room is asked, naming the person and the approval")
		switch want {
		case "allow", "deny":
			ans, err := c.Approve(ctx, a.ID, wire.ApproveRequest{Decision: want})
			require.NoError(t, err)
			require.Equal(t, want, ans.Decision)
			_, err = c.Approve(ctx, a.ID, wire.ApproveRequest{Decision: "allow"})
			var ae *apiclient.Error
			require.ErrorAs(t, err, &ae)
			require.Equal(t, wire.CodeConflict, ae.Code, "answered once")
		}
		tr := turnEnds(i + 1)
		ups := approvalUpdates(t, c, tr.ID)
		require.Len(t, ups, 1, "the answer is the turn's evidence")
		require.Equal(t, want, ups[0].Status)
		require.Contains(t, ups[0].Title, demoagent.NotesFile)
		if want == "allow" {
			require.Equal(t, 1, notes(), "allowed: the note is written")
		} else {
			require.Equal(t, 1, notes(), "%s: the write was refused", want)
		}
		empty, err := c.Approvals(ctx)
		require.NoError(t, err)
		require.Empty(t, empty)
	}
	require.Eventually(t, func() bool {
		resolved := 0
		for _, m := range roomEvents() {
			if strings.HasPrefix(m.Content, "allow:") || strings.HasPrefix(m.Content, "deny:") || strings.HasPrefix(m.Content, "timeout:") {
				resolved++
			}
		}
		return resolved == 3
	}, 10*time.Second, 10*time.Millisecond, "each answer resolves the room's question")

	_, err = c.Approve(ctx, "appr_0000000000000000000000000a", wire.ApproveRequest{Decision: "allow"})
	var ae *apiclient.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, wire.CodeNotFound, ae.Code)
	_, err = c.Approve(ctx, "appr_0000000000000000000000000a", wire.ApproveRequest{Decision: "maybe"})
	require.ErrorAs(t, err, &ae)
	require.Equal(t, wire.CodeInvalidArgument, ae.Code)
}
