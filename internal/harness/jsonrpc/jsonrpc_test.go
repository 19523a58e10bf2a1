package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		line    string
		kind    string // request, notification, response
		id      string
		wantErr string
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, kind: "request", id: "1"},
		{name: "request with string id", line: `{"jsonrpc":"2.0","id":"a\u0062","method":"m"}`, kind: "request", id: `"ab"`},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"session/update","params":{"x":1}}`, kind: "notification"},
		{name: "notification with array params", line: `{"jsonrpc":"2.0","method":"m","params":[1,2]}`, kind: "notification"},
		{name: "result", line: `{"jsonrpc":"2.0","id":7,"result":{"sessionId":"s"}}`, kind: "response", id: "7"},
		{name: "null result", line: `{"jsonrpc":"2.0","id":7,"result":null}`, kind: "response", id: "7"},
		{name: "error", line: `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}`, kind: "response", id: "7"},
		{name: "error with null id", line: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, kind: "error-null"},
		{name: "surrounding space", line: "  {\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r", kind: "notification"},
		{name: "empty", line: ``, wantErr: "not a JSON object"},
		{name: "array (batch)", line: `[{"jsonrpc":"2.0","method":"m"}]`, wantErr: "not a JSON object"},
		{name: "truncated", line: `{"jsonrpc":"2.0","method":"m"`, wantErr: "invalid JSON"},
		{name: "wrong version", line: `{"jsonrpc":"1.0","method":"m"}`, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "no version", line: `{"method":"m"}`, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "method not a string", line: `{"jsonrpc":"2.0","method":5}`, wantErr: "invalid field"},
		{name: "empty method", line: `{"jsonrpc":"2.0","id":1,"method":""}`, wantErr: "empty method"},
		{name: "fractional id", line: `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, wantErr: "integer or a string"},
		{name: "object id", line: `{"jsonrpc":"2.0","id":{},"method":"m"}`, wantErr: "integer or a string"},
		{name: "null request id", line: `{"jsonrpc":"2.0","id":null,"method":"m"}`, wantErr: "cannot be null"},
		{name: "scalar params", line: `{"jsonrpc":"2.0","method":"m","params":3}`, wantErr: "object or an array"},
		{name: "request with result", line: `{"jsonrpc":"2.0","id":1,"method":"m","result":1}`, wantErr: "no result or error"},
		{name: "result and error", line: `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, wantErr: "not both"},
		{name: "result without id", line: `{"jsonrpc":"2.0","result":1}`, wantErr: "needs an id"},
		{name: "error without id", line: `{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}`, wantErr: "needs an id"},
		{name: "nothing", line: `{"jsonrpc":"2.0","id":1}`, wantErr: "neither"},
		{name: "invalid UTF-8 is JSON-invalid", line: "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}", kind: "notification"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Decode([]byte(tt.line))
			if tt.wantErr != "" {
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				require.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			switch tt.kind {
			case "request":
				require.True(t, m.IsRequest())
				require.Equal(t, tt.id, m.ID.String())
			case "notification":
				require.True(t, m.IsNotification())
			case "response":
				require.True(t, m.IsResponse())
				require.Equal(t, tt.id, m.ID.String())
				require.True(t, m.Error != nil || len(m.Result) > 0)
			case "error-null":
				require.Nil(t, m.ID)
				require.NotNil(t, m.Error)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`,
		`{"jsonrpc":"2.0","method":"n"}`,
		`{"jsonrpc":"2.0","id":"x","result":null}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"e"}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		shapes := 0
		for _, ok := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse(), m.ID == nil && m.Error != nil} {
			if ok {
				shapes++
			}
		}
		if shapes != 1 {
			t.Fatalf("message %+v has %d shapes", m, shapes)
		}
		if m.ID != nil {
			// The id is echoed back as valid JSON.
			if !json.Valid([]byte(m.ID.String())) {
				t.Fatalf("id %q is not JSON", m.ID.String())
			}
		}
	})
}

// pair connects two Conns through pipes and runs them until the test ends.
func pair(t *testing.T, a, b Options) (*Conn, *Conn) {
	t.Helper()
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	ca, cb := New(ar, aw, a), New(br, bw, b)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ca.Run(ctx) })
	wg.Go(func() { _ = cb.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		aw.Close()
		bw.Close()
		ar.Close()
		br.Close()
		wg.Wait()
	})
	return ca, cb
}

func TestConn_callsBothWays(t *testing.T) {
	t.Parallel()
	var client *Conn
	notes := make(chan string, 8)
	server := Options{Handler: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case "add":
			var p [2]int
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, &Error{Code: CodeInvalidParams, Message: err.Error()}
			}
			return p[0] + p[1], nil
		case "ask":
			// A handler may call back into the peer while answering.
			var answer string
			if err := client.Call(ctx, "name", nil, &answer); err != nil {
				return nil, err
			}
			return "hello " + answer, nil
		case "boom":
			return nil, errors.New("kaput")
		}
		return nil, &Error{Code: CodeMethodNotFound, Message: method}
	}}
	clientOpts := Options{
		Handler: func(context.Context, string, json.RawMessage) (any, error) { return "client", nil },
		OnNotify: func(method string, params json.RawMessage) {
			notes <- method + " " + string(params)
		},
	}
	c, s := pair(t, clientOpts, server)
	client = s // the server's side calls the client through its own Conn
	ctx := t.Context()

	var sum int
	require.NoError(t, c.Call(ctx, "add", []int{2, 3}, &sum))
	require.Equal(t, 5, sum)
	var greeting string
	require.NoError(t, c.Call(ctx, "ask", nil, &greeting))
	require.Equal(t, "hello client", greeting)

	var rpcErr *Error
	require.ErrorAs(t, c.Call(ctx, "boom", nil, nil), &rpcErr)
	require.Equal(t, CodeInternalError, rpcErr.Code)
	require.Equal(t, "kaput", rpcErr.Message)
	require.ErrorAs(t, c.Call(ctx, "add", map[string]int{"a": 1}, nil), &rpcErr)
	require.Equal(t, CodeInvalidParams, rpcErr.Code)
	require.ErrorContains(t, c.Call(ctx, "add", "scalar", nil), "params must be an object or an array", "refused before sending")

	// Notifications arrive in order.
	for i := range 5 {
		require.NoError(t, s.Notify("tick", map[string]int{"n": i}))
	}
	for i := range 5 {
		require.Equal(t, fmt.Sprintf(`tick {"n":%d}`, i), <-notes)
	}

	// Many calls at once are matched to their own answers.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			var got int
			if err := c.Call(ctx, "add", []int{i, i}, &got); err != nil || got != 2*i {
				t.Errorf("add(%d,%d) = %d, %v", i, i, got, err)
			}
		})
	}
	wg.Wait()
}

func TestConn_noHandlerAnswersMethodNotFound(t *testing.T) {
	t.Parallel()
	c, _ := pair(t, Options{}, Options{})
	var rpcErr *Error
	require.ErrorAs(t, c.Call(t.Context(), "anything", nil, nil), &rpcErr)
	require.Equal(t, CodeMethodNotFound, rpcErr.Code)
}

func TestConn_endOfStreamFailsPendingCalls(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	c := New(r, io.Discard, Options{})
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	call := make(chan error, 1)
	go func() { call <- c.Call(context.Background(), "never", nil, nil) }()
	// The peer writes one unrelated notification, then goes away.
	_, err := io.WriteString(w, `{"jsonrpc":"2.0","method":"hi"}`+"\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, <-done, "a clean end of stream")
	require.ErrorIs(t, <-call, ErrClosed)
	require.ErrorIs(t, c.Call(context.Background(), "after", nil, nil), ErrClosed)
}

func TestConn_badLineEndsRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, want string
	}{
		{name: "not json-rpc", input: "hello\n", want: "not a JSON object"},
		{name: "too long", input: `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 200) + `"}` + "\n", want: "line longer than 64 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := New(strings.NewReader(tt.input), io.Discard, Options{MaxLine: 64})
			err := c.Run(context.Background())
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestConn_callHonoursContext(t *testing.T) {
	t.Parallel()
	r, _ := io.Pipe()
	c := New(r, io.Discard, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Call(ctx, "slow", nil, nil), context.DeadlineExceeded)
	c.mu.Lock()
	require.Empty(t, c.pending, "an abandoned call is forgotten")
	c.mu.Unlock()
	r.Close()
}
