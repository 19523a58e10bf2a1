package fakemodel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/fakemodel"
)

// event is one server-sent event of a stream with named events.
type event struct {
	Name string
	Data json.RawMessage
}

// field reads one field of the event's data.
func (e event) field(t *testing.T, path ...string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(e.Data, &v))
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s: %s is not inside an object", e.Name, p)
		v = m[p]
	}
	return v
}

// named reads a stream of "event: name" / "data: json" pairs to its end;
// each event's data carries its name as "type".
func named(t *testing.T, res *http.Response) []event {
	t.Helper()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	var out []event
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		name, ok := strings.CutPrefix(line, "event: ")
		require.True(t, ok, "an event line: %q", line)
		require.True(t, sc.Scan(), "data after event %s", name)
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		require.True(t, ok, "a data line: %q", sc.Text())
		require.True(t, sc.Scan(), "a blank line after the data")
		require.Empty(t, sc.Text())
		var typ struct{ Type string }
		require.NoError(t, json.Unmarshal([]byte(data), &typ))
		require.Equal(t, name, typ.Type, "the data's type is the event's name")
		out = append(out, event{name, json.RawMessage(data)})
	}
	require.NoError(t, sc.Err())
	return out
}

func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

// send posts body to the server's root plus path.
func send(ctx context.Context, t *testing.T, s *fakemodel.Server, path, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Root()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// wire is one format as the cross-format tests drive it.
type wire struct {
	name string
	api  fakemodel.API
	path string
	// body is a request asking user; with tools when tools is set; with
	// a tool call and its result when result is set.
	body func(stream bool, user string, tools bool, result string) string
	// text and call read a finished stream.
	text func(t *testing.T, res *http.Response) string
	call func(t *testing.T, res *http.Response) (id, name, args string)
	// errMessage reads an error answer's message.
	errMessage func(t *testing.T, b []byte) string
}

func chatWire() wire {
	return wire{name: "chat", api: fakemodel.APIChat, path: "/v1/chat/completions",
		body: func(stream bool, user string, tools bool, result string) string {
			var extra []string
			if result != "" {
				extra = append(extra,
					`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]}`,
					`{"role":"tool","tool_call_id":"call_1","content":`+quote(result)+`}`)
			}
			return body(stream, user, map[bool]string{true: bashTool}[tools], extra...)
		},
		text: func(t *testing.T, res *http.Response) string {
			cs, done := events(t, res)
			require.True(t, done)
			var b strings.Builder
			for _, c := range cs {
				if len(c.Choices) > 0 {
					b.WriteString(c.Choices[0].Delta.Content)
				}
			}
			return b.String()
		},
		call: func(t *testing.T, res *http.Response) (string, string, string) {
			cs, _ := events(t, res)
			head, args := cs[1].Choices[0].Delta.ToolCalls[0], cs[2].Choices[0].Delta.ToolCalls[0]
			return head.ID, head.Function.Name, args.Function.Arguments
		},
		errMessage: func(t *testing.T, b []byte) string {
			var e struct{ Error struct{ Message string } }
			require.NoError(t, json.Unmarshal(b, &e))
			return e.Error.Message
		},
	}
}

func responsesWire() wire {
	return wire{name: "responses", api: fakemodel.APIResponses, path: "/v1/responses",
		body: func(stream bool, user string, tools bool, result string) string {
			return responsesBody(stream, user, map[bool]string{true: execTool}[tools], result)
		},
		text: func(t *testing.T, res *http.Response) string {
			var b strings.Builder
			for _, e := range named(t, res) {
				if e.Name == "response.output_text.delta" {
					b.WriteString(e.field(t, "delta").(string))
				}
			}
			return b.String()
		},
		call: func(t *testing.T, res *http.Response) (string, string, string) {
			for _, e := range named(t, res) {
				if e.Name == "response.output_item.done" && e.field(t, "item", "type") == "function_call" {
					return e.field(t, "item", "call_id").(string), e.field(t, "item", "name").(string), e.field(t, "item", "arguments").(string)
				}
			}
			t.Fatal("no function_call item")
			return "", "", ""
		},
		errMessage: chatWire().errMessage,
	}
}

func messagesWire() wire {
	return wire{name: "messages", api: fakemodel.APIMessages, path: "/v1/messages?beta=true",
		body: func(stream bool, user string, tools bool, result string) string {
			return messagesBody(stream, user, map[bool]string{true: bashToolAnthropic}[tools], result)
		},
		text: func(t *testing.T, res *http.Response) string {
			var b strings.Builder
			for _, e := range named(t, res) {
				if e.Name == "content_block_delta" && e.field(t, "delta", "type") == "text_delta" {
					b.WriteString(e.field(t, "delta", "text").(string))
				}
			}
			return b.String()
		},
		call: func(t *testing.T, res *http.Response) (string, string, string) {
			var id, name, args string
			for _, e := range named(t, res) {
				switch {
				case e.Name == "content_block_start" && e.field(t, "content_block", "type") == "tool_use":
					id, name = e.field(t, "content_block", "id").(string), e.field(t, "content_block", "name").(string)
				case e.Name == "content_block_delta" && e.field(t, "delta", "type") == "input_json_delta":
					args += e.field(t, "delta", "partial_json").(string)
				}
			}
			return id, name, args
		},
		errMessage: func(t *testing.T, b []byte) string {
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.Unmarshal(b, &e))
			require.Equal(t, "error", e.Type)
			require.NotEmpty(t, e.Error.Type)
			return e.Error.Message
		},
	}
}

