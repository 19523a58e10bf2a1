package claude

import (
	"bufio"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

func TestDecodeLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line string
		wantErr    string
		check      func(t *testing.T, m message)
	}{
		{name: "init", line: `{"type":"system","subtype":"init","session_id":"s","model":"m","claude_code_version":"2.1.332","tools":["Bash"],"new":{"x":1}}`,
			check: func(t *testing.T, m message) {
				require.Equal(t, message{Type: "system", Subtype: "init", SessionID: "s", Model: "m", ClaudeCodeVersion: "2.1.332"}, m)
			}},
		{name: "text delta", line: `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}},"parent_tool_use_id":null}`,
			check: func(t *testing.T, m message) {
				require.Equal(t, "hi", m.Event.Delta.Text)
				require.Nil(t, m.ParentToolUseID)
			}},
		{name: "sub-agent output", line: `{"type":"stream_event","event":{"type":"message_stop"},"parent_tool_use_id":"toolu_1"}`,
			check: func(t *testing.T, m message) { require.Equal(t, "toolu_1", *m.ParentToolUseID) }},
		{name: "user message with string content", line: `{"type":"user","message":{"role":"user","content":"[Request interrupted by user]"}}`,
			check: func(t *testing.T, m message) { require.Equal(t, "text", m.Message.Content[0].Type) }},
		{name: "tool result", line: `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"no"}]}]}}`,
			check: func(t *testing.T, m message) {
				require.Equal(t, contentBlock{Type: "tool_result", ToolUseID: "t", IsError: true}, m.Message.Content[0])
			}},
		{name: "result", line: `{"type":"result","subtype":"success","is_error":false,"result":"done","stop_reason":"end_turn","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens_details":{"thinking_tokens":1},"iterations":[]},"modelUsage":{"m":{"outputTokens":2}},"api_error_status":null,"permission_denials":[]}`,
			check: func(t *testing.T, m message) {
				require.Equal(t, 0.5, *m.TotalCostUSD)
				require.Equal(t, int64(3), m.Usage.CacheCreationInputTokens)
				require.Nil(t, m.APIErrorStatus)
			}},
		{name: "control request", line: `{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`,
			check: func(t *testing.T, m message) { require.Equal(t, "r", m.RequestID) }},
		{name: "control response", line: `{"type":"control_response","response":{"subtype":"success","request_id":"jam-1","response":{}}}`,
			check: func(t *testing.T, m message) { require.Equal(t, "jam-1", m.Response.RequestID) }},
		{name: "unknown type, any fields", line: `{"type":"rate_limit_event","result":5,"message":[1]}`,
			check: func(t *testing.T, m message) { require.Equal(t, message{Type: "rate_limit_event"}, m) }},
		{name: "not JSON", line: `this is not stream-json`, wantErr: "not a JSON object"},
		{name: "array", line: `[1,2]`, wantErr: "not a JSON object"},
		{name: "trailing garbage", line: `{"type":"user"} x`, wantErr: "not a JSON object"},
		{name: "no type", line: `{"subtype":"init"}`, wantErr: "no type"},
		{name: "empty type", line: `{"type":""}`, wantErr: "no type"},
		{name: "type not a string", line: `{"type":5}`, wantErr: "not a JSON object"},
		{name: "result of the wrong type", line: `{"type":"result","result":5}`, wantErr: "a result message that does not decode"},
		{name: "cost of the wrong type", line: `{"type":"result","total_cost_usd":"1"}`, wantErr: "does not decode"},
		{name: "content of the wrong type", line: `{"type":"assistant","message":{"content":5}}`, wantErr: "does not decode"},
		{name: "control request without id", line: `{"type":"control_request","request":{"subtype":"x"}}`, wantErr: "without request_id"},
		{name: "control response without id", line: `{"type":"control_response","response":{"subtype":"success"}}`, wantErr: "without request_id"},
		{name: "control response without response", line: `{"type":"control_response"}`, wantErr: "without request_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := decodeLine([]byte(tt.line))
			if tt.wantErr != "" {
				var pe *ProtocolError
				require.True(t, errors.As(err, &pe), "a *ProtocolError, got %v", err)
				require.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, m)
		})
	}
}

