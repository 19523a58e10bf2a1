package cli

import (
	"context"
	"errors"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
)

// ExitCode is a process exit status. Scripts may rely on these values.
type ExitCode int

// Exit codes.
const (
	ExitOK ExitCode = 0
	// ExitError is any failure without a more specific code.
	ExitError ExitCode = 1
	// ExitUsage: bad flags, arguments or configuration.
	ExitUsage ExitCode = 2
	// ExitNotRunning: no daemon answers for the data directory.
	ExitNotRunning ExitCode = 3
	// ExitNotFound: the named object does not exist.
	ExitNotFound ExitCode = 4
	// ExitConflict: the request collides with current state, such as a
	// second daemon on a data directory that is in use.
	ExitConflict ExitCode = 5
	// ExitDenied: authentication or permission failed.
	ExitDenied ExitCode = 6
	// ExitUnavailable: the daemon or a service it needs is busy, stopping
	// or down; the same command may succeed later.
	ExitUnavailable ExitCode = 7
	// ExitTimeout: a wait ("jam wait") ended without what it waited for.
	ExitTimeout ExitCode = 8
	// ExitInterrupted: stopped by a signal before finishing.
	ExitInterrupted ExitCode = 130
)

// codeExits maps API error codes to exit codes.
var codeExits = map[wire.Code]ExitCode{
	wire.CodeInvalidArgument:  ExitUsage,
	wire.CodePayloadTooLarge:  ExitUsage,
	wire.CodeUnauthenticated:  ExitDenied,
	wire.CodePermissionDenied: ExitDenied,
	wire.CodeNotFound:         ExitNotFound,
	wire.CodeAlreadyExists:    ExitConflict,
	wire.CodeConflict:         ExitConflict,
	wire.CodeLeaseLost:        ExitConflict,
	wire.CodeUnavailable:      ExitUnavailable,
	wire.CodeStopping:         ExitUnavailable,
	wire.CodeStorageFull:      ExitUnavailable,
	// A room whose configuration its agent's placement cannot run.
	wire.CodePlacementIncompatible: ExitConflict,
	// An external authority refused a credential, a remote could not be
	// reached, a gate refused an action.
	wire.CodeCredentialInvalid: ExitDenied,
	wire.CodeRemoteUnreachable: ExitUnavailable,
	wire.CodeGateRefused:       ExitConflict,
}

// usageError marks a mistake in how a command was invoked.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitError carries a chosen exit code with an already-printed outcome
// (for example "jam status" reporting a stopped daemon).
type exitError struct {
	code ExitCode
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitCodeOf is the one mapping from errors to exit codes.
func exitCodeOf(err error) ExitCode {
	var ee *exitError
	var ue *usageError
	var ae *apiclient.Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, apiclient.ErrNotRunning):
		return ExitNotRunning
	case errors.As(err, &ae):
		if c, ok := codeExits[ae.Code]; ok {
			return c
		}
		return ExitError
	case errors.Is(err, datadir.ErrLocked):
		return ExitConflict
	case errors.Is(err, jam.ErrInvalid):
		return ExitUsage
	case errors.Is(err, jam.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, jam.ErrConflict):
		return ExitConflict
	case errors.Is(err, jam.ErrStorageFull), errors.Is(err, jam.ErrUnavailable):
		// A store or service that cannot be reached now.
		return ExitUnavailable
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		// The daemon did not answer a call in time.
		return ExitUnavailable
	}
	return ExitError
}
