package api

import (
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// handleUILogin mints a one-time sign-in link to the web UI (jam ui).
func (s *Server) handleUILogin(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	url, err := s.UILoginURL()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, wire.UILogin{URL: url})
}
