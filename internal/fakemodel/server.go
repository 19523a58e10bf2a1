package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultModel is the model id /v1/models lists.
const DefaultModel = "fake-model"

// TitleText answers requests that offer no tools (OpenCode's title
// generation).
const TitleText = "Fake conversation"

// Config configures a Server.
type Config struct {
	// Addr is where to listen. Default 127.0.0.1:0.
	Addr string
	// Script holds the first replies.
	Script Script
	// Model is the id /v1/models lists. Default DefaultModel.
	Model string
	// Logger records each request. Default: discard.
	Logger *slog.Logger
}

// Captured is one request as the server received it. Its Request says
// which API it used (API) and holds its conversation translated into
// Messages, whatever the wire format.
type Captured struct {
	// Seq numbers requests from 1.
	Seq  int
	Path string
	// Authorization is the request's Authorization header.
	Authorization string
	// Header is all of the request's headers (x-api-key and
	// anthropic-version for Messages requests, say).
	Header http.Header
	Request
	// Aux: the request offered no tools, took no scripted reply and got
	// TitleText.
	Aux bool
}

// Server is a fake model service on a loopback socket.
type Server struct {
	cfg  Config
	srv  *http.Server
	ln   net.Listener
	base context.Context // ends held and delayed replies on Stop
	end  context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	queue    []Reply       // guarded by mu
	requests []Captured    // guarded by mu
	changed  chan struct{} // guarded by mu; closed and replaced on each request
}

// New builds a server; Start listens.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, queue: append([]Reply(nil), cfg.Script.Replies...), changed: make(chan struct{})}
	s.base, s.end = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	for _, f := range []format{chatFormat, responsesFormat, messagesFormat} {
		for _, p := range f.paths {
			mux.HandleFunc("POST "+p, s.handle(f))
		}
	}
	for _, p := range []string{"/v1/models", "/models"} {
		mux.HandleFunc("GET "+p, s.models)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return s.base }}
	return s
}

// Start listens on the configured address and serves until Stop.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("fake model: listen: %w", err)
	}
	s.ln = ln
	s.Serve(ln)
	return nil
}

// Serve also serves on l (a unix socket, say) until Stop.
func (s *Server) Serve(l net.Listener) {
	s.wg.Go(func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Warn("fake model: serve", "err", err)
		}
	})
}

// Addr is the TCP address Start listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the API's base URL, ending in /v1: the base URL OpenAI clients
// (OpenCode, Codex) take.
func (s *Server) URL() string { return s.Root() + "/v1" }

// Root is the server's URL without a path: the base URL Anthropic clients
// (Claude Code's ANTHROPIC_BASE_URL) take, adding /v1/messages.
func (s *Server) Root() string { return "http://" + s.Addr() }

// Stop ends held replies, closes the listeners and waits for the
// handlers. Safe more than once and before Start.
func (s *Server) Stop() {
	s.end()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	s.wg.Wait()
}

// Push queues replies after those already queued.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, r...)
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Captured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Captured(nil), s.requests...)
}

// WaitRequests waits until at least n requests matching keep (nil keeps
// all) have arrived and returns the matching ones.
func (s *Server) WaitRequests(ctx context.Context, n int, keep func(Captured) bool) ([]Captured, error) {
	for {
		s.mu.Lock()
		var got []Captured
		for _, c := range s.requests {
			if keep == nil || keep(c) {
				got = append(got, c)
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, fmt.Errorf("fake model: %d of %d requests: %w", len(got), n, ctx.Err())
		}
	}
}

// Turn keeps the requests that offer tools: the agent's own turns, not
// its auxiliary requests.
func Turn(c Captured) bool { return !c.Aux }

// take records a request and picks its reply.
func (s *Server) take(r *http.Request, req Request) (Captured, Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Captured{Seq: len(s.requests) + 1, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
		Header: r.Header.Clone(), Request: req, Aux: len(req.Tools) == 0}
	s.requests = append(s.requests, c)
	close(s.changed)
	s.changed = make(chan struct{})
	switch {
	case c.Aux:
		return c, Reply{Text: []string{TitleText}}
	case len(s.queue) > 0:
		r := s.queue[0]
		s.queue = s.queue[1:]
		return c, r
	}
	return c, defaultReply(req)
}

// defaultReply echoes the last user message, or acknowledges tool
// results.
func defaultReply(req Request) Reply {
	if req.answersTool() {
		return Reply{Text: []string{"FAKE-DONE ", "after ", "tool"}}
	}
	text := "FAKE-REPLY: " + req.LastUser()
	var chunks []string
	for len(text) > 0 {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			chunks = append(chunks, text)
			break
		}
		chunks = append(chunks, text[:i+1])
		text = text[i+1:]
	}
	return Reply{Text: chunks}
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.cfg.Model, "object": "model", "created": 0, "owned_by": "jam"},
	}})
}

