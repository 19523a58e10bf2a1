// Package wire holds the JSON shapes of jam's control API: request and
// response bodies, the error envelope and the catalogue of stable error
// codes. The server (package api) and the client (package apiclient) both
// use it, and it depends on nothing but the vocabulary, so the CLI can speak
// the API without linking the daemon.
//
// Field names are snake_case. Errors are always
// {"error":{"code":"…","message":"…"}} with a code from the list below;
// codes are stable across releases, messages are for people.
package wire

import (
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Code is a stable, machine-readable error code.
type Code string

// The error code catalogue. Each code has exactly one HTTP status, fixed in
// package api.
const (
	CodeInvalidArgument  Code = "invalid_argument"
	CodeUnauthenticated  Code = "unauthenticated"
	CodePermissionDenied Code = "permission_denied"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeAlreadyExists    Code = "already_exists"
	CodeConflict         Code = "conflict"
	CodeLeaseLost        Code = "lease_lost"
	CodePayloadTooLarge  Code = "payload_too_large"
	CodeInternal         Code = "internal"
	CodeNotImplemented   Code = "not_implemented"
	CodeUnavailable      Code = "unavailable"
	CodeStopping         Code = "stopping"
	CodeStorageFull      Code = "storage_full"
	// CodePlacementIncompatible: a room's configuration differs from the
	// shared process its agent's placement would run it on.
	CodePlacementIncompatible Code = "placement_incompatible"
	// CodeCredentialInvalid: an external credential (a connection's token)
	// was refused by its authority; rotate the connection.
	CodeCredentialInvalid Code = "credential_invalid"
	// CodeRemoteUnreachable: a git remote or an external API cannot be
	// reached, or does not hold what was named.
	CodeRemoteUnreachable Code = "remote_unreachable"
	// CodeGateRefused: an action refused by a gate (the message names it).
	CodeGateRefused Code = "gate_refused"
)

// Codes lists the catalogue.
var Codes = []Code{
	CodeInvalidArgument, CodeUnauthenticated, CodePermissionDenied, CodeNotFound,
	CodeMethodNotAllowed, CodeAlreadyExists, CodeConflict, CodeLeaseLost,
	CodePayloadTooLarge, CodeInternal, CodeNotImplemented, CodeUnavailable, CodeStopping,
	CodeStorageFull, CodePlacementIncompatible, CodeCredentialInvalid, CodeRemoteUnreachable, CodeGateRefused,
}

// ErrorBody is the envelope of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the code and message of an error response.
type ErrorDetail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Daemon states reported by status.
const (
	StateRunning = "running"
	StateStopped = "stopped"
)

// Status is the body of GET /v1/status.
type Status struct {
	State         string          `json:"state"`
	Version       string          `json:"version"`
	PID           int             `json:"pid"`
	StartedAt     time.Time       `json:"started_at"`
	UptimeSeconds float64         `json:"uptime_seconds"`
	DataDir       string          `json:"data_dir"`
	Socket        string          `json:"socket"`
	HTTPAddr      string          `json:"http_addr,omitempty"`
	Store         StoreStatus     `json:"store"`
	Workspace     WorkspaceStatus `json:"workspace"`
	Band          BandStatus      `json:"band"`
	// PreviousRun describes the run before this one on this node.
	PreviousRun *RunStatus `json:"previous_run,omitempty"`
}

// StoreStatus describes the daemon's store.
type StoreStatus struct {
	Driver        string `json:"driver"`
	Location      string `json:"location"`
	SchemaVersion int    `json:"schema_version"`
	// ServerVersion is the database engine's version (the SQLite library,
	// or what the PostgreSQL server reports).
	ServerVersion string `json:"server_version,omitempty"`
	// Error is the last write the disk refused (full or not writable),
	// while it lasts; empty when the store writes normally.
	Error string `json:"error,omitempty"`
	// Check is the store's consistency check (SQLite's quick_check),
	// run once in the background when the daemon starts.
	Check StoreCheck `json:"check"`
}

// The states of StoreCheck.
const (
	StoreCheckRunning = "running"
	StoreCheckOK      = "ok"
	StoreCheckFailed  = "failed"
)

// StoreCheck is the result of the store's consistency check.
type StoreCheck struct {
	// State is StoreCheckRunning, StoreCheckOK or StoreCheckFailed.
	State string `json:"state"`
	// Detail is, when the check failed, its first problems.
	Detail string `json:"detail,omitempty"`
	// Seconds is how long the check took, once it is over.
	Seconds float64 `json:"seconds,omitempty"`
}

// WorkspaceStatus names the daemon's default workspace.
type WorkspaceStatus struct {
	ID   jam.WorkspaceID `json:"id"`
	Name string          `json:"name"`
}

// RunStatus describes one earlier daemon run.
type RunStatus struct {
	PID       int        `json:"pid"`
	Version   string     `json:"version"`
	StartedAt time.Time  `json:"started_at"`
	StoppedAt *time.Time `json:"stopped_at,omitempty"`
	// Clean is false when the run ended without recording a clean stop
	// (it crashed or was killed).
	Clean bool `json:"clean"`
}

// BandStatus describes the daemon's link to Band or its embedded hub.
type BandStatus struct {
	// Mode is "embedded" (the hub runs inside the daemon) or "remote".
	Mode string `json:"mode"`
	URL  string `json:"url"`
	// OwnerKeyFile holds the embedded hub owner's user key.
	OwnerKeyFile string `json:"owner_key_file,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	Handle       string `json:"handle,omitempty"`
	// Error is the last failure to reach Band, if any.
	Error string `json:"error,omitempty"`
}
