package fakemodel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/fakemodel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const bashTool = `[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}]`

func newServer(t *testing.T, replies ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	s := fakemodel.New(fakemodel.Config{Script: fakemodel.Script{Replies: replies}})
	require.NoError(t, s.Start())
	t.Cleanup(s.Stop)
	return s
}

// chunk is the part of a stream chunk the tests read.
type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens, CompletionTokens, TotalTokens int
	} `json:"usage"`
}

// post sends a chat request and returns the response.
func post(ctx context.Context, t *testing.T, s *fakemodel.Server, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// events reads a stream to its end: the chunks, and whether [DONE] closed it.
func events(t *testing.T, res *http.Response) ([]chunk, bool) {
	t.Helper()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	var out []chunk
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		require.True(t, ok, "only data lines: %q", line)
		if data == "[DONE]" {
			for sc.Scan() {
				require.Empty(t, sc.Text(), "nothing after [DONE]")
			}
			return out, true
		}
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(data), &c))
		out = append(out, c)
	}
	return out, false
}

func body(stream bool, user, tools string, extra ...string) string {
	msgs := []string{`{"role":"system","content":"sys"}`, `{"role":"user","content":` + quote(user) + `}`}
	msgs = append(msgs, extra...)
	b := `{"model":"fake-model","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[` + strings.Join(msgs, ",") + `]`
	if tools != "" {
		b += `,"tools":` + tools
	}
	return b + "}"
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// answer is what a request made in the background got.
type answer struct {
	text string
	err  error
}

// postLater posts body to url from a goroutine of its own, for a reply
// that is held: the answer comes on the channel, which the test reads
// (so the goroutine always ends).
func postLater(url, body string) <-chan answer {
	got := make(chan answer, 1)
	go func() {
		res, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		got <- answer{string(b), err}
	}()
	return got
}

func TestServer_streamsText(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"Hel", "lo"}})
	cs, done := events(t, post(t.Context(), t, s, body(true, "hi", bashTool)))
	require.True(t, done)
	require.Len(t, cs, 5, "role, two deltas, finish, usage")
	require.Equal(t, "chat.completion.chunk", cs[0].Object)
	require.Equal(t, "assistant", cs[0].Choices[0].Delta.Role)
	require.Equal(t, "Hel", cs[1].Choices[0].Delta.Content)
	require.Equal(t, "lo", cs[2].Choices[0].Delta.Content)
	require.Nil(t, cs[2].Choices[0].FinishReason)
	require.Equal(t, "stop", *cs[3].Choices[0].FinishReason)
	require.Empty(t, cs[4].Choices)
	require.NotNil(t, cs[4].Usage)
	require.Equal(t, cs[4].Usage.PromptTokens+cs[4].Usage.CompletionTokens, cs[4].Usage.TotalTokens)

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, 1, reqs[0].Seq)
	require.Equal(t, "Bearer k", reqs[0].Authorization)
	require.Equal(t, "/v1/chat/completions", reqs[0].Path)
	require.False(t, reqs[0].Aux)
	require.Equal(t, "hi", reqs[0].LastUser())
}