// format is one wire format: where it is served, how its requests are
// read and how its answers and errors are written.
type format struct {
	paths []string
	// decode reads a request body; errors wrap jam.ErrInvalid.
	decode func(io.Reader) (Request, error)
	// fail writes an error answer in the format's shape.
	fail func(w http.ResponseWriter, status int, msg string)
	// whole is the answer when the request does not ask to stream.
	whole func(c Captured, r Reply) any
	// stream writes the answer as server-sent events.
	stream func(e *events, c Captured, r Reply)
}

// handle serves one format: it decodes the request, records it, takes its
// reply and answers, honouring the reply's hold, delay and status.
func (s *Server) handle(f format) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := f.decode(http.MaxBytesReader(w, r.Body, MaxRequest))
		if err != nil {
			f.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		c, reply := s.take(r, req)
		s.cfg.Logger.Info("fake model: request", "seq", c.Seq, "api", req.API, "model", req.Model, "stream", req.Stream,
			"messages", len(req.Messages), "tools", len(req.Tools), "aux", c.Aux)
		ctx := r.Context()
		if reply.Hold != nil {
			select {
			case <-reply.Hold:
			case <-ctx.Done():
				return
			}
		}
		if reply.Late != nil {
			reply = reply.Late()
			reply.Hold, reply.Late = nil, nil
		}
		if reply.Status != 0 {
			if pause(ctx, time.Duration(reply.Delay)) {
				f.fail(w, reply.Status, fmt.Sprintf("scripted error %d", reply.Status))
			}
			return
		}
		if !req.Stream {
			if pause(ctx, time.Duration(reply.Delay)) {
				writeJSON(w, http.StatusOK, f.whole(c, reply))
			}
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		e := &events{ctx: ctx, w: w, delay: time.Duration(reply.Delay)}
		e.fl, _ = w.(http.Flusher)
		f.stream(e, c, reply)
	}
}

// events writes server-sent events, each after the reply's delay. Once a
// write fails (the client went away, the server is stopping) it writes
// nothing more.
type events struct {
	ctx    context.Context
	w      io.Writer
	fl     http.Flusher
	delay  time.Duration
	failed bool
}

// send writes one event: "event: name" (when name is set) and "data: "
// with v as JSON. It returns false once the stream has failed.
func (e *events) send(name string, v any) bool {
	if e.failed || !pause(e.ctx, e.delay) {
		e.failed = true
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.failed = true
		return false
	}
	var buf strings.Builder
	if name != "" {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", b)
	return e.raw(buf.String())
}

// raw writes text as it is, without the delay.
func (e *events) raw(text string) bool {
	if e.failed {
		return false
	}
	if _, err := io.WriteString(e.w, text); err != nil {
		e.failed = true
		return false
	}
	if e.fl != nil {
		e.fl.Flush()
	}
	return true
}

// tokens counts words in and out, which is all a fake needs.
func tokens(req Request, reply Reply) (in, out int) {
	for _, m := range req.Messages {
		in += len(strings.Fields(string(m.Content)))
	}
	out = len(strings.Fields(strings.Join(reply.Text, "")))
	if reply.ToolCall != nil {
		out++
	}
	return in, out
}

// callID is the id of a reply's tool call: its own, or prefix and the
// request's number.
func callID(prefix string, seq int, tc *ToolCallReply) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("%s%d", prefix, seq)
}

// pause waits d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes an error in OpenAI's envelope.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}
