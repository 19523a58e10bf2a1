package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// httpStatus gives each catalogue code its one HTTP status.
var httpStatus = map[wire.Code]int{
	wire.CodeInvalidArgument:  http.StatusBadRequest,
	wire.CodeUnauthenticated:  http.StatusUnauthorized,
	wire.CodePermissionDenied: http.StatusForbidden,
	wire.CodeNotFound:         http.StatusNotFound,
	wire.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	wire.CodeAlreadyExists:    http.StatusConflict,
	wire.CodeConflict:         http.StatusConflict,
	wire.CodeLeaseLost:        http.StatusConflict,
	wire.CodePayloadTooLarge:  http.StatusRequestEntityTooLarge,
	wire.CodeInternal:         http.StatusInternalServerError,
	wire.CodeNotImplemented:   http.StatusNotImplemented,
	wire.CodeUnavailable:      http.StatusServiceUnavailable,
	wire.CodeStopping:         http.StatusServiceUnavailable,
	wire.CodeStorageFull:      http.StatusInsufficientStorage,

	// A room configured differently from the shared process it would run on.
	wire.CodePlacementIncompatible: http.StatusConflict,

	// What an external authority or remote answered.
	wire.CodeCredentialInvalid: http.StatusFailedDependency,
	wire.CodeRemoteUnreachable: http.StatusBadGateway,
	wire.CodeGateRefused:       http.StatusConflict,
}

// sentinelCodes maps the vocabulary's sentinel errors to codes. Order
// matters only when an error wraps two sentinels: the first match wins.
var sentinelCodes = []struct {
	err  error
	code wire.Code
}{
	{jam.ErrStopping, wire.CodeStopping},
	{jam.ErrCredentialInvalid, wire.CodeCredentialInvalid},
	{jam.ErrUnreachable, wire.CodeRemoteUnreachable},
	{jam.ErrGateRefused, wire.CodeGateRefused},
	{jam.ErrStorageFull, wire.CodeStorageFull},
	{jam.ErrLeaseLost, wire.CodeLeaseLost},
	{jam.ErrInvalid, wire.CodeInvalidArgument},
	{jam.ErrNotFound, wire.CodeNotFound},
	{jam.ErrAlreadyExists, wire.CodeAlreadyExists},
	{jam.ErrIncompatible, wire.CodePlacementIncompatible},
	{jam.ErrConflict, wire.CodeConflict},
	{jam.ErrUnauthenticated, wire.CodeUnauthenticated},
	{jam.ErrPermissionDenied, wire.CodePermissionDenied},
	{jam.ErrNotImplemented, wire.CodeNotImplemented},
	{jam.ErrUnavailable, wire.CodeUnavailable},
	{context.DeadlineExceeded, wire.CodeUnavailable},
}

// apiError is an error that already carries its code, for failures found
// by the HTTP layer itself (bad JSON, unknown route).
type apiError struct {
	code wire.Code
	msg  string
}

func (e *apiError) Error() string { return e.msg }

// Code is the catalogue code of err, as an answer would carry it.
func Code(err error) wire.Code {
	c, _ := classify(err)
	return c
}

// classify returns the code and the message to send for err. Errors outside
// the catalogue are internal: their text stays in the log, not the response.
func classify(err error) (wire.Code, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.code, ae.msg
	}
	for _, sc := range sentinelCodes {
		if errors.Is(err, sc.err) {
			return sc.code, err.Error()
		}
	}
	return wire.CodeInternal, "internal error; see the daemon log"
}

// statusOf returns the HTTP status of a catalogue code.
func statusOf(code wire.Code) int {
	if s, ok := httpStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}
