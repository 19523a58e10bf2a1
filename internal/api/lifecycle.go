package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/jamhq/jam/internal/api/wire"
)

// Lifecycle is the daemon's lifecycle surface. Errors wrap the jam
// sentinels: an object that does not exist is jam.ErrNotFound, a request
// the current state refuses (an account agents use, a turn that
// succeeded) jam.ErrConflict.
type Lifecycle interface {
	// AgentRemove removes an agent from jam: its processes stop, its
	// rooms' bindings and sessions are retired, its queued messages leave
	// jam's queue (unsettled on Band), and its template and peer go.
	AgentRemove(ctx context.Context, agent string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error)
	// AgentRestart replaces an owned agent's processes at the next turn
	// boundary.
	AgentRestart(ctx context.Context, agent string) (wire.AgentRestarted, error)
	// RoomLeave takes an agent out of a room on Band and retires its
	// binding and session there.
	RoomLeave(ctx context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error)
	// SessionArchive archives a session (resumed by a later message);
	// SessionClose closes it for good.
	SessionArchive(ctx context.Context, session string) (wire.Session, error)
	SessionClose(ctx context.Context, session string) (wire.Session, error)
	// RetryTurn runs a failed, cancelled or interrupted turn's message
	// again as a new turn, which it returns.
	RetryTurn(ctx context.Context, turn string) (wire.Turn, error)
	// AccountRemove removes an account no agent uses, with its sealed key.
	AccountRemove(ctx context.Context, profile string) (wire.AccountRemoved, error)
}

// lifecycleRoutes adds the lifecycle routes to mux.
func (s *Server) lifecycleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{agent}/remove", s.handleAgentRemove)
	mux.HandleFunc("POST /v1/agents/{agent}/restart", s.handleAgentRestart)
	mux.HandleFunc("POST /v1/rooms/{room}/leave", s.handleRoomLeave)
	mux.HandleFunc("POST /v1/sessions/{session}/archive", s.handleSessionArchive)
	mux.HandleFunc("POST /v1/sessions/{session}/close", s.handleSessionClose)
	mux.HandleFunc("POST /v1/turns/{turn}/retry", s.handleTurnRetry)
	mux.HandleFunc("POST /v1/accounts/{profile}/remove", s.handleAccountRemove)
}

// The lifecycle routes: removing an agent or an account, restarting an
// agent, leaving a room, archiving or closing a session and retrying a
// turn. Each is a POST, so a request cannot be a link followed by
// accident.

func (s *Server) handleAgentRemove(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	var req wire.AgentRemoveRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.AgentRemove(r.Context(), agent, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("remove %s: %w", agent, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAgentRestart(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	if err := s.decodeOptionalJSON(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.AgentRestart(r.Context(), agent)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("restart %s: %w", agent, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRoomLeave(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	var req wire.RoomLeaveRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Agent) == "" {
		s.writeError(w, r, invalid("agent is empty"))
		return
	}
	out, err := s.backend.RoomLeave(r.Context(), room, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("%s leaves room %s: %w", req.Agent, room, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSessionArchive(w http.ResponseWriter, r *http.Request) {
	s.sessionAction(w, r, "archive", s.backend.SessionArchive)
}

func (s *Server) handleSessionClose(w http.ResponseWriter, r *http.Request) {
	s.sessionAction(w, r, "close", s.backend.SessionClose)
}

func (s *Server) sessionAction(w http.ResponseWriter, r *http.Request, verb string, op func(ctx context.Context, session string) (wire.Session, error)) {
	session := r.PathValue("session")
	if err := s.decodeOptionalJSON(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := op(r.Context(), session)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("%s %s: %w", verb, session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleTurnRetry(w http.ResponseWriter, r *http.Request) {
	turn := r.PathValue("turn")
	if err := s.decodeOptionalJSON(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.RetryTurn(r.Context(), turn)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("retry %s: %w", turn, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAccountRemove(w http.ResponseWriter, r *http.Request) {
	profile := r.PathValue("profile")
	if err := s.decodeOptionalJSON(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.AccountRemove(r.Context(), profile)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("remove account %s: %w", profile, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}
