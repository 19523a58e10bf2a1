// Package jsonrpc is a JSON-RPC 2.0 peer over a byte stream, both sides
// sending requests and notifications, as the Agent Client Protocol, the
// Codex app-server and the Copilot SDK wire speak on a child's stdio.
//
// Two options set the dialect. Framing is FramingLine (the default: one
// message per line, as ACP and Codex write) or FramingContentLength (the
// LSP base protocol, as Copilot's SDK wire writes: a header block of
// "Name: value" lines ended by CRLF, an empty line, then exactly
// Content-Length bytes of JSON; Content-Type is allowed, its charset if any
// must be UTF-8, other headers are ignored). Member is MemberRequired (the
// default: "jsonrpc":"2.0" is written and a message without it is refused,
// as ACP requires), MemberOmitted (never written, accepted if present, as
// the Codex app-server speaks) or MemberOptional (written, and a message
// with or without it accepted). Whichever the dialect, a "jsonrpc" member
// that is present must be "2.0".
//
// A Conn reads with Run, dispatching responses to the Call waiting for
// them, requests to the Handler (each on its own goroutine, so a handler
// may call back), and notifications to OnNotify (in order, on the reading
// goroutine). Messages are bounded (MaxLine, 8 MiB by default: a line, or a
// Content-Length body), and so is a header block (MaxHeader, 4 KiB); a
// message that is too long or not JSON-RPC, and a header block that is
// malformed, too long, or has a Content-Length missing, repeated, negative,
// not a number or beyond MaxLine, ends Run with a *DecodeError, since a peer
// that breaks framing cannot be trusted to be understood afterwards. So
// does a stream that ends inside a header block or a body. A body is read
// as it arrives: a header announcing MaxLine bytes costs memory only as
// they come.
//
// Handlers are bounded too: at most MaxHandlers run at once (64 by
// default), and a request that arrives while they all do is answered at
// once with CodeBusy, its handler never run. Refusing rather than queueing
// keeps the reading goroutine free: a handler waiting on its own call back
// to the peer needs that goroutine to read the answer, so waiting for a
// free handler there could deadlock, and a queue would only move the
// unbounded growth. A peer flooding requests thus costs at most
// MaxHandlers goroutines.
package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Version is the only protocol version spoken.
const Version = "2.0"

// Standard error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeBusy answers a request that arrived while MaxHandlers handlers
	// were running; the peer may send it again later. It is in the range
	// JSON-RPC leaves to implementations, away from the codes ACP uses.
	CodeBusy = -32099
)

// DefaultMaxHandlers bounds the request handlers a Conn runs at once.
const DefaultMaxHandlers = 64

// DefaultMaxLine bounds one message.
const DefaultMaxLine = 8 << 20

// MaxHeader bounds a Content-Length header block, its ending empty line
// included.
const MaxHeader = 4 << 10

// Framing is how messages are delimited on the stream.
type Framing int

const (
	// FramingLine is one message per line (ACP, the Codex app-server).
	FramingLine Framing = iota
	// FramingContentLength is the LSP base protocol: a header block
	// giving the Content-Length of the JSON that follows (the Copilot
	// SDK wire).
	FramingContentLength
)

// Member is how the "jsonrpc":"2.0" member is treated.
type Member int

const (
	// MemberRequired writes the member and refuses a message without it
	// (ACP).
	MemberRequired Member = iota
	// MemberOmitted never writes the member and accepts a message with
	// or without it (the Codex app-server).
	MemberOmitted
	// MemberOptional writes the member and accepts a message with or
	// without it.
	MemberOptional
)

// Error is a JSON-RPC error object, returned by Call when the peer
// answers with one, and sent when a Handler returns one.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("json-rpc error %d: %s (%s)", e.Code, e.Message, clip(string(e.Data), 200))
	}
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
}

// DecodeError reports a line or body that is not a JSON-RPC 2.0 message,
// or a broken Content-Length header block (Line is then the block).
type DecodeError struct {
	Line   string // the line, clipped
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("json-rpc: bad message (%s): %q", e.Reason, e.Line)
}

