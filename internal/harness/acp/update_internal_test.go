package acp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// TestNeutralUpdate maps what an ACP agent streams to a turn's output.
func TestNeutralUpdate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		update string
		want   harness.Update
		ok     bool
	}{
		{"message chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`, harness.Update{Kind: harness.UpdateText, Text: "hi"}, true},
		{"thought chunk", `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}`, harness.Update{Kind: harness.UpdateThinking, Text: "hm"}, true},
		{"image chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"image"}}`, harness.Update{}, false},
		{"empty chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}`, harness.Update{}, false},
		{"chunk without content", `{"sessionUpdate":"agent_message_chunk"}`, harness.Update{}, false},
		{"replayed user message", `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"do it"}}`, harness.Update{}, false},
		{"tool call", `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Write NOTES.md","kind":"edit","status":"pending"}`,
			harness.Update{Kind: harness.UpdateToolStart, ToolCallID: "c1", Title: "Write NOTES.md", ToolKind: "edit", Status: "pending"}, true},
		{"tool call update", `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}`,
			harness.Update{Kind: harness.UpdateToolEnd, ToolCallID: "c1", Status: "completed"}, true},
		{"plan", `{"sessionUpdate":"plan","entries":[{"content":"read","priority":"high","status":"completed"}]}`,
			harness.Update{Kind: harness.UpdatePlan, Plan: []harness.PlanEntry{{Content: "read", Priority: "high", Status: "completed"}}}, true},
		{"empty plan", `{"sessionUpdate":"plan"}`, harness.Update{Kind: harness.UpdatePlan, Plan: []harness.PlanEntry{}}, true},
		{"tool call in progress", `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","title":"Writing"}`,
			harness.Update{Kind: harness.UpdateToolUpdate, ToolCallID: "c1", Title: "Writing", Status: "in_progress"}, true},
		{"tool call failed", `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`,
			harness.Update{Kind: harness.UpdateToolEnd, ToolCallID: "c1", Status: "failed"}, true},
		{"usage update", `{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}`, harness.Update{}, false},
		{"unknown kind", `{"sessionUpdate":"available_commands_update"}`, harness.Update{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var su SessionUpdate
			require.NoError(t, json.Unmarshal([]byte(tc.update), &su))
			got, ok := neutralUpdate(Update{SessionID: "s", SessionUpdate: su})
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestProcess_routesUpdatesToTheRunningPrompt: updates reach the prompt
// of their session only, and none after it ends.
func TestProcess_routesUpdatesToTheRunningPrompt(t *testing.T) {
	t.Parallel()
	h := &process{prompts: map[string]func(harness.Update){}}
	var got []string
	h.prompts["s1"] = func(u harness.Update) { got = append(got, u.Text) }
	chunk := func(session, text string) Update {
		return Update{SessionID: session, SessionUpdate: SessionUpdate{SessionUpdate: UpdateAgentMessageChunk, Content: &ContentBlock{Type: "text", Text: text}}}
	}
	h.route(chunk("s1", "a"))
	h.route(chunk("s2", "other session"))
	h.route(chunk("s1", "b"))
	delete(h.prompts, "s1")
	h.route(chunk("s1", "after the prompt"))
	require.Equal(t, []string{"a", "b"}, got)
}

// FuzzNeutralUpdate: whatever an agent streams maps to a known kind or is
// dropped, and never panics.
func FuzzNeutralUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"t","kind":"edit","status":"pending"}`,
		`{"sessionUpdate":"plan","entries":[{"content":"read"}]}`,
		`{"sessionUpdate":"agent_thought_chunk","content":null}`,
	} {
		f.Add([]byte(seed))
	}
	kinds := map[harness.UpdateKind]bool{harness.UpdateText: true, harness.UpdateThinking: true, harness.UpdateToolStart: true, harness.UpdateToolUpdate: true, harness.UpdateToolEnd: true, harness.UpdatePlan: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var su SessionUpdate
		if json.Unmarshal(raw, &su) != nil {
			return
		}
		u, ok := neutralUpdate(Update{SessionID: "s", SessionUpdate: su})
		if !ok {
			require.Equal(t, harness.Update{}, u)
			return
		}
		require.True(t, kinds[u.Kind], "kind %q", u.Kind)
		if u.Kind == harness.UpdateText || u.Kind == harness.UpdateThinking {
			require.NotEmpty(t, u.Text)
		}
	})
}
