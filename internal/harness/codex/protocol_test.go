package codex_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/codex"
)

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	usage := `"tokenUsage":{"total":{"totalTokens":180,"inputTokens":110,"cachedInputTokens":30,"cacheWriteInputTokens":0,"outputTokens":70,"reasoningOutputTokens":20},` +
		`"last":{"totalTokens":18,"inputTokens":11,"cachedInputTokens":3,"cacheWriteInputTokens":0,"outputTokens":7,"reasoningOutputTokens":2},"modelContextWindow":null}`
	tests := []struct {
		name, method, raw string
		want              codex.Event
		wantErr           string
	}{
		{name: "agent delta", method: "item/agentMessage/delta", raw: `{"threadId":"t","turnId":"u","itemId":"msg_1","delta":"FAKE-REP"}`,
			want: codex.Event{Kind: codex.EventText, ThreadID: "t", TurnID: "u", Text: "FAKE-REP"}},
		{name: "reasoning delta", method: "item/reasoning/textDelta", raw: `{"threadId":"t","turnId":"u","itemId":"r","delta":"hm","contentIndex":0}`,
			want: codex.Event{Kind: codex.EventThinking, ThreadID: "t", TurnID: "u", Text: "hm"}},
		{name: "reasoning summary delta", method: "item/reasoning/summaryTextDelta", raw: `{"threadId":"t","turnId":"u","itemId":"r","delta":"so","summaryIndex":0}`,
			want: codex.Event{Kind: codex.EventThinking, ThreadID: "t", TurnID: "u", Text: "so"}},
		{name: "command started", method: "item/started", raw: `{"threadId":"t","turnId":"u","startedAtMs":1,"item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'ls'","cwd":"/w","status":"inProgress","commandActions":[],"processId":null}}`,
			want: codex.Event{Kind: codex.EventItemStarted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "commandExecution", ID: "call_1",
				Title: "/bin/bash -lc 'ls'", ToolKind: "execute", Status: "inProgress"}}},
		{name: "command declined", method: "item/completed", raw: `{"threadId":"t","turnId":"u","item":{"type":"commandExecution","id":"call_1","command":"rm x","status":"declined","exitCode":null}}`,
			want: codex.Event{Kind: codex.EventItemCompleted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "commandExecution", ID: "call_1",
				Title: "rm x", ToolKind: "execute", Status: "declined"}}},
		{name: "file change", method: "item/completed", raw: `{"threadId":"t","turnId":"u","item":{"type":"fileChange","id":"p1","changes":[{"path":"/w/a.go","kind":{"type":"update"},"diff":""},{"path":"/w/b.go"}],"status":"completed"}}`,
			want: codex.Event{Kind: codex.EventItemCompleted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "fileChange", ID: "p1",
				Title: "Edit /w/a.go, /w/b.go", ToolKind: "edit", Status: "completed"}}},
		{name: "mcp tool call", method: "item/started", raw: `{"threadId":"t","turnId":"u","item":{"type":"mcpToolCall","id":"m1","server":"docs","tool":"search","status":"inProgress","arguments":{}}}`,
			want: codex.Event{Kind: codex.EventItemStarted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "mcpToolCall", ID: "m1",
				Title: "docs.search", ToolKind: "other", Status: "inProgress"}}},
		{name: "web search", method: "item/started", raw: `{"threadId":"t","turnId":"u","item":{"type":"webSearch","id":"w1","query":"go generics","action":null}}`,
			want: codex.Event{Kind: codex.EventItemStarted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "webSearch", ID: "w1",
				Title: "Search the web: go generics", ToolKind: "fetch"}}},
		{name: "agent message with unknown fields", method: "item/completed", raw: `{"threadId":"t","turnId":"u","contentTokenCount":3,"item":{"type":"agentMessage","id":"msg_1","text":"FAKE-REPLY: hi","phase":null,"new":{"x":1}}}`,
			want: codex.Event{Kind: codex.EventItemCompleted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "agentMessage", ID: "msg_1", Text: "FAKE-REPLY: hi"}}},
		{name: "unknown item", method: "item/started", raw: `{"threadId":"t","turnId":"u","item":{"type":"contextCompaction","id":"c"}}`,
			want: codex.Event{Kind: codex.EventItemStarted, ThreadID: "t", TurnID: "u", Item: codex.Item{Type: "contextCompaction", ID: "c"}}},
		{name: "plan", method: "turn/plan/updated", raw: `{"threadId":"t","turnId":"u","explanation":null,"plan":[{"step":"read","status":"completed"},{"step":"write","status":"inProgress"},{"step":"test","status":"pending"}]}`,
			want: codex.Event{Kind: codex.EventPlan, ThreadID: "t", TurnID: "u", Plan: []harness.PlanEntry{{Content: "read", Status: "completed"},
				{Content: "write", Status: "in_progress"}, {Content: "test", Status: "pending"}}}},
		{name: "token usage", method: "thread/tokenUsage/updated", raw: `{"threadId":"t","turnId":"u",` + usage + `}`,
			want: codex.Event{Kind: codex.EventUsage, ThreadID: "t", TurnID: "u",
				Last:  harness.Usage{InputTokens: 8, CachedTokens: 3, OutputTokens: 7, ReasoningTokens: 2},
				Total: harness.Usage{InputTokens: 80, CachedTokens: 30, OutputTokens: 70, ReasoningTokens: 20}}},
		{name: "turn completed", method: "turn/completed", raw: `{"threadId":"t","turn":{"id":"u","status":"completed","error":null,"items":[],"durationMs":213}}`,
			want: codex.Event{Kind: codex.EventTurnCompleted, ThreadID: "t", TurnID: "u", Status: "completed"}},
		{name: "turn failed", method: "turn/completed", raw: `{"threadId":"t","turn":{"id":"u","status":"failed","error":{"message":"unexpected status 500","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":500}},"additionalDetails":"upstream"}}}`,
			want: codex.Event{Kind: codex.EventTurnCompleted, ThreadID: "t", TurnID: "u", Status: "failed", ErrorMessage: "unexpected status 500: upstream"}},
		{name: "turn started", method: "turn/started", raw: `{"threadId":"t","turn":{"id":"u","status":"inProgress","items":[]}}`,
			want: codex.Event{Kind: codex.EventTurnStarted, ThreadID: "t", TurnID: "u", Status: "inProgress"}},
		{name: "error, retried", method: "error", raw: `{"threadId":"t","turnId":"u","willRetry":true,"error":{"message":"Reconnecting... 1/5","codexErrorInfo":"Other"}}`,
			want: codex.Event{Kind: codex.EventError, ThreadID: "t", TurnID: "u", ErrorMessage: "Reconnecting... 1/5", WillRetry: true}},
		{name: "error, given up", method: "error", raw: `{"threadId":"t","turnId":"u","willRetry":false,"error":{"message":"stream disconnected"}}`,
			want: codex.Event{Kind: codex.EventError, ThreadID: "t", TurnID: "u", ErrorMessage: "stream disconnected"}},
		{name: "ignored method, params not read", method: "remoteControl/status/changed", raw: `not json at all`, want: codex.Event{}},
		{name: "ignored warning", method: "warning", raw: `{"message":"Model metadata for fake-model not found"}`, want: codex.Event{}},
		{name: "no thread", method: "item/agentMessage/delta", raw: `{"turnId":"u","delta":"x"}`, wantErr: "without a thread id"},
		{name: "turn completed without its turn", method: "turn/completed", raw: `{"threadId":"t"}`, wantErr: "without a turn"},
		{name: "item without type", method: "item/completed", raw: `{"threadId":"t","item":{"id":"x"}}`, wantErr: "without an item"},
		{name: "usage without breakdown", method: "thread/tokenUsage/updated", raw: `{"threadId":"t","tokenUsage":{"total":{}}}`, wantErr: "without its breakdown"},
		{name: "usage missing", method: "thread/tokenUsage/updated", raw: `{"threadId":"t"}`, wantErr: "without tokenUsage"},
		{name: "negative usage", method: "thread/tokenUsage/updated", raw: `{"threadId":"t","tokenUsage":{"total":{},"last":{"inputTokens":-1}}}`, wantErr: "negative"},
		{name: "more cached than input", method: "thread/tokenUsage/updated", raw: `{"threadId":"t","tokenUsage":{"total":{},"last":{"inputTokens":3,"cachedInputTokens":4}}}`, wantErr: "more cached"},
		{name: "error without error", method: "error", raw: `{"threadId":"t","willRetry":false}`, wantErr: "without its error"},
		{name: "delta of the wrong type", method: "item/agentMessage/delta", raw: `{"threadId":"t","delta":7}`, wantErr: "cannot unmarshal"},
		{name: "not an object", method: "turn/completed", raw: `[1]`, wantErr: "cannot unmarshal"},
		{name: "truncated", method: "item/started", raw: `{"threadId":`, wantErr: "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := codex.DecodeEvent(tt.method, json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestToolStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"completed": harness.ToolCompleted, "failed": harness.ToolFailed, "declined": harness.ToolFailed,
		"inProgress": harness.ToolInProgress, "": harness.ToolInProgress, "new": harness.ToolInProgress} {
		require.Equal(t, want, codex.ToolStatus(in), in)
	}
}

func TestDecodeApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, raw string
		want              codex.Approval
		wantErr           bool
	}{
		{name: "command", method: codex.RequestCommandApproval,
			raw:  `{"kind":"command","threadId":"t","turnId":"u","itemId":"call_1","startedAtMs":1,"command":"/bin/bash -lc 'echo approved > approved.txt'","cwd":"/w","commandActions":[{"type":"unknown"}],"proposedExecpolicyAmendment":null}`,
			want: codex.Approval{ThreadID: "t", TurnID: "u", ItemID: "call_1", Title: "/bin/bash -lc 'echo approved > approved.txt'", ToolKind: "execute"}},
		{name: "network access, a reason only", method: codex.RequestCommandApproval, raw: `{"threadId":"t","turnId":"u","itemId":"c","reason":"needs network","command":null}`,
			want: codex.Approval{ThreadID: "t", TurnID: "u", ItemID: "c", Title: "needs network", ToolKind: "execute"}},
		{name: "file change", method: codex.RequestFileApproval, raw: `{"threadId":"t","turnId":"u","itemId":"p1","startedAtMs":1,"reason":"write outside the workspace","grantRoot":"/x"}`,
			want: codex.Approval{ThreadID: "t", TurnID: "u", ItemID: "p1", Title: "write outside the workspace", ToolKind: "edit"}},
		// As Codex 0.171 asks before an MCP tool call.
		{name: "MCP tool call", method: codex.RequestMCPElicitation,
			raw:  `{"threadId":"t","turnId":"u","serverName":"jam","environmentId":null,"mode":"form","_meta":{"codex_approval_kind":"mcp_tool_call","persist":["session","always"],"tool_name":"echo","tool_description":"Echoes its text back.","tool_params":{"text":"hi"}},"message":"Allow the jam MCP server to run tool \"echo\"?","requestedSchema":{"type":"object","properties":{}}}`,
			want: codex.Approval{ThreadID: "t", TurnID: "u", Title: "jam.echo", ToolKind: "other", Elicitation: true, MCPToolCall: true}},
		{name: "a server's own elicitation", method: codex.RequestMCPElicitation,
			raw:  `{"threadId":"t","turnId":"u","serverName":"jam","mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
			want: codex.Approval{ThreadID: "t", TurnID: "u", Title: "jam.", ToolKind: "other", Elicitation: true}},
		{name: "no thread", method: codex.RequestCommandApproval, raw: `{"itemId":"c","command":"ls"}`, wantErr: true},
		{name: "wrong type", method: codex.RequestFileApproval, raw: `{"threadId":5}`, wantErr: true},
		{name: "not json", method: codex.RequestFileApproval, raw: `{`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := codex.DecodeApproval(tt.method, json.RawMessage(tt.raw))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

var fuzzMethods = []string{"item/agentMessage/delta", "item/reasoning/textDelta", "item/started", "item/completed", "turn/plan/updated",
	"thread/tokenUsage/updated", "turn/completed", "turn/started", "error", "warning"}

// FuzzDecodeEvent: any params of any method decode or fail cleanly; a
// decoded event names its thread, a turn event its turn, usage is never
// negative.
func FuzzDecodeEvent(f *testing.F) {
	for i, s := range []string{
		`{"threadId":"t","turnId":"u","delta":"x"}`,
		`{"threadId":"t","item":{"type":"commandExecution","id":"c","command":"ls","status":"declined"}}`,
		`{"threadId":"t","item":{"type":"fileChange","id":"p","changes":[{"path":"a"}]}}`,
		`{"threadId":"t","plan":[{"step":"a","status":"inProgress"}]}`,
		`{"threadId":"t","tokenUsage":{"total":{"inputTokens":1},"last":{"inputTokens":1}}}`,
		`{"threadId":"t","turn":{"id":"u","status":"failed","error":{"message":"m"}}}`,
		`{"threadId":"t","willRetry":false,"error":{"message":"m"}}`,
		`null`, `{`, ``, `[]`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, m uint8, b []byte) {
		method := fuzzMethods[int(m)%len(fuzzMethods)]
		ev, err := codex.DecodeEvent(method, b)
		if err != nil || ev.Kind == codex.EventIgnored {
			return
		}
		if ev.ThreadID == "" {
			t.Fatalf("%s: decoded without a thread id: %+v", method, ev)
		}
		if (ev.Kind == codex.EventTurnCompleted || ev.Kind == codex.EventTurnStarted) && ev.TurnID == "" {
			t.Fatalf("%s: a turn event without its turn: %+v", method, ev)
		}
		for _, u := range []harness.Usage{ev.Last, ev.Total} {
			if u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedTokens < 0 || u.ReasoningTokens < 0 {
				t.Fatalf("negative usage %+v", u)
			}
		}
	})
}

// FuzzDecodeApproval: any params decode or fail cleanly; a decoded
// request names its thread and has a kind.
func FuzzDecodeApproval(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","turnId":"u","itemId":"c","command":"ls"}`,
		`{"threadId":"t","reason":"r"}`, `{"threadId":null}`, `{`, ``,
	} {
		f.Add(false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, file bool, b []byte) {
		method := codex.RequestCommandApproval
		if file {
			method = codex.RequestFileApproval
		}
		a, err := codex.DecodeApproval(method, b)
		if err != nil {
			return
		}
		if a.ThreadID == "" || (a.ToolKind != "execute" && a.ToolKind != "edit") {
			t.Fatalf("decoded %+v", a)
		}
	})
}
