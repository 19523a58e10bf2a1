package hub

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/band/protocol"
)

// maxBodyBytes bounds a request body.
const maxBodyBytes = 1 << 20

// routes builds the hub's handler: every route of the REST API and the
// WebSocket, behind a wrapper that tracks the request for Stop and turns
// unknown routes and methods into Band's JSON error envelope.
func (h *Hub) routes() http.Handler {
	mux := http.NewServeMux()
	agent := func(pattern string, fn endpoint) { mux.Handle(pattern, h.api(authAgent, fn)) }
	me := func(pattern string, fn endpoint) { mux.Handle(pattern, h.api(authUser, fn)) }

	agent("GET /api/v1/agent/me", h.agentMe)
	agent("GET /api/v1/agent/peers", h.agentPeers)
	agent("GET /api/v1/agent/chats", h.agentChats)
	agent("POST /api/v1/agent/chats", h.createChat)
	agent("GET /api/v1/agent/chats/{id}", h.getChat)
	agent("PATCH /api/v1/agent/chats/{id}", h.renameChat)
	agent("GET /api/v1/agent/chats/{chat_id}/participants", h.listParticipants)
	agent("POST /api/v1/agent/chats/{chat_id}/participants", h.addParticipant)
	agent("DELETE /api/v1/agent/chats/{chat_id}/participants/{id}", h.removeParticipant)
	agent("GET /api/v1/agent/chats/{chat_id}/context", h.agentContext)
	agent("GET /api/v1/agent/chats/{chat_id}/messages", h.agentQueue)
	agent("GET /api/v1/agent/chats/{chat_id}/messages/next", h.agentNext)
	agent("POST /api/v1/agent/chats/{chat_id}/messages", h.sendMessage)
	agent("POST /api/v1/agent/chats/{chat_id}/messages/{id}/processing", h.markProcessing)
	agent("POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed", h.markProcessed)
	agent("POST /api/v1/agent/chats/{chat_id}/messages/{id}/failed", h.markFailed)
	agent("POST /api/v1/agent/chats/{chat_id}/events", h.postEvent)
	agent("POST /api/v1/agent/chats/{chat_id}/activity", h.reportActivity)
	for _, p := range []string{
		"/api/v1/agent/contacts", "/api/v1/agent/contacts/",
		"/api/v1/agent/memories", "/api/v1/agent/memories/",
		"/api/v1/agent/chats/{chat_id}/tasks", "/api/v1/agent/chats/{chat_id}/tasks/",
		"/api/v1/agent/chats/{chat_id}/board",
	} {
		agent(p, notImplemented)
	}

	me("GET /api/v1/me/profile", h.profile)
	me("PUT /api/v1/me/profile", h.updateProfile)
	me("POST /api/v1/me/agents/register", h.registerAgent)
	me("GET /api/v1/me/agents", h.myAgents)
	me("DELETE /api/v1/me/agents/{id}", h.deleteAgent)
	me("GET /api/v1/me/peers", h.myPeers)
	me("GET /api/v1/me/chats", h.myChats)
	me("POST /api/v1/me/chats", h.createChat)
	me("GET /api/v1/me/chats/{id}", h.getChat)
	me("GET /api/v1/me/chats/{chat_id}/messages", h.history)
	me("POST /api/v1/me/chats/{chat_id}/messages", h.sendMessage)
	me("GET /api/v1/me/chats/{chat_id}/participants", h.listParticipants)
	me("POST /api/v1/me/chats/{chat_id}/participants", h.addParticipant)
	me("DELETE /api/v1/me/chats/{chat_id}/participants/{id}", h.removeParticipant)
	for _, p := range []string{
		"/api/v1/me/contacts", "/api/v1/me/contacts/",
		"/api/v1/me/memories", "/api/v1/me/memories/",
	} {
		me(p, notImplemented)
	}

	mux.HandleFunc("GET "+protocol.SocketPath, h.serveSocket)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.track() {
			writeError(w, newRequestID(), &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: "The hub is stopping"})
			return
		}
		defer h.wg.Done()
		if h.db.Load() == nil {
			writeError(w, newRequestID(), &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: "The hub is not running"})
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			writeError(w, newRequestID(), unrouted(mux, r))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// unrouted tells a path no route has (404) from a method the path does
// not support (405).
func unrouted(mux *http.ServeMux, r *http.Request) *apiError {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" {
			return &apiError{status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed, message: "Method " + r.Method + " is not allowed here"}
		}
	}
	return errNotFound("No route for " + r.Method + " " + r.URL.Path)
}

