package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// Usage is the part of the backend that reports what turns used.
type Usage interface {
	// Usage sums the usage of the workspace's turns that started at or
	// after r.Since, grouped by r.By (a valid grouping).
	Usage(ctx context.Context, r wire.UsageRequest) (wire.UsageReport, error)
}

// maxSinceDays bounds a relative since: about a hundred years.
const maxSinceDays = 36500

// ParseSince reads when a usage report starts, relative to now: "" (all
// time), a duration ("90m", "24h"), a number of days ("7d"), a date
// (YYYY-MM-DD, from its UTC midnight) or an RFC 3339 time. A duration is
// positive and at most 36500 days. Anything else is jam.ErrInvalid.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	bad := func(why string) (time.Time, error) {
		return time.Time{}, fmt.Errorf("%w: since %q: %s (want a duration like 24h or 7d, a date like 2026-03-14, or an RFC 3339 time)", jam.ErrInvalid, clip(s), why)
	}
	if d, ok := strings.CutSuffix(s, "d"); ok && d != "" && strings.Trim(d, "0123456789") == "" {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 || n > maxSinceDays {
			return bad("not a number of days from 1 to 36500")
		}
		return now.Add(-time.Duration(n) * 24 * time.Hour).UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return bad("not a duration, a date or a time")
	}
	if d <= 0 || d > maxSinceDays*24*time.Hour {
		return bad("not a positive duration of at most 36500 days")
	}
	return now.Add(-d).UTC(), nil
}

// ParseUsageBy checks a usage grouping; "" is agent.
func ParseUsageBy(s string) (string, error) {
	switch s {
	case "":
		return wire.UsageByAgent, nil
	case wire.UsageByAgent, wire.UsageByRoom, wire.UsageBySession, wire.UsageByDay:
		return s, nil
	}
	return "", fmt.Errorf("%w: by %q (want agent, room, session or day)", jam.ErrInvalid, clip(s))
}

func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "by", "since")
	var req wire.UsageRequest
	if err == nil {
		req.By, err = ParseUsageBy(q.Get("by"))
	}
	if err == nil {
		req.Since, err = ParseSince(q.Get("since"), time.Now())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.backend.Usage(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("usage: %w", err))
		return
	}
	out.Rows = nonNil(out.Rows)
	s.writeJSON(w, http.StatusOK, out)
}
