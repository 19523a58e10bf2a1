package forge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/jamhq/jam/internal/jam"
)

// The codes of [Error]: stable strings the API and the jobs branch on.
const (
	CodeCredentialInvalid = "credential_invalid" // 401, or 403 "Bad credentials"
	CodeNotFound          = "not_found"          // 404 (also what GitHub answers for a private repository the token cannot see)
	CodeRateLimited       = "rate_limited"       // 429, or 403 with x-ratelimit-remaining: 0 or Retry-After
	CodeUnavailable       = "unavailable"        // 5xx, timeouts, connection errors, an unreadable response
	CodeConflict          = "conflict"           // 409 (for a merge: the head moved from the given sha)
	CodeNotMergeable      = "not_mergeable"      // 405 on merge
	CodeInvalid           = "invalid"            // 422 and other 4xx, and arguments refused before a request
	CodeForbidden         = "forbidden"          // 403 otherwise
)

// Error is every failure of this package.
type Error struct {
	Code       string        // one of the Code* constants
	Status     int           // HTTP status; 0 when no response came
	Message    string        // GitHub's message, or what went wrong; never the token
	RequestID  string        // X-GitHub-Request-Id of the response, if any
	RetryAfter time.Duration // for rate_limited: how long GitHub asks to wait (0: not said)
	Err        error         // the underlying error, if any
}

// Error returns "github: CODE (STATUS): MESSAGE [request ID]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("github: ")
	b.WriteString(e.Code)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (%d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Unwrap returns the jam sentinel of the code joined with the underlying
// error, so errors.Is finds either.
func (e *Error) Unwrap() error {
	s := e.sentinel()
	if e.Err == nil {
		return s
	}
	return both{s, e.Err}
}

// Retryable reports whether the same request may succeed later unchanged.
func (e *Error) Retryable() bool { return e.Code == CodeUnavailable || e.Code == CodeRateLimited }

func (e *Error) sentinel() error {
	switch e.Code {
	case CodeNotFound:
		return jam.ErrNotFound
	case CodeUnavailable, CodeRateLimited:
		return jam.ErrUnavailable
	case CodeConflict, CodeNotMergeable:
		return jam.ErrConflict
	case CodeCredentialInvalid:
		return jam.ErrUnauthenticated
	case CodeForbidden:
		return jam.ErrPermissionDenied
	default:
		return jam.ErrInvalid
	}
}

// both is two errors seen as one by errors.Is and errors.As; its text is
// the second's (the sentinel adds nothing a reader needs).
type both [2]error

func (b both) Error() string   { return b[1].Error() }
func (b both) Unwrap() []error { return b[:] }

// classify turns what a go-github call returned into an *Error. resp may
// be nil (no response). redact removes the token from any text kept.
func classify(err error, resp *http.Response, now time.Time, redact func(string) string) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	e := &Error{}
	if err != nil {
		e.Err = redactedError{err, redact}
	}
	var ger *github.ErrorResponse
	var rle *github.RateLimitError
	var are *github.AbuseRateLimitError
	switch {
	case errors.As(err, &rle):
		e.Message = rle.Message
		if resp == nil {
			resp = rle.Response
		}
	case errors.As(err, &are):
		e.Message = are.Message
		if resp == nil {
			resp = are.Response
		}
	case errors.As(err, &ger):
		e.Message = ger.Message
		for _, d := range ger.Errors {
			if d.Message != "" {
				e.Message += ": " + d.Message
			}
		}
		if resp == nil {
			resp = ger.Response
		}
	}
	if resp == nil || resp.StatusCode < 300 {
		e.Code = CodeUnavailable
		e.Message = transportMessage(err)
		if resp != nil {
			e.Status = resp.StatusCode
			e.RequestID = resp.Header.Get("X-GitHub-Request-Id")
		}
		e.Message = redact(e.Message)
		return e
	}
	e.Status = resp.StatusCode
	e.RequestID = resp.Header.Get("X-GitHub-Request-Id")
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	e.Message = redact(e.Message)
	h := resp.Header
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized:
		e.Code = CodeCredentialInvalid
	case s == http.StatusTooManyRequests || s == http.StatusForbidden && (h.Get("X-Ratelimit-Remaining") == "0" || h.Get("Retry-After") != "" || rle != nil || are != nil):
		e.Code = CodeRateLimited
		e.RetryAfter = retryAfter(h, now)
		if e.RetryAfter == 0 && rle != nil && !rle.Rate.Reset.IsZero() {
			e.RetryAfter = max(0, rle.Rate.Reset.Sub(now))
		}
		if e.RetryAfter == 0 && are != nil {
			e.RetryAfter = are.GetRetryAfter()
		}
	case s == http.StatusForbidden && strings.Contains(strings.ToLower(e.Message), "bad credentials"):
		e.Code = CodeCredentialInvalid
	case s == http.StatusForbidden:
		e.Code = CodeForbidden
	case s == http.StatusNotFound:
		e.Code = CodeNotFound
	case s == http.StatusMethodNotAllowed:
		e.Code = CodeNotMergeable
	case s == http.StatusConflict:
		e.Code = CodeConflict
	case s >= 500:
		e.Code = CodeUnavailable
	default: // 3xx we did not follow, 400, 406, 410, 422, ...
		e.Code = CodeInvalid
	}
	return e
}

// retryAfter reads Retry-After (seconds or an HTTP date), else
// x-ratelimit-reset (Unix seconds); 0 when neither says anything usable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return min(time.Duration(n)*time.Second, maxRetryAfter)
		}
		if t, err := http.ParseTime(v); err == nil {
			return min(max(0, t.Sub(now)), maxRetryAfter)
		}
	}
	if v := strings.TrimSpace(h.Get("X-Ratelimit-Reset")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n < 1<<40 {
			return min(max(0, time.Unix(n, 0).Sub(now)), maxRetryAfter)
		}
	}
	return 0
}

// maxRetryAfter bounds what a server may ask: a day.
const maxRetryAfter = 24 * time.Hour

// transportMessage says what failed when no usable response came.
func transportMessage(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the request timed out"
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	case errors.Is(err, errBodyTooLarge):
		return err.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "the request timed out"
	case err != nil:
		return "no usable response: " + err.Error()
	}
	return "no usable response"
}

// redactedError is an error whose text has the token removed.
type redactedError struct {
	err    error
	redact func(string) string
}

func (r redactedError) Error() string {
	if r.err == nil {
		return "<nil>"
	}
	return r.redact(r.err.Error())
}
func (r redactedError) Unwrap() error { return r.err }
