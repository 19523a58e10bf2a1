package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeMember(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		line    string
		member  Member
		wantErr string
	}{
		{name: "required, present", line: `{"jsonrpc":"2.0","id":1,"method":"m"}`, member: MemberRequired},
		{name: "required, absent", line: `{"id":1,"method":"m"}`, member: MemberRequired, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "omitted, absent", line: `{"id":1,"method":"initialize","params":{}}`, member: MemberOmitted},
		{name: "omitted, absent response", line: `{"id":1,"result":{"userAgent":"x"}}`, member: MemberOmitted},
		{name: "omitted, present", line: `{"jsonrpc":"2.0","method":"n"}`, member: MemberOmitted},
		{name: "omitted, wrong version", line: `{"jsonrpc":"1.0","method":"n"}`, member: MemberOmitted, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "omitted, null version", line: `{"jsonrpc":null,"method":"n"}`, member: MemberOmitted, wantErr: `"jsonrpc" must be "2.0"`},
		{name: "omitted, still checks shapes", line: `{"id":1}`, member: MemberOmitted, wantErr: "neither"},
		{name: "optional, absent", line: `{"id":"a","error":{"code":-32001,"message":"overloaded"}}`, member: MemberOptional},
		{name: "optional, present", line: `{"jsonrpc":"2.0","id":2,"result":null}`, member: MemberOptional},
		{name: "optional, wrong version", line: `{"jsonrpc":"2","id":2,"result":null}`, member: MemberOptional, wantErr: `"jsonrpc" must be "2.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeMember([]byte(tt.line), tt.member)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// recorder keeps a copy of what goes through a writer.
type recorder struct {
	w  io.Writer
	mu sync.Mutex
	b  bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.b.Write(p)
	r.mu.Unlock()
	return r.w.Write(p)
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.b.Bytes())
}

// splitWire splits recorded output into its messages by framing, checking
// the framing as it goes.
func splitWire(t *testing.T, b []byte, f Framing) [][]byte {
	t.Helper()
	var out [][]byte
	br := bufio.NewReader(bytes.NewReader(b))
	for {
		var m []byte
		var err error
		if f == FramingContentLength {
			m, err = readFramed(br, DefaultMaxLine)
		} else {
			m, err = br.ReadBytes('\n')
			if err == nil {
				m = bytes.TrimSuffix(m, []byte("\n"))
			} else if len(m) > 0 {
				t.Fatalf("unterminated line %q", m)
			}
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if f == FramingContentLength {
			require.NotContains(t, string(m), "\n", "a body carries no trailing newline")
		}
		out = append(out, m)
	}
}

// TestConn_dialects: every Framing and Member round trips calls both
// ways, notifications, errors and pre-encoded results, and writes what
// its dialect says.
func TestConn_dialects(t *testing.T) {
	t.Parallel()
	for _, f := range []Framing{FramingLine, FramingContentLength} {
		for _, mb := range []Member{MemberRequired, MemberOmitted, MemberOptional} {
			t.Run(fmt.Sprintf("framing=%d/member=%d", f, mb), func(t *testing.T) {
				t.Parallel()
				ar, bw := io.Pipe()
				br, aw := io.Pipe()
				recA, recB := &recorder{w: aw}, &recorder{w: bw}
				notes := make(chan string, 4)
				var b *Conn
				a := New(ar, recA, Options{Framing: f, Member: mb,
					Handler: func(context.Context, string, json.RawMessage) (any, error) { return "a", nil },
					OnNotify: func(method string, params json.RawMessage) {
						notes <- method + " " + string(params)
					}})
				b = New(br, recB, Options{Framing: f, Member: mb, Handler: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
					switch method {
					case "echo":
						return params, nil
					case "back":
						var s string
						err := b.Call(ctx, "name", nil, &s)
						return "hello " + s, err
					case "encoded":
						return &Encoded{JSON: json.RawMessage(`{"content":"x\ny\r\n"}`)}, nil
					}
					return nil, &Error{Code: CodeMethodNotFound, Message: method}
				}})
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { _ = a.Run(ctx) })
				wg.Go(func() { _ = b.Run(ctx) })
				defer func() {
					cancel()
					aw.Close()
					bw.Close()
					wg.Wait()
				}()

				var got map[string]any
				require.NoError(t, a.Call(ctx, "echo", map[string]any{"text": "line\nbreak", "n": 1}, &got))
				require.Equal(t, map[string]any{"text": "line\nbreak", "n": 1.0}, got)
				var s string
				require.NoError(t, a.Call(ctx, "back", nil, &s))
				require.Equal(t, "hello a", s)
				var enc struct{ Content string }
				require.NoError(t, a.Call(ctx, "encoded", nil, &enc))
				require.Equal(t, "x\ny\r\n", enc.Content)
				var rpcErr *Error
				require.ErrorAs(t, a.Call(ctx, "nope", nil, nil), &rpcErr)
				require.Equal(t, CodeMethodNotFound, rpcErr.Code)
				require.NoError(t, b.Notify("tick", []int{1}))
				require.Equal(t, "tick [1]", <-notes)

				msgs := append(splitWire(t, recA.bytes(), f), splitWire(t, recB.bytes(), f)...)
				require.Len(t, msgs, 11, "4 calls and 1 callback, their 5 answers, 1 notification")
				for _, m := range msgs {
					var fields map[string]json.RawMessage
					require.NoError(t, json.Unmarshal(m, &fields), "%q", m)
					v, has := fields["jsonrpc"]
					if mb == MemberOmitted {
						require.False(t, has, "member written: %s", m)
					} else {
						require.True(t, has, "member missing: %s", m)
						require.JSONEq(t, `"2.0"`, string(v))
					}
				}
			})
		}
	}
}

// TestConn_peerWithoutMember: a Codex app-server peer writes no
// "jsonrpc" member; MemberOmitted and MemberOptional understand it,
// MemberRequired (ACP, the default) refuses it as before.
func TestConn_peerWithoutMember(t *testing.T) {
	t.Parallel()
	input := `{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"t"}}` + "\n" +
		`{"method":"turn/completed","params":{"turn":{"id":"u"}}}` + "\n"
	for _, tt := range []struct {
		member  Member
		wantErr string
		want    string
	}{
		{member: MemberRequired, wantErr: `"jsonrpc" must be "2.0"`},
		{member: MemberOmitted, want: `{"id":0,"result":{"decision":"accept"}}` + "\n"},
		{member: MemberOptional, want: `{"jsonrpc":"2.0","id":0,"result":{"decision":"accept"}}` + "\n"},
	} {
		t.Run(fmt.Sprint(tt.member), func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			var notes []string
			c := New(strings.NewReader(input), &out, Options{Member: tt.member,
				Handler: func(context.Context, string, json.RawMessage) (any, error) {
					return map[string]string{"decision": "accept"}, nil
				},
				OnNotify: func(method string, _ json.RawMessage) { notes = append(notes, method) }})
			err := c.Run(context.Background())
			if tt.wantErr != "" {
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				require.ErrorContains(t, err, tt.wantErr)
				require.Empty(t, out.String())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, out.String())
			require.Equal(t, []string{"turn/completed"}, notes)
		})
	}
}

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// TestConn_framedInput: headers as LSP peers write them are understood.
func TestConn_framedInput(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","method":"session.event","params":{"event":{"type":"session.idle"}}}`
	pretty := "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"m\"\n}"
	input := frame(body) +
		fmt.Sprintf("content-length:%d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s", len(body), body) +
		fmt.Sprintf("Content-Type: application/json; charset=\"UTF8\"\r\nX-Other: ignored\r\nContent-Length: \t%d \r\n\r\n%s", len(pretty), pretty) +
		frame(body)
	var notes []string
	c := New(strings.NewReader(input), io.Discard, Options{Framing: FramingContentLength, MaxLine: len(body),
		OnNotify: func(method string, _ json.RawMessage) { notes = append(notes, method) }})
	require.NoError(t, c.Run(context.Background()), "a clean end of stream between messages")
	require.Equal(t, []string{"session.event", "session.event", "m", "session.event"}, notes)
}

