package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
)

// The codes a tool error starts with ("CODE: message"). They are stable:
// agents and the people reading their transcripts branch on them.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeNotFound         = "not_found"
	CodeConflict         = "conflict"
	CodeUnavailable      = "unavailable"
	CodePermissionDenied = "permission_denied"
	CodeUnauthenticated  = "unauthenticated"
	CodeRateLimited      = "rate_limited"
	CodeInternal         = "internal"
)

// errRateLimited marks a call refused by a session's rate or concurrency
// bound.
var errRateLimited = errors.New("rate limited")

// fieldError is bad input, found before Actions is called. Its text names
// the field and leaves out the sentinel's, so the result reads
// "invalid_argument: text: is empty".
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string        { return e.field + ": " + e.msg }
func (e *fieldError) Is(target error) bool { return target == jam.ErrInvalid }

// invalid is an input error naming the field.
func invalid(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// limitError is a call refused by a bound; its text says which.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == errRateLimited }

// catalogue maps the sentinels an Actions error may wrap to their codes,
// most specific first.
var catalogue = []struct {
	err  error
	code string
}{
	{errRateLimited, CodeRateLimited},
	{jam.ErrInvalid, CodeInvalidArgument},
	{jam.ErrNotFound, CodeNotFound},
	{jam.ErrAlreadyExists, CodeConflict},
	{jam.ErrConflict, CodeConflict},
	{jam.ErrLeaseLost, CodeConflict},
	{jam.ErrPermissionDenied, CodePermissionDenied},
	{jam.ErrGateRefused, CodePermissionDenied},
	{jam.ErrUnauthenticated, CodeUnauthenticated},
	{jam.ErrUnavailable, CodeUnavailable},
	{jam.ErrStopping, CodeUnavailable},
	{jam.ErrStorageFull, CodeUnavailable},
	{context.DeadlineExceeded, CodeUnavailable},
	{context.Canceled, CodeUnavailable},
}

// Code is the stable code of err: the first sentinel of the catalogue it
// wraps, or CodeInternal.
func Code(err error) string {
	for _, c := range catalogue {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return CodeInternal
}

// internalMessage is all an agent learns of an unclassified error; the
// detail goes to the log only.
const internalMessage = "the tool failed inside jam; the error is logged for the operator. Do not retry the same call."

// errorText is the text of a failed call's result: "CODE: message".
func errorText(err error) string {
	code := Code(err)
	if code == CodeInternal {
		return code + ": " + internalMessage
	}
	return code + ": " + err.Error()
}
