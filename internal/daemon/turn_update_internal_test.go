package daemon

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/runtime"
)

// TestRuntimeUpdate maps what an ACP agent streams to a turn's output.
func TestRuntimeUpdate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		update string
		want   runtime.Update
		ok     bool
	}{
		{"message chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`, runtime.Update{Kind: runtime.UpdateText, Text: "hi"}, true},
		{"thought chunk", `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}`, runtime.Update{Kind: runtime.UpdateThought, Text: "hm"}, true},
		{"image chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"image"}}`, runtime.Update{}, false},
		{"empty chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}`, runtime.Update{}, false},
		{"chunk without content", `{"sessionUpdate":"agent_message_chunk"}`, runtime.Update{}, false},
		{"replayed user message", `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"do it"}}`, runtime.Update{}, false},
		{"tool call", `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Write NOTES.md","kind":"edit","status":"pending"}`,
			runtime.Update{Kind: runtime.UpdateToolCall, ToolCallID: "c1", Title: "Write NOTES.md", ToolKind: "edit", Status: "pending"}, true},
		{"tool call update", `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}`,
			runtime.Update{Kind: runtime.UpdateToolCallUpdate, ToolCallID: "c1", Status: "completed"}, true},
		{"plan", `{"sessionUpdate":"plan","entries":[{"content":"read","priority":"high","status":"completed"}]}`,
			runtime.Update{Kind: runtime.UpdatePlan, Plan: []runtime.PlanEntry{{Content: "read", Priority: "high", Status: "completed"}}}, true},
		{"empty plan", `{"sessionUpdate":"plan"}`, runtime.Update{Kind: runtime.UpdatePlan, Plan: []runtime.PlanEntry{}}, true},
		{"unknown kind", `{"sessionUpdate":"available_commands_update"}`, runtime.Update{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var su acp.SessionUpdate
			require.NoError(t, json.Unmarshal([]byte(tc.update), &su))
			got, ok := runtimeUpdate(acp.Update{SessionID: "s", SessionUpdate: su})
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestACPHost_routesUpdatesToTheRunningPrompt: updates reach the prompt
// of their session only, and none after it ends.
func TestACPHost_routesUpdatesToTheRunningPrompt(t *testing.T) {
	t.Parallel()
	h := &acpHost{prompts: map[string]func(runtime.Update){}}
	var got []string
	h.prompts["s1"] = func(u runtime.Update) { got = append(got, u.Text) }
	chunk := func(session, text string) acp.Update {
		return acp.Update{SessionID: session, SessionUpdate: acp.SessionUpdate{SessionUpdate: acp.UpdateAgentMessageChunk, Content: &acp.ContentBlock{Type: "text", Text: text}}}
	}
	h.route(chunk("s1", "a"))
	h.route(chunk("s2", "other session"))
	h.route(chunk("s1", "b"))
	delete(h.prompts, "s1")
	h.route(chunk("s1", "after the prompt"))
	require.Equal(t, []string{"a", "b"}, got)
}

// FuzzRuntimeUpdate: whatever an agent streams maps to a known kind or is
// dropped, and never panics.
func FuzzRuntimeUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"t","kind":"edit","status":"pending"}`,
		`{"sessionUpdate":"plan","entries":[{"content":"read"}]}`,
		`{"sessionUpdate":"agent_thought_chunk","content":null}`,
	} {
		f.Add([]byte(seed))
	}
	kinds := map[string]bool{runtime.UpdateText: true, runtime.UpdateThought: true, runtime.UpdateToolCall: true, runtime.UpdateToolCallUpdate: true, runtime.UpdatePlan: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var su acp.SessionUpdate
		if json.Unmarshal(raw, &su) != nil {
			return
		}
		u, ok := runtimeUpdate(acp.Update{SessionID: "s", SessionUpdate: su})
		if !ok {
			require.Equal(t, runtime.Update{}, u)
			return
		}
		require.True(t, kinds[u.Kind], "kind %q", u.Kind)
		if u.Kind == runtime.UpdateText || u.Kind == runtime.UpdateThought {
			require.NotEmpty(t, u.Text)
		}
	})
}
