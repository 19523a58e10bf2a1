package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Jobs is the daemon's surface for its durable jobs.
type Jobs interface {
	// Jobs lists the jobs q selects, newest first.
	Jobs(ctx context.Context, q wire.JobQuery) ([]wire.Job, error)
	// Job returns one job.
	Job(ctx context.Context, id string) (wire.Job, error)
	// JobRetry queues a dead or cancelled job again (jam.ErrConflict in
	// another state).
	JobRetry(ctx context.Context, id string) (wire.Job, error)
	// JobCancel cancels a queued, failed or running job (jam.ErrConflict
	// in another state).
	JobCancel(ctx context.Context, id string) (wire.Job, error)
}

func (s *Server) jobRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/jobs", s.handleJobs)
	mux.HandleFunc("GET /v1/jobs/{job}", s.jobHandler("job", s.backend.Job))
	mux.HandleFunc("POST /v1/jobs/{job}/retry", s.jobHandler("retry job", s.backend.JobRetry))
	mux.HandleFunc("POST /v1/jobs/{job}/cancel", s.jobHandler("cancel job", s.backend.JobCancel))
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "state", "kind", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jq := wire.JobQuery{State: q.Get("state"), Kind: q.Get("kind")}
	if jq.Limit, err = queryLimit(q.Get("limit"), wire.MaxJobLimit); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Jobs(r.Context(), jq)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("jobs: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.Jobs{Jobs: nonNil(out)})
}

// jobHandler serves a route of one job: read, retry or cancel.
func (s *Server) jobHandler(what string, f func(context.Context, string) (wire.Job, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("job")
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
