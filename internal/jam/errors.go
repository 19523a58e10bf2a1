package jam

import "errors"

// Sentinel errors that callers branch on. Packages wrap them with the
// operation that failed ("claim turn %s: %w"); the control API maps each to
// a stable error code in one catalogue, and the CLI maps codes to exit codes.
var (
	// ErrInvalid marks input that can never succeed as given.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound marks a missing record, or one owned by another workspace.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists marks a create that collides with an existing record.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict marks a write that lost to a concurrent change or does not
	// fit the record's current state.
	ErrConflict = errors.New("conflict")
	// ErrLeaseLost marks a write by a holder whose lease generation is stale.
	ErrLeaseLost = errors.New("lease lost")
	// ErrUnavailable marks a dependency that is down or not yet ready; the
	// same call may succeed later.
	ErrUnavailable = errors.New("unavailable")
	// ErrStorageFull marks a write that the local disk refused: it is full,
	// a file reached its size limit, or the data directory is read-only or
	// gone. Nothing of the write was kept; the same call may succeed once
	// there is room again.
	ErrStorageFull = errors.New("storage full or not writable")
	// ErrStopping marks work refused or cut short because the daemon is
	// shutting down. It is the cancellation cause of a graceful stop.
	ErrStopping = errors.New("stopping")
	// ErrUnauthenticated marks a request without valid credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied marks an authenticated caller that may not act.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrNotImplemented marks a documented operation this build lacks.
	ErrNotImplemented = errors.New("not implemented")
	// ErrIncompatible marks a configuration the agent's placement cannot
	// run: a room asking a shared process for a per-process setting (such
	// as its own command) that differs from the one the process runs.
	ErrIncompatible = errors.New("incompatible with the placement")
	// ErrCredentialInvalid marks an external credential (a connection's
	// token) that its authority refused: revoked, expired or wrong. No
	// retry mends it; rotating the connection does.
	ErrCredentialInvalid = errors.New("credential invalid")
	// ErrUnreachable marks an external remote (a git remote, an API) that
	// cannot be reached or does not hold what was named.
	ErrUnreachable = errors.New("remote unreachable")
	// ErrGateRefused marks an action refused by one of its gates (a merge
	// while checks are red, say); the error names the gate.
	ErrGateRefused = errors.New("gate refused")
)
