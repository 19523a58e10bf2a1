package fakemodel_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/jam"
)

const bashToolAnthropic = `[{"name":"Bash","description":"Runs a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"}]`

// messagesBody is a request as Claude Code sends it: a system prompt,
// reminders before the prompt, and when result is set the model's call
// and a user message with its result and another reminder.
func messagesBody(stream bool, user, tools, result string) string {
	msgs := []string{`{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer…\n</system-reminder>"},{"type":"text","text":` + quote(user) + `,"cache_control":{"type":"ephemeral"}}]}`}
	if result != "" {
		msgs = append(msgs,
			`{"role":"assistant","content":[{"type":"text","text":"I'll run it."},{"type":"tool_use","id":"toolu_x","name":"Bash","input":{"command":"echo hi","description":"Say hi"}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":`+quote(result)+`,"is_error":false},{"type":"text","text":"<system-reminder>todo list is empty</system-reminder>"}]}`)
	}
	b := `{"model":"claude-fake-1","max_tokens":32000,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"system":[{"type":"text","text":"You are Claude Code."}],"messages":[` + strings.Join(msgs, ",") + `]`
	if tools != "" {
		b += `,"tools":` + tools
	}
	return b + "}"
}

// TestMessages_streams checks each event of a stream as documented for
// Claude Code.
func TestMessages_streams(t *testing.T) {
	t.Parallel()
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`
	tests := []struct {
		name  string
		reply fakemodel.Reply
		want  []string
	}{
		{name: "text", reply: fakemodel.Reply{Text: []string{"FAKE-REP", "LY: hi"}}, want: []string{
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"FAKE-REP"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"LY: hi"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`,
		}},
		{name: "tool call", reply: fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "Bash", Arguments: json.RawMessage(`{"command":"echo hi > f","description":"Write f"}`)}}, want: []string{
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"echo hi > f\",\"description\":\"Write f\"}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":1}}`,
			`{"type":"message_stop"}`,
		}},
		{name: "text then tool call", reply: fakemodel.Reply{Text: []string{"Running."}, ToolCall: &fakemodel.ToolCallReply{ID: "toolu_z", Name: "Bash", Arguments: json.RawMessage(`{}`)}}, want: []string{
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Running."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_z","name":"Bash","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tt.reply)
			evs := named(t, send(t.Context(), t, s, "/v1/messages?beta=true", messagesBody(true, "hi", bashToolAnthropic, ""),
				"x-api-key", "sk-ant-dummy", "anthropic-version", "2023-06-01"))
			require.Len(t, evs, len(tt.want), "%v", names(evs))
			c := s.Requests()[0]
			in := 0
			for _, m := range c.Messages {
				in += len(strings.Fields(string(m.Content)))
			}
			tt.want[0] = compact(t, strings.Replace(tt.want[0], "%d", quoteInt(in), 1))
			for i, e := range evs {
				require.JSONEq(t, tt.want[i], string(e.Data), "event %d", i)
			}
			require.Equal(t, fakemodel.APIMessages, c.API)
			require.Equal(t, "/v1/messages", c.Path)
			require.Equal(t, "sk-ant-dummy", c.Header.Get("X-Api-Key"))
			require.Equal(t, "2023-06-01", c.Header.Get("Anthropic-Version"))
			require.Equal(t, "hi", c.LastUser(), "the prompt, not the reminder before it")
			require.True(t, c.OffersTool("Bash"))
		})
	}
}

func quoteInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestMessages_scriptedUsage: a reply's scripted usage is what the
// message reports, its cached input as cache_read_input_tokens and not in
// input_tokens; streamed, message_start carries the input and
// message_delta the output.
func TestMessages_scriptedUsage(t *testing.T) {
	t.Parallel()
	u := &fakemodel.Usage{Input: 120, Cached: 40, Output: 9}
	s := newServer(t, fakemodel.Reply{Text: []string{"hi"}, Usage: u}, fakemodel.Reply{Text: []string{"hi"}, Usage: u})
	res := send(t.Context(), t, s, "/v1/messages", messagesBody(false, "x", bashToolAnthropic, ""))
	require.Equal(t, http.StatusOK, res.StatusCode)
	var whole struct {
		Usage map[string]int
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&whole))
	require.Equal(t, map[string]int{"input_tokens": 80, "cache_read_input_tokens": 40, "cache_creation_input_tokens": 0, "output_tokens": 9}, whole.Usage)

	evs := named(t, send(t.Context(), t, s, "/v1/messages", messagesBody(true, "x", bashToolAnthropic, "")))
	require.Equal(t, "message_start", evs[0].Name)
	require.Equal(t, float64(80), evs[0].field(t, "message", "usage", "input_tokens"))
	require.Equal(t, float64(40), evs[0].field(t, "message", "usage", "cache_read_input_tokens"))
	var delta bool
	for _, e := range evs {
		if e.Name == "message_delta" {
			delta = true
			require.Equal(t, float64(9), e.field(t, "usage", "output_tokens"))
		}
	}
	require.True(t, delta, "a message_delta carries the output tokens")
}

func TestMessages_notStreamed(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"a ", "b"}, ToolCall: &fakemodel.ToolCallReply{Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)}})
	res := send(t.Context(), t, s, "/v1/messages", messagesBody(false, "x", bashToolAnthropic, ""))
	require.Equal(t, http.StatusOK, res.StatusCode)
	var got struct {
		ID, Type, Role, StopReason string `json:",omitempty"`
		Content                    []struct {
			Type, Text, ID, Name string
			Input                json.RawMessage
		}
		Usage struct{ InputTokens, OutputTokens int }
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	require.Equal(t, "message", got.Type)
	require.Equal(t, "assistant", got.Role)
	require.Len(t, got.Content, 2)
	require.Equal(t, "a b", got.Content[0].Text)
	require.Equal(t, "tool_use", got.Content[1].Type)
	require.Equal(t, "toolu_1", got.Content[1].ID)
	require.JSONEq(t, `{"command":"ls"}`, string(got.Content[1].Input))
	var raw map[string]any
	res = send(t.Context(), t, s, "/v1/messages", messagesBody(false, "x", bashToolAnthropic, ""))
	require.NoError(t, json.NewDecoder(res.Body).Decode(&raw))
	require.Equal(t, "end_turn", raw["stop_reason"])
}

// TestMessages_errorShapes: scripted statuses answer in Anthropic's error
// envelope with its error type; the route without /v1 works too.
func TestMessages_errorShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		typ    string
	}{
		{400, "invalid_request_error"}, {401, "authentication_error"}, {429, "rate_limit_error"},
		{500, "api_error"}, {503, "api_error"}, {529, "overloaded_error"}, {418, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, fakemodel.Reply{Status: tt.status})
			res := send(t.Context(), t, s, "/messages", messagesBody(true, "x", bashToolAnthropic, ""))
			require.Equal(t, tt.status, res.StatusCode)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"))
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
			require.Equal(t, "error", e.Type)
			require.Equal(t, tt.typ, e.Error.Type)
			require.Contains(t, e.Error.Message, "scripted")
		})
	}
}

func TestDecodeMessagesRequest(t *testing.T) {
	t.Parallel()
	runDecodeCases(t, fakemodel.DecodeMessagesRequest, []decodeCase{
		{name: "as claude code sends it", body: messagesBody(true, "hello", bashToolAnthropic, ""), check: func(t *testing.T, r fakemodel.Request) {
			require.Equal(t, fakemodel.APIMessages, r.API)
			require.True(t, r.Stream)
			require.Equal(t, "claude-fake-1", r.Model)
			require.Equal(t, "hello", r.LastUser())
			require.Equal(t, []string{"system", "user"}, roles(r))
			require.Equal(t, "You are Claude Code.", string(r.Messages[0].Content))
			require.Contains(t, string(r.Messages[1].Content), "<system-reminder>", "the history keeps every text block")
			require.Len(t, r.Tools, 2)
			require.True(t, r.OffersTool("web_search"))
			require.Equal(t, "web_search_20250305", r.Tools[1].Type)
		}},
		{name: "follow-up with the tool's result", body: messagesBody(true, "hello", bashToolAnthropic, "hi\n"), check: func(t *testing.T, r fakemodel.Request) {
			require.Equal(t, "hello", r.LastUser(), "not the reminder after the result")
			require.Equal(t, []string{"system", "user", "assistant", "tool", "user"}, roles(r))
			call := r.Messages[2].ToolCalls[0]
			require.Equal(t, "toolu_x", call.ID)
			require.Equal(t, "Bash", call.Function.Name)
			require.JSONEq(t, `{"command":"echo hi","description":"Say hi"}`, call.Function.Arguments)
			require.Equal(t, "I'll run it.", string(r.Messages[2].Content))
			res := r.ToolResults()
			require.Len(t, res, 1)
			require.Equal(t, "toolu_x", res[0].ToolCallID)
			require.Equal(t, "hi\n", string(res[0].Content))
		}},
		{name: "content strings, system string, result blocks", body: `{"model":"m","system":"sys","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"tool_use","id":"t1","name":"f"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"out"},{"type":"image","source":{}}]}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, "go", r.LastUser())
				require.Equal(t, "sys", string(r.Messages[0].Content))
				require.Equal(t, "{}", r.Messages[2].ToolCalls[0].Function.Arguments, "a call without input has empty arguments")
				require.Equal(t, "out", string(r.ToolResults()[0].Content))
				require.False(t, r.Stream)
				require.Empty(t, r.Tools)
			}},
		{name: "only reminders", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>a</system-reminder>"}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, "<system-reminder>a</system-reminder>", r.LastUser())
			}},
		{name: "a later prompt wins", body: `{"model":"m","messages":[{"role":"user","content":"one"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"two"},{"type":"text","text":"<system-reminder>r</system-reminder>"}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) { require.Equal(t, "two", r.LastUser()) }},
		{name: "empty", body: ``, wantErr: "request body"},
		{name: "trailing data", body: `{"model":"m","messages":[{"role":"user","content":"x"}]} x`, wantErr: "after the JSON object"},
		{name: "no model", body: `{"messages":[{"role":"user","content":"x"}]}`, wantErr: "no model"},
		{name: "no messages", body: `{"model":"m","messages":[]}`, wantErr: "no messages"},
		{name: "system entry in messages, as Claude Code's default model sends it", body: `{"model":"m","system":[{"type":"text","text":"top"}],"messages":[{"role":"system","content":[{"type":"text","text":"You are Claude Code."}]},{"role":"user","content":"go"}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, []string{"system", "system", "user"}, roles(r))
				require.Equal(t, "top", string(r.Messages[0].Content))
				require.Equal(t, "You are Claude Code.", string(r.Messages[1].Content))
				require.Equal(t, "go", r.LastUser())
			}},
		{name: "system entry as a string, mid-conversation", body: `{"model":"m","messages":[{"role":"user","content":"one"},{"role":"system","content":"be brief"},{"role":"assistant","content":"ok"},{"role":"user","content":"two"}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, []string{"user", "system", "assistant", "user"}, roles(r))
				require.Equal(t, "be brief", string(r.Messages[1].Content))
				require.Equal(t, "two", r.LastUser())
			}},
		{name: "only a system entry", body: `{"model":"m","messages":[{"role":"system","content":"x"}]}`, wantErr: "no user or assistant message"},
		{name: "system entry with a tool_use", body: `{"model":"m","messages":[{"role":"system","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":"x"}]}`, wantErr: "system entry"},
		{name: "system entry of the wrong type", body: `{"model":"m","messages":[{"role":"system","content":5},{"role":"user","content":"x"}]}`, wantErr: "neither a string"},
		{name: "developer role in messages", body: `{"model":"m","messages":[{"role":"developer","content":"x"}]}`, wantErr: `role "developer"`},
		{name: "empty content", body: `{"model":"m","messages":[{"role":"user","content":[]}]}`, wantErr: "no content"},
		{name: "image only", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) { require.Equal(t, []string{"user"}, roles(r)) }},
		{name: "content missing", body: `{"model":"m","messages":[{"role":"user"}]}`, wantErr: "neither a string"},
		{name: "content of the wrong type", body: `{"model":"m","messages":[{"role":"user","content":{"text":"x"}}]}`, wantErr: "neither a string"},
		{name: "block without type", body: `{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, wantErr: "no type"},
		{name: "tool_use from the user", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`, wantErr: "tool_use"},
		{name: "tool_use without id", body: `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`, wantErr: "tool_use"},
		{name: "tool_result without id", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, wantErr: "tool_use_id"},
		{name: "tool_result from the assistant", body: `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`, wantErr: "tool_result"},
		{name: "tool_result content of the wrong type", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":5}]}]}`, wantErr: "neither a string"},
		{name: "system of the wrong type", body: `{"model":"m","system":5,"messages":[{"role":"user","content":"x"}]}`, wantErr: "system"},
		{name: "tool without a name", body: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"input_schema":{}}]}`, wantErr: "no name"},
		{name: "too large", body: `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", fakemodel.MaxRequest) + `"}]}`, wantErr: "larger than"},
	})
}

func FuzzDecodeMessagesRequest(f *testing.F) {
	for _, s := range []string{
		messagesBody(true, "hi", bashToolAnthropic, ""), messagesBody(false, "hi", "", "out"),
		`{"model":"m","system":"s","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"o"}]}]}]}`,
		`{"model":"","messages":[]}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := fakemodel.DecodeMessagesRequest(strings.NewReader(string(body)))
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error not classified as invalid: %v", err)
			}
			return
		}
		checkDecoded(t, r, fakemodel.APIMessages)
		if len(r.Messages) == 0 {
			t.Fatalf("accepted a request without messages")
		}
	})
}
