package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/api/wire"
)

// routes builds the handler tree. Every route is listed here.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.handleStatus)

	mux.HandleFunc("GET /v1/accounts", s.handleAccounts)
	mux.HandleFunc("POST /v1/accounts", s.handleAccountAdd)
	mux.HandleFunc("GET /v1/agents", s.handleAgents)
	mux.HandleFunc("POST /v1/agents", s.handleAgentAdd)
	mux.HandleFunc("GET /v1/rooms", s.handleRooms)
	mux.HandleFunc("POST /v1/rooms", s.handleRoomCreate)
	mux.HandleFunc("POST /v1/rooms/{room}/agents", s.handleRoomAdd)
	mux.HandleFunc("GET /v1/rooms/{room}/messages", s.handleRoomMessages)
	mux.HandleFunc("POST /v1/rooms/{room}/messages", s.handleRoomPost)
	mux.HandleFunc("GET /v1/rooms/{room}/participants", s.handleRoomParticipants)
	mux.HandleFunc("POST /v1/bindings", s.handleBind)
	mux.HandleFunc("DELETE /v1/bindings/{binding}", s.handleUnbind)
	mux.HandleFunc("GET /v1/inbox", s.handleInbox)
	mux.HandleFunc("POST /v1/waitInbox", s.handleWaitInbox)
	mux.HandleFunc("POST /v1/messages/{msg}/reply", s.handleReply)
	mux.HandleFunc("POST /v1/messages/{msg}/ack", s.handleAck)
	mux.HandleFunc("POST /v1/send", s.handleSend)
	mux.HandleFunc("GET /v1/events", s.handleEvents)
	mux.HandleFunc("POST /v1/notices", s.handleNotice)
	mux.HandleFunc("GET /v1/sessions", s.handleSessions)
	mux.HandleFunc("GET /v1/sessions/{session}/turns", s.handleTurns)
	mux.HandleFunc("GET /v1/sessions/{session}/messages", s.handleSessionMessages)
	mux.HandleFunc("POST /v1/sessions/{session}/messages", s.handleSessionSend)
	mux.HandleFunc("POST /v1/turns/{turn}/cancel", s.handleTurnCancel)
	mux.HandleFunc("GET /v1/turns/{turn}", s.handleTurn)
	mux.HandleFunc("GET /v1/turns/{turn}/output", s.handleTurnOutput)
	mux.HandleFunc("GET /v1/usage", s.handleUsage)
	mux.HandleFunc("GET /v1/worktrees", s.handleWorktrees)
	mux.HandleFunc("GET /v1/quarantine", s.handleQuarantine)
	mux.HandleFunc("POST /v1/worktrees/{session}/archive", s.handleWorktreeArchive)
	mux.HandleFunc("POST /v1/worktrees/{session}/remove", s.handleWorktreeRemove)
	mux.HandleFunc("POST /v1/worktrees/{session}/restore", s.handleWorktreeRestore)
	mux.HandleFunc("POST /v1/agents/{agent}/config", s.handleAgentConfig)
	mux.HandleFunc("POST /v1/ui/login", s.handleUILogin)
	mux.HandleFunc("GET /v1/openapi.json", s.handleOpenAPI)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	s.lifecycleRoutes(mux)
	s.resultRoutes(mux)
	s.connectionRoutes(mux)
	s.jobRoutes(mux)
	s.deliveryRoutes(mux)
	s.approvalRoutes(mux)
	s.delegationRoutes(mux)
	return s.instrument(s.recoverPanics(s.envelopeMuxErrors(mux)))
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.backend.Status(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("status: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, st)
}

// envelopeMuxErrors replaces ServeMux's plain-text 404 and 405 answers with
// the error envelope. ServeMux reports an unmatched request by returning
// an empty pattern; its handler is then run against a recorder only to
// learn the status and the Allow header.
func (s *Server) envelopeMuxErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			// Serve through the mux, not h: only ServeHTTP sets the path
			// values ({room}, {msg}) on the request.
			mux.ServeHTTP(w, r)
			return
		}
		rec := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch {
		case rec.status == http.StatusMethodNotAllowed:
			w.Header().Set("Allow", rec.header.Get("Allow"))
			s.writeError(w, r, &apiError{code: wire.CodeMethodNotAllowed, msg: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow"))})
		case rec.status >= 300 && rec.status < 400:
			// Path cleaning redirects (/v1//status → /v1/status) pass through.
			w.Header().Set("Location", rec.header.Get("Location"))
			w.WriteHeader(rec.status)
		default:
			s.writeError(w, r, &apiError{code: wire.CodeNotFound, msg: "no route " + r.Method + " " + clip(r.URL.Path)})
		}
	})
}

type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return len(b), nil
}
func (h *headerRecorder) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

// recoverPanics turns a handler panic into an internal error response
// instead of a dropped connection; the panic is logged.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// decodeJSON reads a JSON request body into dst: one object, known fields
// only, valid UTF-8, at most MaxBodyBytes. The size bound also bounds the
// decoder's work; encoding/json refuses nesting deeper than 10,000.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &apiError{code: wire.CodeInvalidArgument, msg: "content type " + clip(ct) + " is not application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{code: wire.CodePayloadTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit)}
		}
		return &apiError{code: wire.CodeInvalidArgument, msg: "request body: " + err.Error()}
	}
	if !utf8.Valid(body) {
		// encoding/json would quietly turn the bad bytes into U+FFFD.
		return &apiError{code: wire.CodeInvalidArgument, msg: "request body is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return &apiError{code: wire.CodeInvalidArgument, msg: "request body: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &apiError{code: wire.CodeInvalidArgument, msg: "request body: want one JSON value"}
	}
	return nil
}
