package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// Results is the daemon's surface for what turns leave behind:
// checkpoints of sessions' worktrees and the change sets captured between
// them. Every lookup is scoped to the daemon's workspace: a foreign or
// unknown id is jam.ErrNotFound.
type Results interface {
	// ChangeSets lists change sets newest first, without their patches.
	ChangeSets(ctx context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error)
	// ChangeSet returns one change set's manifest and figures.
	ChangeSet(ctx context.Context, id string) (wire.ChangeSet, error)
	// ChangeSetPatch returns one change set's binary patch (git diff
	// --binary --full-index); one that was over the bound and not kept is
	// jam.ErrInvalid, saying so.
	ChangeSetPatch(ctx context.Context, id string) ([]byte, error)
	// CaptureChangeSet checkpoints the session's worktree now and captures
	// the change set from its checkpoint since (0: its first) to that one,
	// origin request. A session without a checkpoint or without an active
	// worktree is jam.ErrConflict; an unknown session or checkpoint is
	// jam.ErrNotFound.
	CaptureChangeSet(ctx context.Context, session string, since int) (wire.ChangeSet, error)
	// Checkpoints lists a session's checkpoints by Seq.
	Checkpoints(ctx context.Context, session string) ([]wire.Checkpoint, error)
}

func (s *Server) resultRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/changesets", s.handleChangeSets)
	mux.HandleFunc("GET /v1/changesets/{cs}", s.handleChangeSet)
	mux.HandleFunc("GET /v1/changesets/{cs}/patch", s.handleChangeSetPatch)
	mux.HandleFunc("GET /v1/sessions/{session}/changesets", s.handleSessionChangeSets)
	mux.HandleFunc("POST /v1/sessions/{session}/changesets", s.handleChangeSetCapture)
	mux.HandleFunc("GET /v1/sessions/{session}/checkpoints", s.handleCheckpoints)
}

func (s *Server) handleChangeSets(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "session", "turn", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.listChangeSets(w, r, q.Get("session"), q.Get("turn"), q.Get("limit"))
}

func (s *Server) handleSessionChangeSets(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "turn", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.listChangeSets(w, r, r.PathValue("session"), q.Get("turn"), q.Get("limit"))
}

func (s *Server) listChangeSets(w http.ResponseWriter, r *http.Request, session, turn, limitText string) {
	limit, err := queryLimit(limitText, wire.MaxChangeSetLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.ChangeSets(r.Context(), wire.ChangeSetQuery{Session: session, Turn: turn, Limit: limit})
	if err != nil {
		s.writeError(w, r, fmt.Errorf("change sets: %w", err))
		return
	}
	for i := range out {
		out[i].Files = nonNil(out[i].Files)
	}
	s.writeJSON(w, http.StatusOK, wire.ChangeSets{ChangeSets: nonNil(out)})
}

// handleChangeSetCapture answers 201 with the change set it captured.
func (s *Server) handleChangeSetCapture(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.ChangeSetCaptureRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Since < 0 {
		s.writeError(w, r, invalid("since %d is not a checkpoint number (1, 2, …; 0 or absent for the session's first)", req.Since))
		return
	}
	out, err := s.backend.CaptureChangeSet(r.Context(), session, req.Since)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("capture a change set of %s: %w", clip(session), err))
		return
	}
	out.Files = nonNil(out.Files)
	s.writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleChangeSet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("cs")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.ChangeSet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("change set %s: %w", clip(id), err))
		return
	}
	out.Files = nonNil(out.Files)
	s.writeJSON(w, http.StatusOK, out)
}

// handleChangeSetPatch answers the patch as it was captured, byte for
// byte, as text/x-diff; it is bounded by the capture's own bound.
func (s *Server) handleChangeSetPatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("cs")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	patch, err := s.backend.ChangeSetPatch(r.Context(), id)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("patch of change set %s: %w", clip(id), err))
		return
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(patch)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(patch); err != nil {
		s.log.Debug("write patch", "err", err)
	}
}

func (s *Server) handleCheckpoints(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Checkpoints(r.Context(), session)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("checkpoints of %s: %w", clip(session), err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Checkpoints{Checkpoints: nonNil(out)})
}
