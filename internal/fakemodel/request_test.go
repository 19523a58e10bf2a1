package fakemodel_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/jam"
)

// decodeCase is one request body for a decoder: what the decoded request
// must hold (check), or the text of the invalid_argument error it gets.
type decodeCase struct {
	name, body string
	check      func(t *testing.T, r fakemodel.Request)
	wantErr    string
}

// runDecodeCases runs each case through decode, in parallel.
func runDecodeCases(t *testing.T, decode func(io.Reader) (fakemodel.Request, error), tests []decodeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := decode(strings.NewReader(tt.body))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, r)
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	runDecodeCases(t, fakemodel.DecodeRequest, []decodeCase{
		{name: "streamed with tools", body: `{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},
			"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}],
			"tools":[{"type":"function","function":{"name":"bash","description":"run","parameters":{"type":"object"}}}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.True(t, r.Stream)
				require.Equal(t, "hello", r.LastUser())
				require.True(t, r.OffersTool("bash"))
				require.False(t, r.OffersTool("edit"))
			}},
		{name: "content as parts", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"two"}]}]}`,
			check: func(t *testing.T, r fakemodel.Request) { require.Equal(t, "one\ntwo", r.LastUser()) }},
		{name: "tool round trip", body: `{"model":"m","messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"a.txt"}]}`,
			check: func(t *testing.T, r fakemodel.Request) {
				require.Equal(t, "bash", r.Messages[1].ToolCalls[0].Function.Name)
				require.Len(t, r.ToolResults(), 1)
				require.Equal(t, "a.txt", string(r.ToolResults()[0].Content))
			}},
		{name: "no user message", body: `{"model":"m","messages":[{"role":"system","content":"s"}]}`,
			check: func(t *testing.T, r fakemodel.Request) { require.Empty(t, r.LastUser()) }},
		{name: "empty", body: ``, wantErr: "request body"},
		{name: "not an object", body: `[1,2]`, wantErr: "request body"},
		{name: "trailing data", body: `{"model":"m","messages":[{"role":"user","content":"x"}]} {}`, wantErr: "after the JSON object"},
		{name: "no model", body: `{"messages":[{"role":"user","content":"x"}]}`, wantErr: "no model"},
		{name: "no messages", body: `{"model":"m","messages":[]}`, wantErr: "no messages"},
		{name: "unknown role", body: `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, wantErr: `role "robot"`},
		{name: "tool message without call id", body: `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, wantErr: "tool_call_id"},
		{name: "content of the wrong type", body: `{"model":"m","messages":[{"role":"user","content":42}]}`, wantErr: "neither a string"},
		{name: "tool without a name", body: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, wantErr: "no function name"},
		{name: "too large", body: `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", fakemodel.MaxRequest) + `"}]}`, wantErr: "larger than"},
	})
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"tool","tool_call_id":"c","content":null}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
		`{"model":"","messages":[]}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := fakemodel.DecodeRequest(strings.NewReader(string(body)))
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error not classified as invalid: %v", err)
			}
			return
		}
		// A decoded request is valid by construction.
		if r.Model == "" || len(r.Messages) == 0 {
			t.Fatalf("accepted an incomplete request: %+v", r)
		}
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == "" {
				t.Fatalf("accepted a tool message without a call id")
			}
		}
		_ = r.LastUser()
		_ = r.ToolResults()
	})
}

func TestParseScript(t *testing.T) {
	t.Parallel()
	s, err := fakemodel.ParseScript([]byte(`{"replies":[{"text":["a","b"],"delay":"250ms"},{"tool_call":{"name":"bash","arguments":{"command":"ls"}}},{"status":503}]}`))
	require.NoError(t, err)
	require.Len(t, s.Replies, 3)
	require.Equal(t, fakemodel.Duration(250e6), s.Replies[0].Delay)
	require.Equal(t, "bash", s.Replies[1].ToolCall.Name)
	require.Equal(t, 503, s.Replies[2].Status)
	s, err = fakemodel.ParseScript([]byte(`{"replies":[{"text":["a"],"usage":{"input":10,"cached":4,"output":3,"reasoning":1}}]}`))
	require.NoError(t, err)
	require.Equal(t, &fakemodel.Usage{Input: 10, Cached: 4, Output: 3, Reasoning: 1}, s.Replies[0].Usage)

	for name, bad := range map[string]string{
		"unknown field":           `{"replies":[{"txt":["a"]}]}`,
		"status not an error":     `{"replies":[{"status":200}]}`,
		"status with text":        `{"replies":[{"status":500,"text":["a"]}]}`,
		"tool call without name":  `{"replies":[{"tool_call":{"arguments":{}}}]}`,
		"arguments not an object": `{"replies":[{"tool_call":{"name":"bash","arguments":"ls"}}]}`,
		"arguments missing":       `{"replies":[{"tool_call":{"name":"bash"}}]}`,
		"delay not a duration":    `{"replies":[{"delay":"soon"}]}`,
		"delay a number":          `{"replies":[{"delay":5}]}`,
		"negative delay":          `{"replies":[{"delay":"-1s"}]}`,
		"trailing data":           `{"replies":[]} x`,
		"not json":                `replies: []`,
		"negative usage":          `{"replies":[{"usage":{"input":-1,"output":1}}]}`,
		"cached beyond input":     `{"replies":[{"usage":{"input":1,"cached":2,"output":1}}]}`,
	} {
		_, err := fakemodel.ParseScript([]byte(bad))
		require.ErrorIs(t, err, jam.ErrInvalid, name)
	}
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{
		`{"replies":[{"text":["a","b"],"delay":"250ms"},{"tool_call":{"name":"bash","arguments":{"command":"ls"}}},{"status":503}]}`,
		`{"replies":[{"status":500,"text":["a"]}]}`,
		`{"replies":[{"tool_call":{"name":"x","arguments":[]}}]}`,
		`{"replies":null}`, `{}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := fakemodel.ParseScript(b)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error not classified as invalid: %v", err)
			}
			return
		}
		for i, r := range s.Replies {
			if r.Status != 0 && (r.Status < 400 || r.Status > 599 || len(r.Text) > 0 || r.ToolCall != nil) {
				t.Fatalf("reply %d: accepted an inconsistent error reply: %+v", i, r)
			}
			if r.ToolCall != nil && r.ToolCall.Name == "" {
				t.Fatalf("reply %d: accepted a tool call without a name", i)
			}
		}
	})
}