func TestServer_toolCallThenDefault(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}})
	cs, done := events(t, post(t.Context(), t, s, body(true, "list", bashTool)))
	require.True(t, done)
	require.Len(t, cs, 5, "role, call head, arguments, finish, usage")
	head := cs[1].Choices[0].Delta.ToolCalls[0]
	require.Equal(t, "call_1", head.ID)
	require.Equal(t, "function", head.Type)
	require.Equal(t, "bash", head.Function.Name)
	require.Empty(t, head.Function.Arguments)
	require.JSONEq(t, `{"command":"ls"}`, cs[2].Choices[0].Delta.ToolCalls[0].Function.Arguments)
	require.Equal(t, "tool_calls", *cs[3].Choices[0].FinishReason)

	// The follow-up carries the tool's result; the queue is empty, so the
	// default reply acknowledges it.
	cs, _ = events(t, post(t.Context(), t, s, body(true, "list", bashTool,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"a.txt"}`)))
	var text strings.Builder
	for _, c := range cs {
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	require.Equal(t, "FAKE-DONE after tool", text.String())
	require.Len(t, s.Requests()[1].ToolResults(), 1)
}

func TestServer_defaultEchoes(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	cs, _ := events(t, post(t.Context(), t, s, body(true, "say something nice", bashTool)))
	var text strings.Builder
	for _, c := range cs[1 : len(cs)-2] {
		text.WriteString(c.Choices[0].Delta.Content)
	}
	require.Equal(t, "FAKE-REPLY: say something nice", text.String())
	require.Greater(t, len(cs), 5, "word by word")
}

func TestServer_toollessRequestsGetATitle(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"scripted"}})
	cs, _ := events(t, post(t.Context(), t, s, body(true, "generate a title", "")))
	require.Equal(t, fakemodel.TitleText, cs[1].Choices[0].Delta.Content)
	cs, _ = events(t, post(t.Context(), t, s, body(true, "work", bashTool)))
	require.Equal(t, "scripted", cs[1].Choices[0].Delta.Content, "the title took nothing from the queue")
	reqs := s.Requests()
	require.True(t, reqs[0].Aux)
	turns, err := s.WaitRequests(t.Context(), 1, fakemodel.Turn)
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.Equal(t, 2, turns[0].Seq)
}

func TestServer_notStreamed(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Text: []string{"a ", "b"}}, fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{ID: "x1", Name: "bash", Arguments: json.RawMessage(`{}`)}})
	var got struct {
		Object  string
		Choices []struct {
			Message struct {
				Role      string
				Content   string
				ToolCalls []struct{ ID string } `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	res := post(t.Context(), t, s, body(false, "x", bashTool))
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	require.Equal(t, "chat.completion", got.Object)
	require.Equal(t, "a b", got.Choices[0].Message.Content)
	require.Equal(t, "stop", got.Choices[0].FinishReason)
	res = post(t.Context(), t, s, body(false, "x", bashTool))
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	require.Equal(t, "tool_calls", got.Choices[0].FinishReason)
	require.Equal(t, "x1", got.Choices[0].Message.ToolCalls[0].ID)
}

func TestServer_errors(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakemodel.Reply{Status: 503})
	var e struct {
		Error struct {
			Message, Type string
			Code          int
		}
	}
	res := post(t.Context(), t, s, body(true, "x", bashTool))
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
	require.Equal(t, 503, e.Error.Code)
	require.Contains(t, e.Error.Message, "scripted")

	res = post(t.Context(), t, s, `{"model":"m","messages":[{"role":"robot"}]}`)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
	require.Equal(t, "invalid_request_error", e.Error.Type)
	require.Len(t, s.Requests(), 1, "an invalid request is not captured")

	r, err := http.Get("http://" + s.Addr() + "/v2/nothing")
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusNotFound, r.StatusCode)
}

func TestServer_models(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	res, err := http.Get(s.URL() + "/models")
	require.NoError(t, err)
	defer res.Body.Close()
	var got struct {
		Object string
		Data   []struct{ ID string }
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	require.Equal(t, "list", got.Object)
	require.Equal(t, fakemodel.DefaultModel, got.Data[0].ID)
}

// TestServer_delayAndHold: a held reply waits for its gate; a slow reply
// streams with its delay and stops when the client goes away; Stop ends a
// reply still held.
func TestServer_delayAndHold(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	s := fakemodel.New(fakemodel.Config{})
	require.NoError(t, s.Start())
	name := "not yet"
	s.Push(fakemodel.Reply{Text: []string{"scripted"}, Hold: gate, Late: func() fakemodel.Reply { return fakemodel.Reply{Text: []string{"released " + name}} }})

	got := postLater(s.URL()+"/chat/completions", body(true, "x", bashTool))
	_, err := s.WaitRequests(t.Context(), 1, nil)
	require.NoError(t, err)
	select {
	case <-got:
		t.Fatal("a held reply answered before its gate opened")
	default:
	}
	name = "late"
	close(gate)
	a := <-got
	require.NoError(t, a.err)
	require.Contains(t, a.text, `"content":"released late"`, "a late reply is made when served, after its gate")
	require.NotContains(t, a.text, "scripted")

	// Slow: the client reads the first delta, then leaves.
	s.Push(fakemodel.Reply{Text: strings.Split(strings.Repeat("w ", 50), " "), Delay: fakemodel.Duration(200 * time.Millisecond)})
	ctx, cancel := context.WithCancel(t.Context())
	res := post(ctx, t, s, body(true, "x", bashTool))
	br := bufio.NewReader(res.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"role":"assistant"`)
	cancel()
	_, err = io.ReadAll(br)
	require.Error(t, err, "the stream ends with the client")

	// Held past Stop: Stop ends the handler (goleak checks nothing is left).
	s.Push(fakemodel.Reply{Hold: make(chan struct{})})
	ctx2, cancel2 := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel2()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx2, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body(true, "x", bashTool)))
		res, err := http.DefaultClient.Do(req)
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
	s.Stop() // twice is fine
	http.DefaultClient.CloseIdleConnections()
}

func TestServer_waitRequestsTimesOut(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := s.WaitRequests(ctx, 1, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
