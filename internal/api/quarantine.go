package api

import (
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

func (s *Server) handleQuarantine(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Quarantine(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("quarantine: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.QuarantineList{Records: nonNil(out)})
}
