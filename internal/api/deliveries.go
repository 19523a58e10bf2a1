package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Deliveries is the daemon's surface for deliveries and operations.
type Deliveries interface {
	// Deliver checks r and starts delivering its change set; asking again
	// for the same change set, remote and branch returns the first.
	Deliver(ctx context.Context, r wire.DeliverRequest) (wire.Delivery, error)
	// Deliveries lists the deliveries q selects, newest first.
	Deliveries(ctx context.Context, q wire.DeliveryQuery) ([]wire.Delivery, error)
	// Delivery returns one delivery.
	Delivery(ctx context.Context, id string) (wire.Delivery, error)
	// DeliveryFollow reads the delivery's pull request from GitHub now.
	DeliveryFollow(ctx context.Context, id string) (wire.Delivery, error)
	// DeliveryMerge checks the merge gates and starts the merge operation
	// (jam.ErrGateRefused naming the gate otherwise).
	DeliveryMerge(ctx context.Context, id string, r wire.MergeRequest) (wire.Operation, error)
	// Operation returns one operation with its evidence.
	Operation(ctx context.Context, id string) (wire.Operation, error)
	// Operations lists the operations q selects, newest first, without
	// their evidence.
	Operations(ctx context.Context, q wire.OperationQuery) ([]wire.Operation, error)
}

func (s *Server) deliveryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/deliveries", s.handleDeliver)
	mux.HandleFunc("GET /v1/deliveries", s.handleDeliveries)
	mux.HandleFunc("GET /v1/deliveries/{delivery}", s.deliveryHandler("delivery", s.backend.Delivery))
	mux.HandleFunc("POST /v1/deliveries/{delivery}/follow", s.deliveryHandler("follow delivery", s.backend.DeliveryFollow))
	mux.HandleFunc("POST /v1/deliveries/{delivery}/merge", s.handleDeliveryMerge)
	mux.HandleFunc("GET /v1/operations", s.handleOperations)
	mux.HandleFunc("GET /v1/operations/{operation}", s.handleOperation)
}

// handleDeliver answers 202: the delivery runs on after the answer.
func (s *Server) handleDeliver(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.DeliverRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("change_set", req.ChangeSet, "remote", req.Remote); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Deliver(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusAccepted, out)
}

func (s *Server) handleDeliveries(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "change_set", "state", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	dq := wire.DeliveryQuery{ChangeSet: q.Get("change_set"), State: q.Get("state")}
	if dq.Limit, err = queryLimit(q.Get("limit"), wire.MaxDeliveryLimit); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Deliveries(r.Context(), dq)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list deliveries: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Deliveries{Deliveries: nonNil(out)})
}

// deliveryHandler serves a route of one delivery: read or follow.
func (s *Server) deliveryHandler(what string, f func(context.Context, string) (wire.Delivery, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("delivery")
		if _, err := query(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := f(r.Context(), id)
		if err != nil {
			s.writeError(w, r, fmt.Errorf("%s %s: %w", what, clip(id), err))
			return
		}
		s.writeJSON(w, http.StatusOK, out)
	}
}

// handleDeliveryMerge answers 202 with the merge operation.
func (s *Server) handleDeliveryMerge(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("delivery")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.MergeRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.DeliveryMerge(r.Context(), id, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusAccepted, out)
}

func (s *Server) handleOperations(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "kind", "subject", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	oq := wire.OperationQuery{Kind: q.Get("kind"), Subject: q.Get("subject")}
	if oq.Limit, err = queryLimit(q.Get("limit"), wire.MaxOperationLimit); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Operations(r.Context(), oq)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list operations: %w", err))
		return
	}
	for i := range out {
		out[i].Jobs, out[i].Evidence = nonNil(out[i].Jobs), nonNil(out[i].Evidence)
	}
	s.writeJSON(w, http.StatusOK, wire.Operations{Operations: nonNil(out)})
}

func (s *Server) handleOperation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("operation")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Operation(r.Context(), id)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("operation %s: %w", clip(id), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}
