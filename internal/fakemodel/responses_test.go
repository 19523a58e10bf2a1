package fakemodel_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/jam"
)

const execTool = `[{"type":"function","name":"exec_command","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}},{"type":"web_search"}]`

// responsesBody is a request as Codex sends it: developer instructions,
// an environment context, the prompt, and when result is set the model's
// call and its output.
func responsesBody(stream bool, user, tools, result string) string {
	input := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":` + quote(user) + `}]}`,
	}
	if result != "" {
		input = append(input,
			`{"type":"function_call","id":"fc_1","call_id":"call_x","name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}"}`,
			`{"type":"function_call_output","call_id":"call_x","output":`+quote(result)+`}`)
	}
	b := `{"model":"fake-model","instructions":"You are Codex.","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"store":false,"include":["reasoning.encrypted_content"],"input":[` + strings.Join(input, ",") + `]`
	if tools != "" {
		b += `,"tools":` + tools
	}
	return b + "}"
}

// withoutTime blanks created_at, the one field that varies.
func withoutTime(t *testing.T, e event) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &v))
	if r, ok := v["response"].(map[string]any); ok {
		require.NotZero(t, r["created_at"])
		r["created_at"] = 0
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestResponses_streams checks each event of a stream as documented for
// Codex.
func TestResponses_streams(t *testing.T) {
	t.Parallel()
	usage := `"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`
	tests := []struct {
		name  string
		reply fakemodel.Reply
		want  []string
	}{
		{name: "text", reply: fakemodel.Reply{Text: []string{"FAKE-REP", "LY: hi"}}, want: []string{
			`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":0,"status":"in_progress","model":"fake-model","output":[]}}`,
			`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}`,
			`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"FAKE-REP"}`,
			`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"LY: hi"}`,
			`{"type":"response.output_text.done","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"text":"FAKE-REPLY: hi"}`,
			`{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"FAKE-REPLY: hi","annotations":[]}]}}`,
			`{"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","object":"response","created_at":0,"status":"completed","model":"fake-model","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"FAKE-REPLY: hi","annotations":[]}]}],` + fmt.Sprintf(usage, 7, 2, 9) + `}}`,
		}},
		{name: "tool call", reply: fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "exec_command", Arguments: json.RawMessage(`{"cmd":"echo hi > f"}`)}}, want: []string{
			`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":0,"status":"in_progress","model":"fake-model","output":[]}}`,
			`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"echo hi > f\"}"}}`,
			`{"type":"response.completed","sequence_number":2,"response":{"id":"resp_1","object":"response","created_at":0,"status":"completed","model":"fake-model","output":[{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"echo hi > f\"}"}],` + fmt.Sprintf(usage, 7, 1, 8) + `}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tt.reply)
			evs := named(t, send(t.Context(), t, s, "/v1/responses", responsesBody(true, "hi", execTool, ""), "Authorization", "Bearer dummy"))
			require.Len(t, evs, len(tt.want), "%v", names(evs))
			for i, e := range evs {
				require.JSONEq(t, tt.want[i], withoutTime(t, e), "event %d", i)
			}
			c := s.Requests()[0]
			require.Equal(t, fakemodel.APIResponses, c.API)
			require.Equal(t, "/v1/responses", c.Path)
			require.Equal(t, "Bearer dummy", c.Authorization)
			require.Equal(t, "hi", c.LastUser())
			require.True(t, c.OffersTool("exec_command"))
			require.True(t, c.OffersTool("web_search"))
		})
	}
}

// TestResponses_textThenToolCall: a reply with text and a call gives the
// message item at index 0 and the call at index 1.
func TestResponses_textThenToolCall(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"Running it."}, ToolCall: &fakemodel.ToolCallReply{ID: "call_z", Name: "exec_command", Arguments: json.RawMessage(`{}`)}})
	evs := named(t, send(t.Context(), t, s, "/responses", responsesBody(true, "go", execTool, "")))
	require.Equal(t, []string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_text.done",
		"response.output_item.done", "response.output_item.done", "response.completed"}, names(evs))
	require.Equal(t, "message", evs[4].field(t, "item", "type"))
	require.Equal(t, float64(1), evs[5].field(t, "output_index"))
	require.Equal(t, "call_z", evs[5].field(t, "item", "call_id"))
	require.Len(t, evs[6].field(t, "response", "output"), 2)
	require.Equal(t, "/responses", s.Requests()[0].Path, "a base URL without /v1 works too")
}

// TestResponses_scriptedUsage: a reply's scripted usage is what
// response.completed reports, cached and reasoning tokens included.
func TestResponses_scriptedUsage(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"hi"}, Usage: &fakemodel.Usage{Input: 120, Cached: 40, Output: 9, Reasoning: 5}})
	evs := named(t, send(t.Context(), t, s, "/v1/responses", responsesBody(true, "go", execTool, "")))
	done := evs[len(evs)-1]
	require.Equal(t, "response.completed", done.Name)
	require.Equal(t, float64(120), done.field(t, "response", "usage", "input_tokens"))
	require.Equal(t, float64(40), done.field(t, "response", "usage", "input_tokens_details", "cached_tokens"))
	require.Equal(t, float64(9), done.field(t, "response", "usage", "output_tokens"))
	require.Equal(t, float64(5), done.field(t, "response", "usage", "output_tokens_details", "reasoning_tokens"))
	require.Equal(t, float64(129), done.field(t, "response", "usage", "total_tokens"))
}

func TestResponses_notStreamed(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"a ", "b"}, ToolCall: &fakemodel.ToolCallReply{Name: "exec_command", Arguments: json.RawMessage(`{"cmd":"ls"}`)}})
	res := send(t.Context(), t, s, "/v1/responses", responsesBody(false, "x", execTool, ""))
	require.Equal(t, http.StatusOK, res.StatusCode)
	var got struct {
		ID, Object, Status string
		Output             []struct {
			Type, CallID, Name, Arguments string `json:",omitempty"`
			Content                       []struct{ Type, Text string }
		}
		Usage struct{ InputTokens, OutputTokens, TotalTokens int }
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	require.Equal(t, "response", got.Object)
	require.Equal(t, "completed", got.Status)
	require.Len(t, got.Output, 2)
	require.Equal(t, "a b", got.Output[0].Content[0].Text)
	require.Equal(t, "function_call", got.Output[1].Type)
	require.JSONEq(t, `{"cmd":"ls"}`, got.Output[1].Arguments)
}

func TestDecodeResponsesRequest(t *testing.T) {
	t.Parallel()
	runDecodeCases(t, fakemodel.DecodeResponsesRequest, []decodeCase{
		{name: "as codex sends it", body: responsesBody(true, "hello", execTool, ""), check: func(t *testing.T, r fakemodel.Request) {
			require.Equal(t, fakemodel.APIResponses, r.API)
			require.True(t, r.Stream)
			require.Equal(t, "fake-model", r.Model)
			require.Equal(t, "hello", r.LastUser())
			require.Equal(t, []string{"system", "developer", "user", "user"}, roles(r))
			require.Equal(t, "You are Codex.", string(r.Messages[0].Content))
			require.Len(t, r.Tools, 2)
			require.True(t, r.OffersTool("exec_command"))
			require.Empty(t, r.ToolResults())
		}},
		{name: "follow-up with the call's output", body: responsesBody(true, "hello", execTool, "hi\n"), check: func(t *testing.T, r fakemodel.Request) {
			require.Equal(t, "hello", r.LastUser())
			require.Equal(t, []string{"system", "developer", "user", "user", "assistant", "tool"}, roles(r))
			require.Equal(t, "call_x", r.Messages[4].ToolCalls[0].ID)
			require.Equal(t, "exec_command", r.Messages[4].ToolCalls[0].Function.Name)
			res := r.ToolResults()
			require.Len(t, res, 1)
			require.Equal(t, "call_x", res[0].ToolCallID)
			require.Equal(t, "hi\n", string(res[0].Content))
		}},
		{name: "input as a string", body: `{"model":"m","input":"just this"}`, check: func(t *testing.T, r fakemodel.Request) {
			require.Equal(t, "just this", r.LastUser())
			require.False(t, r.Stream)
			require.Empty(t, r.Tools)
		}},
		{name: "short message items and content strings", body: `{"model":"m","input":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"output_text","text":"b"}]},{"role":"user","content":[{"type":"input_text","text":"c"},{"type":"input_image","image_url":"x"},{"type":"input_text","text":"d"}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, "c\nd", r.LastUser())
				require.Equal(t, "b", string(r.Messages[1].Content))
			}},
		{name: "output as content items; other items skipped", body: `{"model":"m","input":[{"role":"user","content":"go"},{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"g","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"out"}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, []string{"user", "assistant", "tool"}, roles(r), "parallel calls share one assistant message")
				require.Len(t, r.Messages[1].ToolCalls, 2)
				require.Equal(t, "out", string(r.ToolResults()[0].Content))
			}},
		{name: "a new prompt after a tool result", body: `{"model":"m","input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"x"},{"role":"user","content":"again"}]}`,
			check: func(t *testing.T, r fakemodel.Request) { require.Equal(t, "again", r.LastUser()) }},
		{name: "empty", body: ``, wantErr: "request body"},
		{name: "trailing data", body: `{"model":"m","input":"x"} {}`, wantErr: "after the JSON object"},
		{name: "no model", body: `{"input":"x"}`, wantErr: "no model"},
		{name: "no input", body: `{"model":"m"}`, wantErr: "no input"},
		{name: "empty input", body: `{"model":"m","input":[]}`, wantErr: "no input"},
		{name: "input of the wrong type", body: `{"model":"m","input":42}`, wantErr: "input"},
		{name: "item without type or role", body: `{"model":"m","input":[{"content":"x"}]}`, wantErr: "no type"},
		{name: "unknown role", body: `{"model":"m","input":[{"role":"robot","content":"x"}]}`, wantErr: `role "robot"`},
		{name: "content of the wrong type", body: `{"model":"m","input":[{"role":"user","content":7}]}`, wantErr: "neither a string"},
		{name: "call without call_id", body: `{"model":"m","input":[{"type":"function_call","name":"f"}]}`, wantErr: "call_id"},
		{name: "output without call_id", body: `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, wantErr: "no call_id"},
		{name: "function tool without a name", body: `{"model":"m","input":"x","tools":[{"type":"function"}]}`, wantErr: "no name"},
		{name: "tool without a type", body: `{"model":"m","input":"x","tools":[{"name":"f"}]}`, wantErr: "no type"},
		{name: "too large", body: `{"model":"m","input":"` + strings.Repeat("x", fakemodel.MaxRequest) + `"}`, wantErr: "larger than"},
	})
}

func FuzzDecodeResponsesRequest(f *testing.F) {
	for _, s := range []string{
		responsesBody(true, "hi", execTool, ""), responsesBody(false, "hi", "", "out"),
		`{"model":"m","input":"x"}`, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]}`,
		`{"model":"","input":[]}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := fakemodel.DecodeResponsesRequest(strings.NewReader(string(body)))
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error not classified as invalid: %v", err)
			}
			return
		}
		checkDecoded(t, r, fakemodel.APIResponses)
	})
}

// checkDecoded checks what every decoded request promises.
func checkDecoded(t *testing.T, r fakemodel.Request, api fakemodel.API) {
	t.Helper()
	if r.API != api || r.Model == "" {
		t.Fatalf("accepted an incomplete request: %+v", r)
	}
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == "" {
			t.Fatalf("a tool message without a call id")
		}
		for _, c := range m.ToolCalls {
			if c.ID == "" || c.Function.Name == "" {
				t.Fatalf("a tool call without an id or a name: %+v", c)
			}
		}
	}
	for _, tool := range r.Tools {
		if tool.Function.Name == "" {
			t.Fatalf("a tool without a name")
		}
	}
	_ = r.LastUser()
	_ = r.ToolResults()
}

func roles(r fakemodel.Request) []string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Role)
	}
	return out
}