// Which credential an endpoint takes.
const (
	authAgent = iota + 1
	authUser
)

// call is one authenticated REST request.
type call struct {
	r     *http.Request
	w     http.ResponseWriter
	ctx   context.Context
	db    *db
	p     principal
	reqID string
}

// endpoint handles a call and returns the status and body to send, or an
// error: an *apiError is sent as is, anything else as a 500.
type endpoint func(c *call) (int, any, error)

// data wraps a success body.
func data(v any) any { return protocol.Data[any]{Data: v} }

// api authenticates a request for an endpoint.
func (h *Hub) api(mode int, fn endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqID := newRequestID()
		w.Header().Set("X-Request-ID", reqID)
		d := h.db.Load()
		if d == nil {
			writeError(w, reqID, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: "The hub is not running"})
			return
		}
		key := apiKeyFrom(r)
		if key == "" {
			writeError(w, reqID, errUnauthorized())
			return
		}
		p, err := principalByKey(r.Context(), d.reader, key)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			writeError(w, reqID, errUnauthorized())
			return
		case err != nil:
			h.internal(w, r, reqID, err)
			return
		case mode == authAgent && !p.Agent:
			writeError(w, reqID, errForbidden(msgAgentAuthRequired))
			return
		case mode == authUser && p.Agent:
			writeError(w, reqID, errForbidden(msgAgentAuthNotAllowed))
			return
		}
		status, body, err := fn(&call{r: r, w: w, ctx: r.Context(), db: d, p: p, reqID: reqID})
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			writeError(w, reqID, ae)
		case err != nil:
			h.internal(w, r, reqID, err)
		case status == http.StatusNoContent:
			w.WriteHeader(status)
		default:
			writeJSON(w, status, body)
		}
	})
}

func (h *Hub) internal(w http.ResponseWriter, r *http.Request, reqID string, err error) {
	if r.Context().Err() == nil {
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "request_id", reqID, "err", err)
	}
	writeError(w, reqID, &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "Internal server error"})
}

func notImplemented(c *call) (int, any, error) {
	return 0, nil, errNotImplemented(c.r.Method + " " + c.r.URL.Path)
}

// apiKeyFrom reads X-API-Key, or else a bearer token.
func apiKeyFrom(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-API-Key")); k != "" {
		return k
	}
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","message":"Internal server error","request_id":""}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, reqID string, e *apiError) {
	writeJSON(w, e.status, protocol.ErrorBody{Error: protocol.ErrorDetail{
		Code: e.code, Message: e.message, RequestID: reqID, Details: e.details,
	}})
}

// decode reads the JSON body into v. An empty body decodes as {}.
func (c *call) decode(v any) *apiError {
	body := http.MaxBytesReader(c.w, c.r.Body, maxBodyBytes)
	b, err := io.ReadAll(body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codePayloadTooLarge, message: "Request body exceeds 1 MiB"}
	case err != nil:
		return errBadRequest(codeBadRequest, "Could not read the request body")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	if !utf8.Valid(b) {
		// encoding/json would quietly turn the bad bytes into U+FFFD.
		return errBadRequest(codeInvalidJSON, "Request body is not valid UTF-8")
	}
	err = json.Unmarshal(b, v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		ptr := "/" + strings.ReplaceAll(typeErr.Field, ".", "/")
		return errInvalid(codeValidation, ptr, "has the wrong type")
	case err != nil:
		return errBadRequest(codeInvalidJSON, "Request body is not valid JSON")
	}
	return nil
}

// write runs fn in one write transaction and then the pushes it returned,
// holding writeMu across both so pushes leave in commit order.
func (h *Hub) write(ctx context.Context, d *db, fn func(tx *sql.Tx) (after func(), err error)) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	var after func()
	err := inTx(ctx, d.writer, func(tx *sql.Tx) error {
		var err error
		after, err = fn(tx)
		return err
	})
	if err != nil {
		return err
	}
	if after != nil {
		after()
	}
	return nil
}
