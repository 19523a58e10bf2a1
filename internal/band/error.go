package band

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Error is an error answer from Band or the hub.
type Error struct {
	Status    int
	Code      string
	Message   string
	RequestID string
	Details   map[string][]string
	// RetryAfter is the server's hint, zero when it gave none.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("band %d %s: %s", e.Status, e.Code, e.Message)
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// Retryable reports whether the same call may succeed later: timeouts,
// conflicts, too-early, rate limiting, server faults and expired
// credentials.
func (e *Error) Retryable() bool {
	switch e.Status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests, http.StatusUnauthorized:
		return true
	}
	return e.Status >= 500
}

// Is maps Band errors onto jam's sentinels, so callers branch once.
func (e *Error) Is(target error) bool {
	switch target {
	case jam.ErrNotFound:
		return e.Status == http.StatusNotFound
	case jam.ErrUnauthenticated:
		return e.Status == http.StatusUnauthorized
	case jam.ErrPermissionDenied:
		return e.Status == http.StatusForbidden
	case jam.ErrInvalid:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity || e.Status == http.StatusRequestEntityTooLarge
	case jam.ErrConflict:
		return e.Status == http.StatusConflict
	case jam.ErrUnavailable:
		return e.Retryable()
	case jam.ErrNotImplemented:
		return e.Status == http.StatusNotImplemented
	}
	return false
}

// Retryable reports whether err, from any client call, may succeed if the
// same call is made again: a retryable Band answer or a transport failure.
func Retryable(err error) bool {
	var be *Error
	if errors.As(err, &be) {
		return be.Retryable()
	}
	return isTransport(err)
}

// parseError reads an error response in either envelope:
// {"error":{"code","message","request_id","details"}} or the flat
// {"error":"code","message":"…"}.
func parseError(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-ID")}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(ra); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
	}
	var nested struct {
		Error struct {
			Code       string              `json:"code"`
			Message    string              `json:"message"`
			RequestID  string              `json:"request_id"`
			Details    map[string][]string `json:"details"`
			RetryAfter *int                `json:"retry_after"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &nested) == nil && nested.Error.Code != "" {
		e.Code, e.Message, e.Details = nested.Error.Code, nested.Error.Message, nested.Error.Details
		if nested.Error.RequestID != "" {
			e.RequestID = nested.Error.RequestID
		}
		if nested.Error.RetryAfter != nil && *nested.Error.RetryAfter >= 0 {
			e.RetryAfter = time.Duration(*nested.Error.RetryAfter) * time.Second
		}
		return e
	}
	var flat struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &flat) == nil && flat.Error != "" {
		e.Code, e.Message = flat.Error, flat.Message
		return e
	}
	e.Code = "http_" + strconv.Itoa(resp.StatusCode)
	e.Message = http.StatusText(resp.StatusCode)
	if len(body) > 0 && len(body) <= 200 {
		e.Message += ": " + string(body)
	}
	return e
}
