package daemon_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// claudeTool is Claude Code's name for a tool of jam's MCP server.
func claudeTool(tool string) string { return "mcp__jam__" + tool }

// toolCall is a model reply calling one of jam's tools through Claude
// Code, then, in the request after its result, a final text: the turn's
// two model requests.
func toolCall(tool string, args map[string]any, final string) []fakemodel.Reply {
	b, _ := json.Marshal(args)
	return []fakemodel.Reply{{ToolCall: &fakemodel.ToolCallReply{Name: claudeTool(tool), Arguments: b}}, {Text: []string{final}}}
}

// TestToolsE2E_claudeAgentsTalkUntilTheHopLimit: two owned Claude Code
// agents (the real CLI under bwrap, network on so it reaches jamd's tools
// on loopback), each on its own scripted fake model, in one room with a
// hop limit of 3. The person asks alice; alice answers with room_reply,
// mentioning bob; bob is woken and answers alice with room_reply; alice
// answers bob explicitly, and so on: the fourth agent message in a row is
// acknowledged unanswered, and an error event in the room says so. No
// final text of any turn is posted beside its explicit reply.
func TestToolsE2E_claudeAgentsTalkUntilTheHopLimit(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	r := newJamdRig(t, nil)
	r.jamd.args = append(r.jamd.args, "--hop-limit", "3")
	r.start()
	ctx := t.Context()

	alice, bob := addClaudeAgent(t, r.client, "alice", ""), addClaudeAgent(t, r.client, "bob", "")
	for _, rep := range slices.Concat(
		toolCall("room_reply", map[string]any{"text": "@" + bob.agent.Handle + " what is 2+2?", "mentions": []string{bob.agent.Handle}}, "FINAL-alice-1"),
		toolCall("room_reply", map[string]any{"text": "thanks; and 3+3?"}, "FINAL-alice-2"),
		toolCall("room_reply", map[string]any{"text": "never posted"}, "FINAL-alice-3"),
	) {
		alice.model.Push(rep)
	}
	for _, rep := range slices.Concat(
		toolCall("room_reply", map[string]any{"text": "4"}, "FINAL-bob-1"),
		toolCall("room_reply", map[string]any{"text": "6"}, "FINAL-bob-2"),
	) {
		bob.model.Push(rep)
	}
	room, err := r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "talk", Agents: []string{"alice", "bob"}})
	require.NoError(t, err)
	_, err = r.owner.SendChatMessage(ctx, room.ID, "@"+alice.agent.Handle+" ask bob for a sum", []protocol.Mention{{ID: alice.agent.AgentID}})
	require.NoError(t, err)

	// The chain: alice, bob, alice, bob, then the hop limit.
	var msgs []protocol.Message
	require.Eventually(t, func() bool {
		page, err := r.owner.ChatMessages(ctx, room.ID, "", 100)
		if err != nil {
			return false
		}
		msgs = page.Messages
		for _, m := range msgs {
			if m.MessageType == "error" && strings.Contains(m.Content, "chain of agent messages") {
				return true
			}
		}
		return false
	}, 4*claudeStep, 100*time.Millisecond, "the hop limit is announced in the room")
	slices.SortStableFunc(msgs, func(a, b protocol.Message) int { return strings.Compare(a.InsertedAt, b.InsertedAt) })
	var said []string
	for _, m := range msgs {
		switch m.SenderID {
		case alice.agent.AgentID:
			said = append(said, "alice "+m.MessageType+": "+m.Content)
		case bob.agent.AgentID:
			said = append(said, "bob "+m.MessageType+": "+m.Content)
		}
	}
	require.Len(t, said, 5, "%q", said)
	require.Contains(t, said[0], "alice text: ")
	require.Contains(t, said[0], "what is 2+2?")
	require.Contains(t, said[1], "bob text: ")
	require.Contains(t, said[1], "4")
	require.Contains(t, said[2], "thanks; and 3+3?")
	require.Contains(t, said[3], "bob text: ")
	require.Contains(t, said[3], "6")
	require.Contains(t, said[4], "alice error: jam stopped a chain of agent messages: 4 in a row")
	for _, s := range said {
		require.NotContains(t, s, "never posted")
		require.NotContains(t, s, "FINAL-", "no final text was posted")
	}
	// Each reply mentions whom it answers: bob's first reply wakes alice.
	for _, m := range msgs {
		if m.SenderID == bob.agent.AgentID && m.MessageType == "text" {
			require.Contains(t, mentionIDs(m), strings.ToLower(alice.agent.AgentID), "bob's reply mentions alice")
		}
	}

	// alice ran three turns, the last stopped before the CLI saw it; bob
	// two. The turn answering bob was prompted as an agent's message.
	turnsOf := func(a wire.Agent) []wire.Turn {
		ss, err := r.client.Sessions(ctx)
		require.NoError(t, err)
		for _, s := range ss {
			if s.Room == room.ID && (s.Agent == a.Peer || s.Agent == a.Name) {
				ts, err := r.client.Turns(ctx, s.ID)
				require.NoError(t, err)
				return ts
			}
		}
		t.Fatalf("no session of %s", a.Handle)
		return nil
	}
	var aliceTurns []wire.Turn
	require.Eventually(t, func() bool {
		aliceTurns = turnsOf(alice.agent)
		return len(aliceTurns) == 3 && aliceTurns[2].State == "failed"
	}, claudeStep, 50*time.Millisecond)
	require.Equal(t, "succeeded", aliceTurns[0].State)
	require.Equal(t, "succeeded", aliceTurns[1].State)
	require.Equal(t, "hop_limit", aliceTurns[2].Reason)
	bobTurns := turnsOf(bob.agent)
	require.Len(t, bobTurns, 2)
	for _, tr := range bobTurns {
		require.Equal(t, "succeeded", tr.State, "%s: %s", tr.Reason, tr.Detail)
	}
	var prompts []string
	for _, c := range alice.model.Requests() {
		if fakemodel.Turn(c) {
			prompts = append(prompts, conversation(c))
		}
	}
	require.Len(t, prompts, 4, "alice's model saw two turns of two requests")
	require.Contains(t, prompts[2], "(an agent) wrote in the room")
	require.Contains(t, prompts[2], "room_reply")
}

// claudeAgent is an owned Claude Code agent (the real CLI under bwrap,
// network on so it reaches jamd's tools on loopback) on its own scripted
// fake model.
type claudeAgent struct {
	model *fakemodel.Server
	agent wire.Agent
}

// addClaudeAgent adds one, named name, working in repo ("" for none).
func addClaudeAgent(t *testing.T, c *apiclient.Client, name, repo string) claudeAgent {
	t.Helper()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cl := realagent.NewClaude(t, model)
	agent, err := c.AgentAdd(t.Context(), wire.AgentAddRequest{Name: name, Runtime: &wire.AgentRuntime{
		Harness: "claude", Command: []string{cl.Binary}, Env: cl.SandboxEnv(), Permission: "allow", Network: "on", Repo: repo,
		HandshakeTimeout: claudeStep.String()}})
	require.NoError(t, err)
	return claudeAgent{model: model, agent: agent}
}

// mentionIDs are the ids a message mentions, lower-cased.
func mentionIDs(m protocol.Message) []string {
	var out []string
	for _, x := range m.Metadata.Mentions {
		out = append(out, strings.ToLower(x.ID))
	}
	return out
}