// Message is one decoded JSON-RPC message. Exactly one of the shapes
// holds: a request (ID and Method), a notification (Method, no ID), or a
// response (ID and Result or Error).
type Message struct {
	ID     *ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// IsRequest, IsNotification and IsResponse tell the shapes apart.
func (m Message) IsRequest() bool      { return m.ID != nil && m.Method != "" }
func (m Message) IsNotification() bool { return m.ID == nil && m.Method != "" }
func (m Message) IsResponse() bool     { return m.ID != nil && m.Method == "" }

// ID is a request id: a number or a string, kept as its JSON text so it is
// echoed back exactly.
type ID struct{ raw string }

// NumberID returns the id n.
func NumberID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// String returns the id's JSON text.
func (id ID) String() string { return id.raw }

// MarshalJSON writes the id as it was received.
func (id ID) MarshalJSON() ([]byte, error) { return []byte(id.raw), nil }

// wire is the JSON shape of every message.
type wire struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Decode parses one line as MemberRequired does. It accepts exactly the
// shapes of JSON-RPC 2.0: "jsonrpc":"2.0", an id that is a number or a string (null only in an
// error response), a non-empty method for requests and notifications, and
// for a response either a result or an error, not both. A result of null
// is a result.
func Decode(line []byte) (Message, error) { return DecodeMember(line, MemberRequired) }

// DecodeMember parses one message as Decode does, the "jsonrpc" member
// treated as member says: with MemberOmitted or MemberOptional it may be
// absent, but if present it must still be "2.0".
func DecodeMember(line []byte, member Member) (Message, error) {
	bad := func(reason string) (Message, error) {
		return Message{}, &DecodeError{Line: clip(string(line), 200), Reason: reason}
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return bad("not a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return bad("invalid JSON: " + err.Error())
	}
	var w wire
	if err := json.Unmarshal(line, &w); err != nil {
		return bad("invalid field: " + err.Error())
	}
	if _, has := fields["jsonrpc"]; (has || member == MemberRequired) && w.JSONRPC != Version {
		return bad(`"jsonrpc" must be "2.0"`)
	}
	var m Message
	idRaw, hasID := fields["id"]
	if hasID && !bytes.Equal(bytes.TrimSpace(idRaw), []byte("null")) {
		id, err := parseID(idRaw)
		if err != nil {
			return bad(err.Error())
		}
		m.ID = &id
	}
	_, hasMethod := fields["method"]
	_, hasResult := fields["result"]
	switch {
	case hasMethod:
		if w.Method == "" {
			return bad("empty method")
		}
		if hasResult || w.Error != nil {
			return bad("a request carries no result or error")
		}
		if hasID && m.ID == nil {
			return bad("a request id cannot be null")
		}
		if p := bytes.TrimSpace(w.Params); len(p) > 0 && p[0] != '{' && p[0] != '[' && !bytes.Equal(p, []byte("null")) {
			return bad("params must be an object or an array")
		}
		m.Method, m.Params = w.Method, w.Params
	case hasResult && w.Error != nil:
		return bad("a response carries a result or an error, not both")
	case hasResult:
		if m.ID == nil {
			return bad("a result needs an id")
		}
		m.Result = w.Result
		if len(bytes.TrimSpace(m.Result)) == 0 {
			m.Result = json.RawMessage("null")
		}
	case w.Error != nil:
		if !hasID {
			return bad("an error response needs an id (null allowed)")
		}
		m.Error = w.Error
	default:
		return bad("neither a method nor a result nor an error")
	}
	return m, nil
}

func parseID(raw json.RawMessage) (ID, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return ID{}, errors.New("id is not a valid string")
		}
		b, _ := json.Marshal(s)
		return ID{raw: string(b)}, nil
	default:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return ID{}, errors.New("id must be an integer or a string")
		}
		return NumberID(n), nil
	}
}

