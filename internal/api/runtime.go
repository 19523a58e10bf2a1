package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/jamhq/jam/internal/api/wire"
)

// The owned runtimes' routes: sessions, their turns, and an agent's
// runtime configuration.

func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Sessions(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("sessions: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Sessions{Sessions: nonNil(out)})
}

func (s *Server) handleTurns(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Turns(r.Context(), session)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("turns of %s: %w", session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Turns{Turns: nonNil(out)})
}

func (s *Server) handleSessionMessages(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.SessionMessages(r.Context(), session)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("messages of %s: %w", session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.SessionMessages{Messages: nonNil(out)})
}

func (s *Server) handleSessionSend(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	var req wire.SessionSendRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		s.writeError(w, r, invalid("text is empty"))
		return
	}
	switch req.Routing {
	case "", "note", "queue", "steer":
	default:
		s.writeError(w, r, invalid("routing %q (want note, queue or steer)", req.Routing))
		return
	}
	out, err := s.backend.SessionSend(r.Context(), session, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("send to %s: %w", session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAgentConfig(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	var req wire.AgentConfigRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(req.Set) == 0 {
		s.writeError(w, r, invalid("set names no key to change"))
		return
	}
	out, err := s.backend.AgentConfig(r.Context(), agent, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("configure %s: %w", agent, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleTurnCancel(w http.ResponseWriter, r *http.Request) {
	turn := r.PathValue("turn")
	if err := s.decodeOptionalJSON(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.backend.CancelTurn(r.Context(), turn); err != nil {
		s.writeError(w, r, fmt.Errorf("cancel %s: %w", turn, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.OK{OK: true})
}

func (s *Server) handleTurn(w http.ResponseWriter, r *http.Request) {
	turn := r.PathValue("turn")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Turn(r.Context(), turn)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("turn %s: %w", turn, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleTurnOutput(w http.ResponseWriter, r *http.Request) {
	turn := r.PathValue("turn")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.TurnOutput(r.Context(), turn)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("output of %s: %w", turn, err))
		return
	}
	out.Updates = nonNil(out.Updates)
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWorktrees(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Worktrees(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("worktrees: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Worktrees{Worktrees: nonNil(out)})
}

func (s *Server) handleWorktreeArchive(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	if err := s.decodeOptionalJSON(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.WorktreeArchive(r.Context(), session)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("archive the worktree of %s: %w", session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWorktreeRemove(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	var req wire.WorktreeRemoveRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.WorktreeRemove(r.Context(), session, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("remove the worktree of %s: %w", session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWorktreeRestore(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	var req wire.WorktreeRestoreRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Checkpoint < 0 {
		s.writeError(w, r, invalid("checkpoint %d is not a checkpoint number (1, 2, …; 0 or absent for the latest)", req.Checkpoint))
		return
	}
	out, err := s.backend.WorktreeRestore(r.Context(), session, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("restore the worktree of %s: %w", session, err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}
