package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Approvals is the daemon's surface for the questions agents ask the
// person.
type Approvals interface {
	// Approvals lists the pending approvals, oldest first.
	Approvals(ctx context.Context) ([]wire.Approval, error)
	// Approve answers a pending approval: jam.ErrNotFound when it is not
	// waiting, jam.ErrConflict when it was answered already.
	Approve(ctx context.Context, id string, r wire.ApproveRequest) (wire.ApprovalAnswer, error)
}

func (s *Server) approvalRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/approvals", s.handleApprovals)
	mux.HandleFunc("POST /v1/approvals/{approval}", s.handleApprove)
}

func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Approvals(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list approvals: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Approvals{Approvals: nonNil(out)})
}

func (s *Server) handleApprove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("approval")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.ApproveRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("decision", req.Decision); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Approve(r.Context(), id, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("approval %s: %w", clip(id), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}