// TestConn_badHeaderEndsRun: each broken header block ends Run with a
// *DecodeError naming what is wrong, after the messages before it.
func TestConn_badHeaderEndsRun(t *testing.T) {
	t.Parallel()
	good := frame(`{"jsonrpc":"2.0","method":"before"}`)
	tests := []struct {
		name, input, want string
		last              bool // nothing follows on the stream
	}{
		{name: "LF only", input: "Content-Length: 2\n\n{}", want: "header line not ended by CRLF"},
		{name: "LF ends the block", input: "Content-Length: 2\r\n\n{}", want: "header line not ended by CRLF"},
		{name: "no colon", input: "Content-Length 2\r\n\r\n{}", want: "header line without a colon"},
		{name: "empty name", input: ": 2\r\n\r\n{}", want: "malformed header name"},
		{name: "space in name", input: "Content Length: 2\r\n\r\n{}", want: "malformed header name"},
		{name: "leading space", input: " Content-Length: 2\r\n\r\n{}", want: "malformed header name"},
		{name: "control in value", input: "Content-Length: 2\x00\r\n\r\n{}", want: "not printable ASCII"},
		{name: "non-ASCII value", input: "Content-Type: caf\xc3\xa9\r\nContent-Length: 2\r\n\r\n{}", want: "not printable ASCII"},
		{name: "bare body", input: `{"jsonrpc":"2.0","method":"m"}` + "\n", want: "header line not ended by CRLF"},
		{name: "bare body, CRLF", input: `{"jsonrpc":"2.0","method":"m"}` + "\r\n", want: "malformed header name"},
		{name: "missing length", input: "Content-Type: application/json\r\n\r\n{}", want: "no Content-Length"},
		{name: "empty block", input: "\r\n{}", want: "no Content-Length"},
		{name: "empty length", input: "Content-Length: \r\n\r\n", want: "Content-Length is not a number"},
		{name: "negative length", input: "Content-Length: -1\r\n\r\n", want: "negative Content-Length"},
		{name: "plus sign", input: "Content-Length: +2\r\n\r\n{}", want: "Content-Length is not a number"},
		{name: "hex length", input: "Content-Length: 0x2\r\n\r\n{}", want: "Content-Length is not a number"},
		{name: "two numbers", input: "Content-Length: 2 2\r\n\r\n{}", want: "Content-Length is not a number"},
		{name: "oversize length", input: "Content-Length: 65\r\n\r\n", want: "Content-Length longer than 64 bytes"},
		{name: "overflowing length", input: "Content-Length: 99999999999999999999999\r\n\r\n", want: "Content-Length longer than 64 bytes"},
		{name: "duplicate length", input: "Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}", want: "duplicate Content-Length"},
		{name: "bad charset", input: "Content-Type: application/json; charset=latin1\r\nContent-Length: 2\r\n\r\n{}", want: `unsupported charset "latin1"`},
		{name: "header block too long", input: "X-Pad: " + strings.Repeat("p", MaxHeader) + "\r\nContent-Length: 2\r\n\r\n{}", want: "header block longer than 4096 bytes"},
		{name: "many headers", input: strings.Repeat("X: y\r\n", MaxHeader/6+1) + "Content-Length: 2\r\n\r\n{}", want: "header block longer than 4096 bytes"},
		{name: "end inside headers", input: "Content-Length: 2\r\n", want: "stream ended inside a header block", last: true},
		{name: "end inside a header line", input: "Content-Len", want: "stream ended inside a header block", last: true},
		{name: "end inside body", input: "Content-Length: 10\r\n\r\n{\"a\"", want: "stream ended after 4 of 10 body bytes", last: true},
		{name: "zero length", input: "Content-Length: 0\r\n\r\n", want: "not a JSON object"},
		{name: "body not JSON-RPC", input: frame(`{"jsonrpc":"2.0","id":1}`), want: "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var notes []string
			input := good + tt.input
			if !tt.last {
				input += good
			}
			c := New(strings.NewReader(input), io.Discard, Options{Framing: FramingContentLength, MaxLine: 64,
				OnNotify: func(method string, _ json.RawMessage) { notes = append(notes, method) }})
			err := c.Run(context.Background())
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, []string{"before"}, notes, "the stream ends at the bad message")
			require.ErrorIs(t, c.Call(context.Background(), "after", nil, nil), ErrClosed)
		})
	}
}

