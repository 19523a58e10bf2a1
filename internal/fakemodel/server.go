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

// Captured is one request as the server received it.
type Captured struct {
	// Seq numbers requests from 1.
	Seq  int
	Path string
	// Authorization is the request's Authorization header.
	Authorization string
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
	for _, p := range []string{"/v1/chat/completions", "/chat/completions"} {
		mux.HandleFunc("POST "+p, s.chat)
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

// URL is the API's base URL, ending in /v1.
func (s *Server) URL() string { return "http://" + s.Addr() + "/v1" }

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
func (s *Server) take(path, auth string, req Request) (Captured, Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Captured{Seq: len(s.requests) + 1, Path: path, Authorization: auth, Request: req, Aux: len(req.Tools) == 0}
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

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	req, err := DecodeRequest(http.MaxBytesReader(w, r.Body, MaxRequest))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	c, reply := s.take(r.URL.Path, r.Header.Get("Authorization"), req)
	s.cfg.Logger.Info("fake model: request", "seq", c.Seq, "model", req.Model, "stream", req.Stream,
		"messages", len(req.Messages), "tools", len(req.Tools), "aux", c.Aux)
	ctx := r.Context()
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-ctx.Done():
			return
		}
	}
	if reply.Status != 0 {
		if !pause(ctx, time.Duration(reply.Delay)) {
			return
		}
		apiError(w, reply.Status, "server_error", fmt.Sprintf("scripted error %d", reply.Status))
		return
	}
	id := fmt.Sprintf("chatcmpl-%d", c.Seq)
	if !req.Stream {
		if !pause(ctx, time.Duration(reply.Delay)) {
			return
		}
		writeJSON(w, http.StatusOK, completion(id, req, reply))
		return
	}
	s.stream(ctx, w, id, req, reply)
}

// stream writes the reply as server-sent events.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, id string, req Request, reply Reply) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	created := time.Now().Unix()
	send := func(v any) bool {
		if !pause(ctx, time.Duration(reply.Delay)) {
			return false
		}
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, t := range reply.Text {
		if !send(chunk(map[string]any{"content": t}, nil)) {
			return
		}
	}
	finish := "stop"
	if tc := reply.ToolCall; tc != nil {
		finish = "tool_calls"
		head := map[string]any{"index": 0, "id": callID(id, tc), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}
		args := map[string]any{"index": 0, "function": map[string]any{"arguments": string(tc.Arguments)}}
		if !send(chunk(map[string]any{"tool_calls": []any{head}}, nil)) ||
			!send(chunk(map[string]any{"tool_calls": []any{args}}, nil)) {
			return
		}
	}
	if !send(chunk(map[string]any{}, finish)) {
		return
	}
	if !send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
		"choices": []any{}, "usage": usage(req, reply)}) {
		return
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// completion is the non-streamed form of a reply.
func completion(id string, req Request, reply Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": strings.Join(reply.Text, "")}
	finish := "stop"
	if tc := reply.ToolCall; tc != nil {
		finish = "tool_calls"
		msg["tool_calls"] = []any{map[string]any{"id": callID(id, tc), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": string(tc.Arguments)}}}
	}
	return map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage(req, reply)}
}

func callID(id string, tc *ToolCallReply) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "call_" + strings.TrimPrefix(id, "chatcmpl-")
}

// usage counts words, which is all a fake needs.
func usage(req Request, reply Reply) map[string]int {
	in := 0
	for _, m := range req.Messages {
		in += len(strings.Fields(string(m.Content)))
	}
	out := len(strings.Fields(strings.Join(reply.Text, "")))
	if reply.ToolCall != nil {
		out++
	}
	return map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
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

// apiError writes an error in the service's envelope.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}
