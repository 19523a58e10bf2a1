package acp_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness/acp"
)

func TestDecodeSessionUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		want      acp.SessionUpdate
		wantErr   bool
	}{
		{name: "message chunk", raw: `{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"Hello "}}`,
			want: acp.SessionUpdate{SessionUpdate: acp.UpdateAgentMessageChunk, Content: &acp.ContentBlock{Type: "text", Text: "Hello "}}},
		// OpenCode's tool_call_update: content is a list of tool call
		// contents; the status must still come through.
		{name: "tool call update with a content list", raw: `{"sessionUpdate":"tool_call_update","toolCallId":"call_3","status":"completed","title":"echo hi","content":[{"type":"content","content":{"type":"text","text":"(no output)"}}],"rawOutput":{"output":"(no output)"}}`,
			want: acp.SessionUpdate{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "call_3", Status: "completed", Title: "echo hi"}},
		{name: "tool call", raw: `{"sessionUpdate":"tool_call","toolCallId":"c","title":"bash","kind":"execute","status":"pending","locations":[{"path":"/w"}],"rawInput":{}}`,
			want: acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "c", Title: "bash", Kind: "execute", Status: "pending"}},
		{name: "null content", raw: `{"sessionUpdate":"agent_message_chunk","content":null}`,
			want: acp.SessionUpdate{SessionUpdate: acp.UpdateAgentMessageChunk}},
		{name: "plan", raw: `{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}`,
			want: acp.SessionUpdate{SessionUpdate: acp.UpdatePlan, Entries: []acp.PlanEntry{{Content: "a", Priority: "high", Status: "pending"}}}},
		{name: "usage update", raw: `{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.25,"currency":"USD"}}`,
			want: acp.SessionUpdate{SessionUpdate: "usage_update", Used: 10, Size: 100, Cost: &acp.Cost{Amount: 0.25, Currency: "USD"}}},
		{name: "unknown kind and fields", raw: `{"sessionUpdate":"session_info_update","title":7.5e0,"extra":{"a":1}}`, wantErr: true},
		{name: "unknown kind", raw: `{"sessionUpdate":"session_info_update","extra":{"a":1}}`,
			want: acp.SessionUpdate{SessionUpdate: "session_info_update"}},
		{name: "content block of the wrong shape", raw: `{"sessionUpdate":"agent_message_chunk","content":{"type":7}}`, wantErr: true},
		{name: "not an object", raw: `[1]`, wantErr: true},
		{name: "truncated", raw: `{"sessionUpdate":`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := acp.DecodeSessionUpdate(json.RawMessage(tt.raw))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzDecodeSessionUpdate(f *testing.F) {
	for _, s := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","content":[{"type":"content"}]}`,
		`{"sessionUpdate":"plan","entries":[]}`,
		`{"content":"text"}`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := acp.DecodeSessionUpdate(raw)
		if err != nil {
			return
		}
		// What decodes re-encodes, and decodes again to the same thing.
		b, err := json.Marshal(u)
		require.NoError(t, err)
		again, err := acp.DecodeSessionUpdate(b)
		require.NoError(t, err)
		b2, err := json.Marshal(again)
		require.NoError(t, err)
		require.JSONEq(t, string(b), string(b2))
	})
}
