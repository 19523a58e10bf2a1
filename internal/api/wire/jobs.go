package wire

import (
	"encoding/json"
	"time"
)

// Job is a durable internal continuation of the daemon (a delivery's
// push, say), as GET /v1/jobs/{job} shows it.
type Job struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// State is queued, running, succeeded, failed (an attempt failed; due
	// again at run_after), dead (no attempt left) or cancelled.
	State          string `json:"state"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Attempt counts the claims since the job was enqueued or retried,
	// at most max_attempts.
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	RunAfter    time.Time `json:"run_after"`
	// Owner is the worker of the latest claim; Generation counts the
	// claims, the fence of every worker write.
	Owner      string     `json:"owner,omitempty"`
	Generation int64      `json:"generation"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	// Error is the latest failure's message, Result a succeeded job's
	// output.
	Error   string          `json:"error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Created time.Time       `json:"created_at"`
	Updated time.Time       `json:"updated_at"`
}

// Jobs is the body of GET /v1/jobs: newest first.
type Jobs struct {
	Jobs []Job `json:"jobs"`
}

// JobQuery selects jobs: of one state and one kind when not "", at most
// Limit (0: the daemon's default).
type JobQuery struct {
	State string
	Kind  string
	Limit int
}

// MaxJobLimit bounds GET /v1/jobs?limit=.
const MaxJobLimit = 500