// Handler answers a request from the peer. A returned *Error is sent as
// is; any other error becomes an internal error.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Options configure a Conn.
type Options struct {
	// Handler answers requests; nil answers every request with
	// method-not-found.
	Handler Handler
	// OnNotify receives notifications in order; nil drops them.
	OnNotify func(method string, params json.RawMessage)
	// OnRequest, when set, sees each request on the reading goroutine,
	// in order with the notifications, before its Handler starts: a
	// notification that follows a request on the wire (a cancel) is then
	// never taken for one that came before it.
	OnRequest func(method string, params json.RawMessage)
	// MaxLine bounds one message (a line, or a Content-Length body);
	// default DefaultMaxLine.
	MaxLine int
	// MaxHandlers bounds the handlers running at once; a request beyond
	// is answered with CodeBusy (and OnRequest does not see it). Default
	// DefaultMaxHandlers.
	MaxHandlers int
	// Framing delimits messages; default FramingLine.
	Framing Framing
	// Member says whether "jsonrpc":"2.0" is written and required;
	// default MemberRequired.
	Member Member
}

// Encoded is a result already encoded as JSON, on one line (as
// json.Marshal writes it): a Handler returning one has it written as is,
// not copied or checked again, and Written (if set) is called
// once the response is written or its write has failed, so a handler can
// bound what its answers hold in memory until then.
type Encoded struct {
	JSON    json.RawMessage
	Written func()
}

// Conn is one JSON-RPC peer.
type Conn struct {
	r    io.Reader
	opts Options

	wmu sync.Mutex // serializes writes: one message each
	w   io.Writer

	mu      sync.Mutex
	nextID  int64                   // guarded by mu
	pending map[string]chan Message // guarded by mu: calls by id text
	done    chan struct{}           // closed when Run ends
	err     error                   // guarded by mu: why Run ended
	handler sync.WaitGroup          // request handlers in flight
	slots   chan struct{}           // one per running handler
}

// New builds a Conn reading r and writing w.
func New(r io.Reader, w io.Writer, opts Options) *Conn {
	if opts.MaxLine == 0 {
		opts.MaxLine = DefaultMaxLine
	}
	if opts.MaxHandlers <= 0 {
		opts.MaxHandlers = DefaultMaxHandlers
	}
	if opts.Framing != FramingLine && opts.Framing != FramingContentLength {
		panic(fmt.Sprintf("jsonrpc: unknown Framing %d", opts.Framing))
	}
	if opts.Member != MemberRequired && opts.Member != MemberOmitted && opts.Member != MemberOptional {
		panic(fmt.Sprintf("jsonrpc: unknown Member %d", opts.Member))
	}
	return &Conn{r: r, w: w, opts: opts, pending: map[string]chan Message{}, done: make(chan struct{}),
		slots: make(chan struct{}, opts.MaxHandlers)}
}

// ErrClosed is returned by calls on a Conn whose Run has ended.
var ErrClosed = errors.New("json-rpc: connection closed")

// ErrWrite wraps a failure to write to the stream: the peer no longer
// reads (for a child process, often the first sign that it died, before
// its output ends).
var ErrWrite = errors.New("json-rpc: write failed")

// Run reads messages until the stream ends, ctx ends, or a bad message; it
// returns nil at a clean end of stream. Pending calls then fail with
// ErrClosed. Run waits for the request handlers it started.
func (c *Conn) Run(ctx context.Context) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := c.read(hctx)
	c.mu.Lock()
	c.err = err
	close(c.done) // under mu: Call checks done under mu before registering
	pending := c.pending
	c.pending = map[string]chan Message{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	cancel()
	c.handler.Wait()
	return err
}

// Done is closed when Run has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

func (c *Conn) read(ctx context.Context) error {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		var line []byte
		var err error
		var got bool
		if c.opts.Framing == FramingContentLength {
			line, err = readFramed(br, c.opts.MaxLine)
			got = err == nil
		} else {
			line, err = readLine(br, c.opts.MaxLine)
			got = len(bytes.TrimSpace(line)) > 0
		}
		if got {
			m, derr := DecodeMember(line, c.opts.Member)
			if derr != nil {
				return derr
			}
			c.dispatch(ctx, m)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// readLine reads one line of at most max bytes (without its newline).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 {
			return nil, &DecodeError{Line: clip(string(append(buf, chunk...)), 200), Reason: fmt.Sprintf("line longer than %d bytes", max)}
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(buf, []byte("\n")), err
	}
}

