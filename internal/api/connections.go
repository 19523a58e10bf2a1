package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Connections is the daemon's surface for external authorities and
// their credentials. A connection is named by its id, its
// "PROVIDER/NAME" or a NAME only one live connection has. A secret comes
// in through a request body only, and no answer carries one.
type Connections interface {
	// Connections lists the live connections, oldest first.
	Connections(ctx context.Context) ([]wire.Connection, error)
	// ConnectionAdd adds a connection with its first credential version.
	ConnectionAdd(ctx context.Context, r wire.ConnectionAddRequest) (wire.Connection, error)
	// Connection returns one connection.
	Connection(ctx context.Context, ref string) (wire.Connection, error)
	// ConnectionRotate appends a credential version and disables the
	// active one.
	ConnectionRotate(ctx context.Context, ref string, r wire.ConnectionRotateRequest) (wire.Connection, error)
	// ConnectionRemove removes a connection and disables its credential.
	ConnectionRemove(ctx context.Context, ref string) (wire.Connection, error)
}

func (s *Server) connectionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/connections", s.handleConnections)
	mux.HandleFunc("POST /v1/connections", s.handleConnectionAdd)
	mux.HandleFunc("GET /v1/connections/{connection}", s.handleConnection)
	mux.HandleFunc("POST /v1/connections/{connection}/rotate", s.handleConnectionRotate)
	mux.HandleFunc("DELETE /v1/connections/{connection}", s.handleConnectionRemove)
}

func (s *Server) handleConnections(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Connections(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list connections: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Connections{Connections: nonNil(out)})
}

// handleConnectionAdd answers 201 with the connection it added.
func (s *Server) handleConnectionAdd(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.ConnectionAddRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("provider", req.Provider, "name", req.Name, "secret", req.Secret); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.ConnectionAdd(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("add connection: %w", err))
		return
	}
	s.writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleConnection(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("connection")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Connection(r.Context(), ref)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("connection %s: %w", clip(ref), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleConnectionRotate(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("connection")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.ConnectionRotateRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("secret", req.Secret); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.ConnectionRotate(r.Context(), ref, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("rotate connection %s: %w", clip(ref), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleConnectionRemove(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("connection")
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.ConnectionRemove(r.Context(), ref)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("remove connection %s: %w", clip(ref), err))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}