func wires() []wire { return []wire{chatWire(), responsesWire(), messagesWire()} }

// TestServer_oneScriptDrivesEveryFormat: the same replies (text, a tool
// call, an error, then the default) answer each format in its own shape,
// and each request is captured with its API, prompt and tool results.
func TestServer_oneScriptDrivesEveryFormat(t *testing.T) {
	t.Parallel()
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t,
				fakemodel.Reply{Text: []string{"Hel", "lo ", "there"}},
				fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{ID: "call_x", Name: "run", Arguments: json.RawMessage(`{"cmd":"echo hi"}`)}},
				fakemodel.Reply{Status: 500},
			)
			ctx := t.Context()
			require.Equal(t, "Hello there", w.text(t, send(ctx, t, s, w.path, w.body(true, "first", true, ""))))

			id, name, args := w.call(t, send(ctx, t, s, w.path, w.body(true, "run it", true, "")))
			require.Equal(t, "call_x", id)
			require.Equal(t, "run", name)
			require.JSONEq(t, `{"cmd":"echo hi"}`, args)

			res := send(ctx, t, s, w.path, w.body(true, "fail", true, ""))
			require.Equal(t, http.StatusInternalServerError, res.StatusCode)
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Equal(t, "scripted error 500", w.errMessage(t, b))

			// The queue is empty: the default reply acknowledges a tool
			// result, and otherwise echoes the prompt.
			require.Equal(t, "FAKE-DONE after tool", w.text(t, send(ctx, t, s, w.path, w.body(true, "run it", true, "hi\n"))))
			require.Equal(t, "FAKE-REPLY: say hello", w.text(t, send(ctx, t, s, w.path, w.body(true, "say hello", true, ""))))
			// A request offering no tools is auxiliary and takes nothing
			// from the queue.
			s.Push(fakemodel.Reply{Text: []string{"queued"}})
			require.Equal(t, fakemodel.TitleText, w.text(t, send(ctx, t, s, w.path, w.body(true, "title", false, ""))))
			require.Equal(t, "queued", w.text(t, send(ctx, t, s, w.path, w.body(true, "next", true, ""))))

			reqs := s.Requests()
			require.Len(t, reqs, 7)
			for _, c := range reqs {
				require.Equal(t, w.api, c.API)
			}
			require.Equal(t, "first", reqs[0].LastUser())
			require.Empty(t, reqs[0].ToolResults())
			follow := reqs[3]
			require.Equal(t, "run it", follow.LastUser(), "the prompt, not the tool result")
			require.Len(t, follow.ToolResults(), 1)
			require.Equal(t, "hi\n", string(follow.ToolResults()[0].Content))
			require.NotEmpty(t, follow.ToolResults()[0].ToolCallID)
			require.True(t, reqs[5].Aux)
			turns, err := s.WaitRequests(ctx, 6, fakemodel.Turn)
			require.NoError(t, err)
			require.Len(t, turns, 6)
		})
	}
}

// TestServer_everyFormatHoldsAndCancels: a held reply waits for its gate;
// a slow stream stops when the client goes away; Stop ends a held reply.
func TestServer_everyFormatHoldsAndCancels(t *testing.T) {
	t.Parallel()
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			s := fakemodel.New(fakemodel.Config{})
			require.NoError(t, s.Start())
			gate := make(chan struct{})
			s.Push(fakemodel.Reply{Text: []string{"released"}, Hold: gate})
			got := postLater(s.Root()+w.path, w.body(true, "x", true, ""))
			_, err := s.WaitRequests(t.Context(), 1, nil)
			require.NoError(t, err)
			select {
			case <-got:
				t.Fatal("a held reply answered before its gate opened")
			default:
			}
			close(gate)
			a := <-got
			require.NoError(t, a.err)
			require.Contains(t, a.text, "released")

			// Slow: the client reads the first event, then leaves before
			// the second of fifty 200 ms chunks.
			s.Push(fakemodel.Reply{Text: strings.Split(strings.Repeat("w ", 50), " "), Delay: fakemodel.Duration(200 * time.Millisecond)})
			ctx, cancel := context.WithCancel(t.Context())
			res := send(ctx, t, s, w.path, w.body(true, "x", true, ""))
			require.Equal(t, http.StatusOK, res.StatusCode)
			br := bufio.NewReader(res.Body)
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			require.NotEmpty(t, strings.TrimSpace(line))
			cancel()
			_, err = io.ReadAll(br)
			require.Error(t, err, "the stream ends with the client")

			// Held past Stop.
			s.Push(fakemodel.Reply{Hold: make(chan struct{})})
			errc := make(chan error, 1)
			go func() {
				res, err := http.Post(s.Root()+w.path, "application/json", strings.NewReader(w.body(true, "x", true, "")))
				if err == nil {
					_, err = io.ReadAll(res.Body)
					res.Body.Close()
				}
				errc <- err
			}()
			_, err = s.WaitRequests(t.Context(), 3, nil)
			require.NoError(t, err)
			s.Stop()
			<-errc
			http.DefaultClient.CloseIdleConnections()
		})
	}
}

// TestServer_rejectsBadRequestsInEachShape: a body the decoder refuses is
// a 400 in the format's error shape and is not captured.
func TestServer_rejectsBadRequestsInEachShape(t *testing.T) {
	t.Parallel()
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			res := send(t.Context(), t, s, w.path, `{"model":""}`)
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Contains(t, w.errMessage(t, b), "no model")
			require.Empty(t, s.Requests())
		})
	}
}

// compact is s as compact JSON.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, []byte(s)))
	return b.String()
}