// TestConn_framedBoundsAndErrors: the handler bound, ErrWrite and
// ErrClosed hold with Content-Length framing and no member.
func TestConn_framedBoundsAndErrors(t *testing.T) {
	t.Parallel()
	opts := Options{Framing: FramingContentLength, Member: MemberOmitted}

	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		release := make(chan struct{})
		started := make(chan struct{}, 3)
		o := opts
		o.MaxHandlers = 2
		o.Handler = func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
			started <- struct{}{}
			<-release
			return &Encoded{JSON: json.RawMessage(`"done"`)}, nil
		}
		c := New(inR, outW, o)
		var wg sync.WaitGroup
		wg.Go(func() { _ = c.Run(context.Background()) })
		answers := make(chan []byte, 3)
		wg.Go(func() {
			br := bufio.NewReader(outR)
			for {
				m, err := readFramed(br, DefaultMaxLine)
				if err != nil {
					close(answers)
					return
				}
				answers <- m
			}
		})
		defer func() {
			inW.Close()
			outR.Close()
			wg.Wait()
		}()
		for i := range 2 {
			_, err := io.WriteString(inW, frame(fmt.Sprintf(`{"id":%d,"method":"block"}`, i)))
			require.NoError(t, err)
			<-started
		}
		_, err := io.WriteString(inW, frame(`{"id":"third","method":"block"}`))
		require.NoError(t, err)
		require.JSONEq(t, fmt.Sprintf(`{"id":"third","error":{"code":%d,"message":"busy: 2 requests are being handled; try again later"}}`, CodeBusy), string(<-answers))
		close(release)
		got := []string{string(<-answers), string(<-answers)}
		require.ElementsMatch(t, []string{`{"id":0,"result":"done"}`, `{"id":1,"result":"done"}`}, got, "pre-encoded, framed, no member")
	})

	t.Run("write fails", func(t *testing.T) {
		t.Parallel()
		r, w := io.Pipe()
		pr, pw := io.Pipe()
		pr.Close()
		c := New(r, pw, opts)
		require.ErrorIs(t, c.Notify("n", nil), ErrWrite)
		_, err := c.Send("m", nil)
		require.ErrorIs(t, err, ErrWrite)
		w.Close()
		require.NoError(t, c.Run(context.Background()))
	})

	t.Run("end of stream fails calls", func(t *testing.T) {
		t.Parallel()
		r, w := io.Pipe()
		c := New(r, io.Discard, opts)
		done := make(chan error, 1)
		go func() { done <- c.Run(context.Background()) }()
		p, err := c.Send("never", nil)
		require.NoError(t, err)
		_, err = io.WriteString(w, frame(`{"method":"hi"}`))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, <-done)
		require.ErrorIs(t, p.Wait(context.Background(), nil), ErrClosed)
		require.ErrorIs(t, c.Call(context.Background(), "after", nil, nil), ErrClosed)
	})
}