// readFramed reads one Content-Length framed body of at most max bytes.
// It returns io.EOF when the stream ends before a message starts.
func readFramed(br *bufio.Reader, max int) ([]byte, error) {
	var block []byte
	bad := func(reason string) ([]byte, error) {
		return nil, &DecodeError{Line: clip(string(block), 200), Reason: reason}
	}
	length := int64(-1)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(block)+len(chunk) > MaxHeader {
			block = append(block, chunk...)
			return bad(fmt.Sprintf("header block longer than %d bytes", MaxHeader))
		}
		block = append(block, chunk...)
		if err != nil {
			if errors.Is(err, io.EOF) && len(block) == 0 {
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return bad("stream ended inside a header block")
			}
			return nil, err
		}
		line, ok := bytes.CutSuffix(chunk, []byte("\r\n"))
		if !ok {
			return bad("header line not ended by CRLF")
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return bad("header line without a colon")
		}
		if !isToken(name) {
			return bad("malformed header name")
		}
		for _, b := range value {
			if (b < 0x20 && b != '\t') || b >= 0x7f {
				return bad("header value is not printable ASCII")
			}
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length >= 0 {
				return bad("duplicate Content-Length")
			}
			if len(value) > 0 && value[0] == '-' {
				return bad("negative Content-Length")
			}
			for _, b := range value {
				if b < '0' || b > '9' {
					return bad("Content-Length is not a number")
				}
			}
			n, err := strconv.ParseInt(string(value), 10, 64)
			if len(value) == 0 || (err != nil && !errors.Is(err, strconv.ErrRange)) {
				return bad("Content-Length is not a number")
			}
			if err != nil || n > int64(max) {
				return bad(fmt.Sprintf("Content-Length longer than %d bytes", max))
			}
			length = n
		case bytes.EqualFold(name, []byte("Content-Type")):
			for _, p := range bytes.Split(value, []byte(";"))[1:] {
				k, v, _ := bytes.Cut(bytes.TrimSpace(p), []byte("="))
				if !bytes.EqualFold(k, []byte("charset")) {
					continue
				}
				v = bytes.Trim(v, `"`)
				if !bytes.EqualFold(v, []byte("utf-8")) && !bytes.EqualFold(v, []byte("utf8")) {
					return bad("unsupported charset " + strconv.Quote(string(v)))
				}
			}
		}
	}
	if length < 0 {
		return bad("no Content-Length")
	}
	// Read as it arrives: a header is not trusted to size an allocation.
	var body bytes.Buffer
	n, err := io.CopyN(&body, br, length)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return bad(fmt.Sprintf("stream ended after %d of %d body bytes", n, length))
		}
		return nil, err
	}
	return body.Bytes(), nil
}

// isToken tells whether b is a non-empty header name of RFC 9110 token
// characters.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

func (c *Conn) dispatch(ctx context.Context, m Message) {
	switch {
	case m.IsResponse():
		c.mu.Lock()
		ch, ok := c.pending[m.ID.String()]
		delete(c.pending, m.ID.String())
		c.mu.Unlock()
		if ok {
			ch <- m
		}
	case m.IsNotification():
		if c.opts.OnNotify != nil {
			c.opts.OnNotify(m.Method, m.Params)
		}
	case m.IsRequest():
		select {
		case c.slots <- struct{}{}:
		default:
			// Written here, on the reading goroutine: a peer that floods
			// without reading its answers stalls only itself.
			_ = c.write(wire{ID: json.RawMessage(m.ID.String()),
				Error: &Error{Code: CodeBusy, Message: fmt.Sprintf("busy: %d requests are being handled; try again later", c.opts.MaxHandlers)}})
			return
		}
		if c.opts.OnRequest != nil {
			c.opts.OnRequest(m.Method, m.Params)
		}
		c.handler.Go(func() {
			defer func() { <-c.slots }()
			c.answer(ctx, m)
		})
	}
}

