package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jamhq/jam/internal/jam"
)

// SQLSTATE codes the dialect branches on.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeDiskFull             = "53100"
	codeInvalidPassword      = "28P01"
	codeInvalidAuthSpec      = "28000"
	codeInvalidCatalogName   = "3D000" // the database does not exist
	codeLockNotAvailable     = "55P03"
)

// pgCode is the SQLSTATE of err, "" when err is not a server error.
func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// constraintOf is the constraint a server error names, "" if none.
func constraintOf(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.ConstraintName
	}
	return ""
}

// retryable reports whether a transaction that failed with err may be run
// again from the start: the server aborted it to keep concurrent
// transactions serializable, or to break a deadlock.
func retryable(err error) bool {
	switch pgCode(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return false
}

// mapErr classifies a failed statement or transaction for the seam:
//
//   - unique_violation: jam.ErrAlreadyExists naming the constraint (the
//     methods that have a documented answer for a duplicate catch it
//     first; this is the answer for the rest);
//   - foreign_key_violation: jam.ErrNotFound, the seam's error for a
//     write against a missing parent;
//   - serialization failure or deadlock that outlived the retries of
//     inTx: jam.ErrConflict;
//   - disk full: jam.ErrStorageFull;
//   - the server unreachable, the connection lost, or the server shutting
//     down: jam.ErrUnavailable.
//
// The driver's error stays in the chain; sql.ErrNoRows-like pgx.ErrNoRows
// and context errors pass unchanged.
func mapErr(err error) error {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	for _, sentinel := range []error{jam.ErrAlreadyExists, jam.ErrNotFound, jam.ErrConflict, jam.ErrStorageFull, jam.ErrUnavailable, jam.ErrInvalid, jam.ErrLeaseLost} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == codeUniqueViolation:
			return fmt.Errorf("%w: %s: %w", jam.ErrAlreadyExists, pe.ConstraintName, err)
		case pe.Code == codeForeignKeyViolation:
			return fmt.Errorf("%w: %s: %w", jam.ErrNotFound, pe.ConstraintName, err)
		case pe.Code == codeSerializationFailure, pe.Code == codeDeadlockDetected, pe.Code == codeLockNotAvailable:
			return fmt.Errorf("%w: %w", jam.ErrConflict, err)
		case pe.Code == codeDiskFull:
			return fmt.Errorf("%w: %w", jam.ErrStorageFull, err)
		case len(pe.Code) == 5 && (pe.Code[:2] == "08" || pe.Code[:2] == "57" || pe.Code[:2] == "53"):
			// 08: connection exception; 57: operator intervention (admin
			// shutdown, crash shutdown, cannot connect now); 53:
			// insufficient resources (too many connections, out of memory).
			return fmt.Errorf("%w: %w", jam.ErrUnavailable, err)
		}
		return err
	}
	if isConnErr(err) {
		return fmt.Errorf("%w: %w", jam.ErrUnavailable, err)
	}
	return err
}

// isConnErr reports whether err is a failure to reach or keep a
// connection rather than an answer of the server.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.As(err, &oe) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.Timeout(err) || isClosedPool(err)
}

// isClosedPool reports pgxpool's error for a pool that was closed.
func isClosedPool(err error) bool {
	return err != nil && err.Error() == "closed pool"
}

// connectError words a failure to open the first connection as one line
// that names the problem and never the password: the server cannot be
// reached, refused the credentials, or has no such database. The result
// wraps jam.ErrUnavailable (the same call may succeed later) and the
// driver's error is kept out of the text but not out of the chain: it
// may quote the user name, never the password.
func connectError(err error, loc location) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeInvalidPassword, codeInvalidAuthSpec:
			return &openError{msg: fmt.Sprintf("authentication failed for user %q at %s: %s", loc.user, loc, pe.Message), err: err}
		case codeInvalidCatalogName:
			return &openError{msg: fmt.Sprintf("database %q does not exist on %s", loc.database, loc.hostPort()), err: err}
		}
		return &openError{msg: fmt.Sprintf("server at %s refused the connection: %s (SQLSTATE %s)", loc, pe.Message, pe.Code), err: err}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &openError{msg: fmt.Sprintf("cannot resolve %s: %s", loc.host, dnsErr.Err), err: err}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		reason := oe.Err.Error()
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			reason = se.Err.Error()
		}
		if oe.Timeout() {
			reason = "timed out"
		}
		return &openError{msg: fmt.Sprintf("cannot reach %s: %s", loc.hostPort(), reason), err: err}
	}
	if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return &openError{msg: fmt.Sprintf("cannot reach %s: timed out", loc.hostPort()), err: err}
	}
	return &openError{msg: fmt.Sprintf("cannot connect to %s", loc), err: err}
}

// openError is a failed Open: one line of text, msg, and the cause in the
// chain (errors.Is(err, jam.ErrUnavailable) holds).
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return "postgres store: " + e.msg }

func (e *openError) Unwrap() []error { return []error{jam.ErrUnavailable, e.err} }