func TestNew_unknownDialectPanics(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { New(strings.NewReader(""), io.Discard, Options{Framing: 9}) })
	require.Panics(t, func() { New(strings.NewReader(""), io.Discard, Options{Member: -1}) })
}

func FuzzReadFramed(f *testing.F) {
	for _, s := range []string{
		frame(`{"jsonrpc":"2.0","method":"m"}`),
		frame(`{}`) + frame(`[]`),
		"Content-Length: 3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\nabc",
		"Content-Length: -1\r\n\r\n",
		"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
		"Content-Length: 99999999999999999999\r\n\r\n",
		"Content-Length: 5\n\nabcde",
		"\r\n", "", ":\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := bytes.NewReader(data)
		br := bufio.NewReaderSize(rd, 64<<10)
		consumed := 0
		for {
			body, err := readFramed(br, max)
			if errors.Is(err, io.EOF) {
				if consumed != len(data) {
					t.Fatalf("clean end with %d bytes unread", len(data)-consumed)
				}
				return
			}
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				if len(de.Line) > 200+len("…") {
					t.Fatalf("error carries %d bytes of header", len(de.Line))
				}
				return
			}
			if len(body) > max {
				t.Fatalf("body of %d bytes beyond %d", len(body), max)
			}
			// What was read is exactly a header block and the body it
			// announces.
			start := consumed
			consumed = len(data) - rd.Len() - br.Buffered()
			msg := data[start:consumed]
			if !bytes.HasSuffix(msg, body) || !bytes.Contains(msg[:len(msg)-len(body)], []byte("\r\n\r\n")) {
				t.Fatalf("message %q does not end in its body %q after a header block", msg, body)
			}
			// The writer frames it back to something the reader reads
			// the same.
			var out bytes.Buffer
			c := New(strings.NewReader(""), &out, Options{Framing: FramingContentLength})
			require.NoError(t, c.writeParts(body))
			again, err := readFramed(bufio.NewReader(&out), max)
			require.NoError(t, err)
			require.Equal(t, body, again)
		}
	})
}
