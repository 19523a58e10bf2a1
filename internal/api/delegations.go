package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Delegations is the daemon's surface for the work agents delegate to
// child sessions. An id that is not a delegation's is jam.ErrInvalid; an
// unknown one, or another workspace's, jam.ErrNotFound.
type Delegations interface {
	// Delegations lists the delegations q selects, newest first.
	Delegations(ctx context.Context, q wire.DelegationQuery) ([]wire.Delegation, error)
	// Delegation returns one delegation, its contract's schema and, once
	// submitted, its result.
	Delegation(ctx context.Context, id string) (wire.DelegationDetail, error)
	// DelegationCancel cancels a pending or running delegation for the
	// person (jam.ErrConflict once it has ended).
	DelegationCancel(ctx context.Context, id string) (wire.Delegation, error)
}

func (s *Server) delegationRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/delegations", s.handleDelegations)
	mux.HandleFunc("GET /v1/delegations/{delegation}", s.handleDelegation)
	mux.HandleFunc("POST /v1/delegations/{delegation}/cancel", s.handleDelegationCancel)
}

func (s *Server) handleDelegations(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "parent", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	dq := wire.DelegationQuery{Parent: q.Get("parent")}
	if dq.Limit, err = queryLimit(q.Get("limit"), wire.MaxDelegationLimit); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Delegations(r.Context(), dq)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list delegations: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Delegations{Delegations: nonNil(out)})
}

func (s *Server) handleDelegation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("delegation")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Delegation(r.Context(), id)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("delegation %s: %w", clip(id), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

// handleDelegationCancel cancels for the person; like a job's cancel it
// reads no body.
func (s *Server) handleDelegationCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("delegation")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.DelegationCancel(r.Context(), id)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("cancel delegation %s: %w", clip(id), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}
