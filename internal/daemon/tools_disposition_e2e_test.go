package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// claudeTools is the real Claude Code (harness claude) under bwrap with
// the network on, on the fake model: it calls a tool of jam's MCP server
// as mcp__jam__TOOL, without asking.
var claudeTools = toolAgent{
	runtime: func(t *testing.T, model *fakemodel.Server) *wire.AgentRuntime {
		cl := realagent.NewClaude(t, model)
		return &wire.AgentRuntime{Harness: "claude", Command: []string{cl.Binary}, Env: cl.SandboxEnv(), Permission: "allow",
			Sandbox: "bwrap", Network: "on", HandshakeTimeout: claudeStep.String()}
	},
	call: func(tool string, args map[string]any) fakemodel.Reply {
		b, _ := json.Marshal(args)
		return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: claudeTool(tool), Arguments: b}}
	},
	step: claudeStep,
}

// TestToolsE2E_sendAndAgentMessageWithoutDisposition: two owned Claude
// Code agents. The person asks alice; alice, in one turn, room_sends bob
// a new message (to: bob) and room_replies to the person, then ends in a
// final text: the send is posted first, mentioning bob and not the
// person, then the reply, mentioning the person; the final text is not
// posted. bob is woken by the send and answers only in final text: a
// message from another agent needs room_reply or room_no_reply, so
// nothing of bob's is posted, his turn fails with reason no_disposition
// and the message is marked failed for him on Band.
func TestToolsE2E_sendAndAgentMessageWithoutDisposition(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	r := newJamdRig(t, nil)
	r.start()
	ctx := t.Context()
	a := claudeTools
	alice, bob := addToolAgent(t, r, a, "alice"), addToolAgent(t, r, a, "bob")
	alice.model.Push(
		a.call("room_send", map[string]any{"text": "please review the parser", "to": []string{bob.agent.Handle}}),
		a.call("room_reply", map[string]any{"text": "I asked bob to review it"}),
		fakemodel.Reply{Text: []string{"FINAL-alice"}})
	bob.model.Push(fakemodel.Reply{Text: []string{"FINAL-bob: looks fine"}})

	room, err := r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "review", Agents: []string{"alice", "bob"}})
	require.NoError(t, err)
	asked, err := r.owner.SendChatMessage(ctx, room.ID, "@"+alice.agent.Handle+" get the parser reviewed", []protocol.Mention{{ID: alice.agent.AgentID}})
	require.NoError(t, err)
	start := time.Now()

	// bob's turn ends failed.
	var bobTurns []wire.Turn
	require.Eventually(t, func() bool {
		ss, err := r.client.Sessions(ctx)
		require.NoError(t, err)
		for _, s := range ss {
			if s.Room == room.ID && (s.Agent == bob.agent.Peer || s.Agent == bob.agent.Name) {
				bobTurns, err = r.client.Turns(ctx, s.ID)
				require.NoError(t, err)
				return len(bobTurns) > 0 && bobTurns[0].State == "failed"
			}
		}
		return false
	}, 4*a.step, 100*time.Millisecond, "bob's turn ends")
	t.Logf("alice's turn and bob's took %s", time.Since(start))
	require.Equal(t, "no_disposition", bobTurns[0].Reason, bobTurns[0].Detail)
	require.Contains(t, bobTurns[0].Detail, "needs room_reply or room_no_reply; the final text was not posted")
	aliceTurns := sessionTurns(t, r, room.ID, alice.agent)
	require.Len(t, aliceTurns, 1)
	require.Equal(t, "succeeded", aliceTurns[0].State, "%s: %s", aliceTurns[0].Reason, aliceTurns[0].Detail)

	// The room: the person's message, alice's send, alice's reply;
	// nothing of bob's, no final text.
	msgs := roomMessages(t, r, room.ID)
	var said []string
	var sent, reply protocol.Message
	for _, m := range msgs {
		require.NotContains(t, m.Content, "FINAL-", "no final text was posted: %q", m.Content)
		require.NotEqual(t, bob.agent.AgentID, m.SenderID, "nothing of bob's is posted: %q", m.Content)
		if m.SenderID != alice.agent.AgentID {
			continue
		}
		said = append(said, m.MessageType+": "+m.Content)
		switch {
		case strings.Contains(m.Content, "please review the parser"):
			sent = m
		case strings.Contains(m.Content, "I asked bob to review it"):
			reply = m
		}
	}
	require.Len(t, said, 2, "%q", said)
	require.Contains(t, said[0], "please review the parser", "the send is committed first, as staged")
	require.Contains(t, said[1], "I asked bob to review it")
	person := strings.ToLower(msgs[0].SenderID)
	require.Equal(t, asked.ID, msgs[0].ID)
	require.Equal(t, []string{strings.ToLower(bob.agent.AgentID)}, mentionIDs(sent), "the send is a new message to bob alone")
	require.Contains(t, mentionIDs(reply), person, "the reply mentions the person it answers")
	require.NotContains(t, mentionIDs(reply), strings.ToLower(bob.agent.AgentID))

	// The person's message is settled by alice's reply; the send, for
	// bob, is marked failed.
	require.Eventually(t, func() bool {
		for _, m := range roomMessages(t, r, room.ID) {
			if m.ID == sent.ID {
				return m.Metadata.DeliveryStatus[bob.agent.AgentID].Status == protocol.DeliveryFailed
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the send is marked failed for bob")
	for _, m := range roomMessages(t, r, room.ID) {
		if m.ID == asked.ID {
			require.Equal(t, protocol.DeliveryProcessed, m.Metadata.DeliveryStatus[alice.agent.AgentID].Status)
		}
	}

	// alice's model: the send's result, then the reply's, each staged.
	reqs := modelTurns(alice.model)
	require.Len(t, reqs, 3, "alice's turn: two tool calls and the final text")
	for _, c := range reqs[1:] {
		results := c.ToolResults()
		require.NotEmpty(t, results)
		require.Contains(t, string(results[len(results)-1].Content), "staged")
	}
	// bob's model was prompted with an agent's message and jam's tools.
	breqs := modelTurns(bob.model)
	require.NotEmpty(t, breqs)
	require.Contains(t, conversation(breqs[0]), "(an agent) wrote in the room")
	require.Contains(t, conversation(breqs[0]), "please review the parser")
	t.Logf("bob's turns: %d, his model's requests: %d", len(sessionTurns(t, r, room.ID, bob.agent)), len(breqs))
}