func TestReadLine(t *testing.T) {
	t.Parallel()
	br := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\nlast"), 16)
	line, err := readLine(br, 50)
	require.NoError(t, err)
	require.Equal(t, "short", string(line))
	_, err = readLine(br, 50)
	require.ErrorContains(t, err, "a line longer than 50 bytes")
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	s := func(v string) *string { return &v }
	tests := []struct {
		name        string
		r           message
		interrupted bool
		base        float64
		known       bool
		want        harness.Outcome
	}{
		{name: "success", r: message{Subtype: "success", StopReason: s("end_turn"), TotalCostUSD: f(0.3),
			Usage: &resultUsage{InputTokens: 10, OutputTokens: 5, CacheCreationInputTokens: 2, CacheReadInputTokens: 7}},
			base: 0.1, known: true,
			want: harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Model: "m",
				Usage: harness.Usage{InputTokens: 12, OutputTokens: 5, CachedTokens: 7, CostUSD: 0.19999999999999998}}},
		{name: "cost unknown at the start", r: message{Subtype: "success", TotalCostUSD: f(0.3)},
			want: harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "success", Model: "m"}},
		{name: "api error", r: message{Subtype: "success", IsError: true, APIErrorStatus: i(400), Result: "API Error: 400 bad"}, known: true,
			want: harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "API Error: 400 bad", Model: "m"}},
		{name: "api error without its status in the text", r: message{Subtype: "success", IsError: true, APIErrorStatus: i(500), Result: "overloaded"},
			want: harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "API error 500: overloaded", Model: "m"}},
		{name: "max turns", r: message{Subtype: "error_max_turns", IsError: true},
			want: harness.Outcome{StopReason: harness.StopMaxTurns, ProviderReason: "error_max_turns", Model: "m"}},
		{name: "interrupted by jam", r: message{Subtype: "error_during_execution", IsError: true}, interrupted: true,
			want: harness.Outcome{StopReason: harness.StopCancelled, ProviderReason: "error_during_execution", Model: "m"}},
		{name: "error during execution, not asked for", r: message{Subtype: "error_during_execution", IsError: true, Errors: []string{"boom"}},
			want: harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "boom", Model: "m"}},
		{name: "unknown error subtype", r: message{Subtype: "error_max_budget_usd", IsError: true},
			want: harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "error_max_budget_usd", Model: "m"}},
		{name: "max tokens", r: message{Subtype: "success", StopReason: s("max_tokens")},
			want: harness.Outcome{StopReason: harness.StopMaxTokens, ProviderReason: "max_tokens", Model: "m"}},
		{name: "refusal", r: message{Subtype: "success", StopReason: s("refusal")},
			want: harness.Outcome{StopReason: harness.StopRefused, ProviderReason: "refusal", Model: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, outcome(tt.r, tt.interrupted, tt.base, tt.known, "m"))
		})
	}
	// The model from modelUsage when init named none.
	require.Equal(t, "only", outcome(message{Subtype: "success", ModelUsage: map[string]modelUsage{"only": {}}}, false, 0, true, "").Model)
}

func TestToolTitleAndKind(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, input, title, kind string }{
		{"Bash", `{"command":"ls -l","description":"List files"}`, "List files", "execute"},
		{"Bash", `{"command":"ls -l"}`, "ls -l", "execute"},
		{"Edit", `{"file_path":"/w/a.go","old_string":"x"}`, "Edit /w/a.go", "edit"},
		{"Write", `{"file_path":"b"}`, "Write b", "edit"},
		{"MultiEdit", `{"file_path":"c"}`, "MultiEdit c", "edit"},
		{"Read", `{"file_path":"d"}`, "Read d", "read"},
		{"Glob", `{"pattern":"*.go"}`, "Glob *.go", "search"},
		{"Grep", `{"pattern":"func"}`, "Grep func", "search"},
		{"WebFetch", `{"url":"http://x"}`, "WebFetch http://x", "fetch"},
		{"Mystery", `not json`, "Mystery", "other"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.title, toolTitle(tt.name, json.RawMessage(tt.input), ""), tt.name)
		require.Equal(t, tt.kind, toolKind(tt.name), tt.name)
	}
	require.Equal(t, "run it", toolTitle("Bash", nil, "run it"), "the request's description when the input says nothing")
}

func TestTodoPlan(t *testing.T) {
	t.Parallel()
	plan, ok := todoPlan(json.RawMessage(`{"todos":[{"content":"a","status":"completed","activeForm":"A"},{"content":"b","status":"pending"}]}`))
	require.True(t, ok)
	require.Equal(t, []harness.PlanEntry{{Content: "a", Status: "completed"}, {Content: "b", Status: "pending"}}, plan)
	for _, in := range []string{`{}`, `{"todos":5}`, `{"todos":[{"status":"x"}]}`, `x`} {
		_, ok := todoPlan(json.RawMessage(in))
		require.False(t, ok, in)
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"system","subtype":"init","session_id":"s","claude_code_version":"1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","message":{"content":"x"}}`,
		`{"type":"result","subtype":"success","total_cost_usd":1,"usage":{"input_tokens":1}}`,
		`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool"}}`,
		`{"type":"control_response","response":{"subtype":"error","request_id":"r","error":"e"}}`,
		`{"type":"x"}`, `{}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodeLine(line)
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *ProtocolError: %v", err)
			}
			return
		}
		if m.Type == "" {
			t.Fatalf("accepted a line without a type")
		}
		if m.Type == typeControlResponse && (m.Response == nil || m.Response.RequestID == "") {
			t.Fatalf("accepted a control response without a request id")
		}
		if m.Type == typeControlRequest && m.RequestID == "" {
			t.Fatalf("accepted a control request without a request id")
		}
	})
}
