package api

import (
	_ "embed"
	"fmt"
	"net/http"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// openAPIDocument is the control API's OpenAPI 3.1 document, served at
// GET /v1/openapi.json. The package's tests validate every response they
// receive against it, and fail when a route is missing from it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the control API's OpenAPI 3.1 document.
func OpenAPIDocument() []byte { return append([]byte(nil), openAPIDocument...) }

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(openAPIDocument); err != nil {
		s.log.Debug("write response", "err", err)
	}
}

// handleMetrics serves the daemon's metrics in the Prometheus text format.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		s.writeError(w, r, fmt.Errorf("%w: metrics are off", jam.ErrNotFound))
		return
	}
	s.metricsHandler.ServeHTTP(w, r)
}

// wrapHandler, when set, wraps the outermost handler of every listener
// of every Server started afterwards. Only the package's tests set it
// (before any Server exists), to validate every response against the
// OpenAPI document.
var wrapHandler func(http.Handler) http.Handler

// instrument records each request's duration by its route pattern (never
// its raw path, which holds ids) and status. It runs outside the mux, which
// sets r.Pattern on the request it is handed.
func (s *Server) instrument(next http.Handler) http.Handler {
	if s.cfg.Metrics == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		s.cfg.Metrics.APIRequest(r.Pattern, status, time.Since(start))
	})
}

// statusWriter notes the status of an answer. It unwraps to the writer it
// wraps, so http.ResponseController (flushes, deadlines) reaches it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