func (c *Conn) answer(ctx context.Context, m Message) {
	var result any
	err := &Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method}
	if c.opts.Handler != nil {
		var herr error
		result, herr = c.opts.Handler(ctx, m.Method, m.Params)
		err = nil
		if herr != nil {
			if !errors.As(herr, &err) {
				err = &Error{Code: CodeInternalError, Message: herr.Error()}
			}
		}
	}
	if enc, ok := result.(*Encoded); ok && err == nil {
		_ = c.writeEncoded(m.ID, enc.JSON)
		if enc.Written != nil {
			enc.Written()
		}
		return
	}
	out := wire{ID: json.RawMessage(m.ID.String())}
	if err != nil {
		out.Error = err
	} else {
		b, merr := json.Marshal(result)
		if merr != nil {
			out.Error = &Error{Code: CodeInternalError, Message: "marshal result: " + merr.Error()}
		} else {
			out.Result = b
		}
	}
	_ = c.write(out) // a broken stream ends Run, which fails the calls
}

// Call sends a request and waits for its response, decoding the result
// into result (unless nil). It fails with *Error when the peer answers
// with one, with ErrClosed when the stream ends first, and with ctx's
// error when ctx ends first (the request stays unanswered).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	p, err := c.Send(method, params)
	if err != nil {
		return err
	}
	return p.Wait(ctx, result)
}

// Pending is a request that has been written and awaits its response.
type Pending struct {
	c      *Conn
	id     ID
	method string
	ch     chan Message
}

// Send writes a request and returns once it is on the stream, so that
// whatever the caller writes next (a cancel notification, say) follows it
// on the wire. Wait collects the response.
func (c *Conn) Send(method string, params any) (*Pending, error) {
	p, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return nil, ErrClosed
	default:
	}
	c.nextID++
	pd := &Pending{c: c, id: NumberID(c.nextID), method: method, ch: make(chan Message, 1)}
	c.pending[pd.id.String()] = pd.ch
	c.mu.Unlock()
	if err := c.write(wire{ID: json.RawMessage(pd.id.String()), Method: method, Params: p}); err != nil {
		pd.drop()
		return nil, err
	}
	return pd, nil
}

func (p *Pending) drop() {
	p.c.mu.Lock()
	delete(p.c.pending, p.id.String())
	p.c.mu.Unlock()
}

// Wait waits for the response to a sent request, as Call does; when ctx
// ends first the request stays unanswered and Wait cannot be called again.
func (p *Pending) Wait(ctx context.Context, result any) error {
	select {
	case m, ok := <-p.ch:
		if !ok {
			return ErrClosed
		}
		if m.Error != nil {
			return m.Error
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("json-rpc: %s result: %w", p.method, err)
		}
		return nil
	case <-ctx.Done():
		p.drop()
		return ctx.Err()
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	p, err := marshalParams(params)
	if err != nil {
		return err
	}
	return c.write(wire{Method: method, Params: p})
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("json-rpc: marshal params: %w", err)
	}
	if b[0] != '{' && b[0] != '[' && string(b) != "null" {
		return nil, errors.New("json-rpc: params must be an object or an array")
	}
	return b, nil
}

func (c *Conn) write(m wire) error {
	if c.opts.Member != MemberOmitted {
		m.JSONRPC = Version
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("json-rpc: marshal: %w", err)
	}
	if c.opts.Framing == FramingContentLength {
		b = append([]byte("Content-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"), b...)
	} else {
		b = append(b, '\n')
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	return nil
}

// writeParts writes one message made of parts under the write lock,
// without copying them into one: after its Content-Length header when so
// framed, else as they are (the last part ends the line).
func (c *Conn) writeParts(parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.opts.Framing == FramingContentLength {
		parts = append([][]byte{[]byte("Content-Length: " + strconv.Itoa(n) + "\r\n\r\n")}, parts...)
	}
	for _, b := range parts {
		if _, err := c.w.Write(b); err != nil {
			return fmt.Errorf("%w: %w", ErrWrite, err)
		}
	}
	return nil
}

// writeEncoded writes a result response around an encoded result, in
// pieces under the write lock rather than one copy of it.
func (c *Conn) writeEncoded(id *ID, result json.RawMessage) error {
	head := `{"id":` + id.String() + `,"result":`
	if c.opts.Member != MemberOmitted {
		head = `{"jsonrpc":"2.0","id":` + id.String() + `,"result":`
	}
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	tail := "}\n"
	if c.opts.Framing == FramingContentLength {
		tail = "}"
	}
	return c.writeParts([]byte(head), result, []byte(tail))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
