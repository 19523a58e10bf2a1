package forge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	const token = "ghp_TOKEN123"
	redact := func(s string) string { return strings.ReplaceAll(s, token, "[redacted]") }
	resp := func(status int, kv ...string) *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		h.Set("X-GitHub-Request-Id", "RID:1")
		req := &http.Request{Method: "GET", URL: &url.URL{Scheme: "https", Host: "api.github.com", Path: "/repos/o/r"}}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}
	}
	gerr := func(r *http.Response, msg string, details ...string) error {
		e := &github.ErrorResponse{Response: r, Message: msg}
		for _, d := range details {
			e.Errors = append(e.Errors, github.Error{Resource: "PullRequest", Code: "custom", Message: d})
		}
		return e
	}
	cases := []struct {
		name       string
		err        func() (error, *http.Response)
		code       string
		status     int
		retryAfter time.Duration
		sentinel   error
		retryable  bool
		msg        string
	}{
		{name: "401", err: func() (error, *http.Response) { r := resp(401); return gerr(r, "Bad credentials"), r },
			code: CodeCredentialInvalid, status: 401, sentinel: jam.ErrUnauthenticated, msg: "Bad credentials"},
		{name: "403 bad credentials", err: func() (error, *http.Response) { r := resp(403); return gerr(r, "Bad credentials"), r },
			code: CodeCredentialInvalid, status: 403, sentinel: jam.ErrUnauthenticated},
		{name: "403 forbidden", err: func() (error, *http.Response) {
			r := resp(403)
			return gerr(r, "Resource not accessible by personal access token"), r
		}, code: CodeForbidden, status: 403, sentinel: jam.ErrPermissionDenied},
		{name: "403 primary rate limit", err: func() (error, *http.Response) {
			r := resp(403, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1700000090")
			return &github.RateLimitError{Response: r, Message: "API rate limit exceeded"}, r
		}, code: CodeRateLimited, status: 403, retryAfter: 90 * time.Second, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "403 secondary rate limit", err: func() (error, *http.Response) {
			r := resp(403, "Retry-After", "60")
			d := time.Minute
			return &github.AbuseRateLimitError{Response: r, Message: "You have exceeded a secondary rate limit", RetryAfter: &d}, r
		}, code: CodeRateLimited, status: 403, retryAfter: time.Minute, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "429 retry-after seconds", err: func() (error, *http.Response) { r := resp(429, "Retry-After", "7"); return gerr(r, "slow down"), r },
			code: CodeRateLimited, status: 429, retryAfter: 7 * time.Second, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "429 retry-after date", err: func() (error, *http.Response) {
			r := resp(429, "Retry-After", now.Add(30*time.Second).UTC().Format(http.TimeFormat))
			return gerr(r, "slow down"), r
		}, code: CodeRateLimited, status: 429, retryAfter: 30 * time.Second, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "429 reset header", err: func() (error, *http.Response) {
			r := resp(429, "X-Ratelimit-Reset", "1700000005")
			return gerr(r, "slow down"), r
		}, code: CodeRateLimited, status: 429, retryAfter: 5 * time.Second, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "429 nothing said", err: func() (error, *http.Response) { r := resp(429, "Retry-After", "soon"); return gerr(r, ""), r },
			code: CodeRateLimited, status: 429, sentinel: jam.ErrUnavailable, retryable: true, msg: "Too Many Requests"},
		{name: "429 absurd retry-after", err: func() (error, *http.Response) { r := resp(429, "Retry-After", "999999999"); return gerr(r, ""), r },
			code: CodeRateLimited, status: 429, retryAfter: maxRetryAfter, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "404", err: func() (error, *http.Response) { r := resp(404); return gerr(r, "Not Found"), r },
			code: CodeNotFound, status: 404, sentinel: jam.ErrNotFound},
		{name: "405", err: func() (error, *http.Response) { r := resp(405); return gerr(r, "Pull Request is not mergeable"), r },
			code: CodeNotMergeable, status: 405, sentinel: jam.ErrConflict},
		{name: "409", err: func() (error, *http.Response) { r := resp(409); return gerr(r, "Head branch was modified"), r },
			code: CodeConflict, status: 409, sentinel: jam.ErrConflict},
		{name: "422 details", err: func() (error, *http.Response) {
			r := resp(422)
			return gerr(r, "Validation Failed", "head invalid"), r
		}, code: CodeInvalid, status: 422, sentinel: jam.ErrInvalid, msg: "Validation Failed: head invalid"},
		{name: "400", err: func() (error, *http.Response) { r := resp(400); return gerr(r, "Problems parsing JSON"), r },
			code: CodeInvalid, status: 400, sentinel: jam.ErrInvalid},
		{name: "500", err: func() (error, *http.Response) { r := resp(500); return gerr(r, "Server Error"), r },
			code: CodeUnavailable, status: 500, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "503", err: func() (error, *http.Response) { r := resp(503); return gerr(r, ""), r },
			code: CodeUnavailable, status: 503, sentinel: jam.ErrUnavailable, retryable: true, msg: "Service Unavailable"},
		{name: "deadline", err: func() (error, *http.Response) { return context.DeadlineExceeded, nil },
			code: CodeUnavailable, sentinel: jam.ErrUnavailable, retryable: true, msg: "timed out"},
		{name: "connection refused", err: func() (error, *http.Response) {
			return &url.Error{Op: "Get", URL: "https://api.github.com/user", Err: errors.New("connect: connection refused")}, nil
		}, code: CodeUnavailable, sentinel: jam.ErrUnavailable, retryable: true, msg: "connection refused"},
		{name: "undecodable 200", err: func() (error, *http.Response) { return errors.New("invalid character '<'"), resp(200) },
			code: CodeUnavailable, status: 200, sentinel: jam.ErrUnavailable, retryable: true},
		{name: "body too large", err: func() (error, *http.Response) { return errBodyTooLarge, nil },
			code: CodeUnavailable, sentinel: jam.ErrUnavailable, retryable: true, msg: "longer than"},
		{name: "token in a message is redacted", err: func() (error, *http.Response) {
			r := resp(422)
			return gerr(r, "token "+token+" echoed"), r
		}, code: CodeInvalid, status: 422, sentinel: jam.ErrInvalid, msg: "[redacted]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err, r := tc.err()
			e := classify(err, r, now, redact)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.status, e.Status)
			require.Equal(t, tc.retryAfter, e.RetryAfter)
			require.Equal(t, tc.retryable, e.Retryable())
			require.ErrorIs(t, e, tc.sentinel)
			require.ErrorIs(t, e, err, "the underlying error stays reachable")
			if r != nil {
				require.Equal(t, "RID:1", e.RequestID)
				require.Contains(t, e.Error(), "RID:1")
			}
			if tc.msg != "" {
				require.Contains(t, e.Error(), tc.msg)
			}
			require.NotContains(t, e.Error(), token)
			require.NotContains(t, errors.Unwrap(e).Error(), token)
		})
	}
}

func TestClassify_KeepsAnError(t *testing.T) {
	t.Parallel()
	in := &Error{Code: CodeInvalid, Message: "x"}
	require.Same(t, in, classify(in, nil, time.Now(), func(s string) string { return s }))
}

func FuzzClassify(f *testing.F) {
	f.Add(429, "7", "", "", "slow down")
	f.Add(403, "", "0", "1700000090", "API rate limit exceeded")
	f.Add(403, "", "", "", "Bad credentials")
	f.Add(401, "", "", "", "")
	f.Add(503, "Wed, 21 Oct 2015 07:28:00 GMT", "", "", "")
	f.Add(422, "-1", "x", "99999999999999999999", "ghp_TOKEN123 in a message")
	f.Add(0, "", "", "", "")
	const token = "ghp_TOKEN123"
	redact := func(s string) string { return strings.ReplaceAll(s, token, "[redacted]") }
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, status int, retry, remaining, reset, msg string) {
		var r *http.Response
		var err error = errors.New("transport: " + msg)
		if status != 0 {
			status = 100 + (status%500+500)%500 // 100..599
			h := http.Header{}
			h.Set("Retry-After", retry)
			h.Set("X-Ratelimit-Remaining", remaining)
			h.Set("X-Ratelimit-Reset", reset)
			req := &http.Request{Method: "GET", URL: &url.URL{Scheme: "https", Host: "api.github.com", Path: "/"}}
			r = &http.Response{StatusCode: status, Header: h, Request: req, Body: io.NopCloser(strings.NewReader(""))}
			err = &github.ErrorResponse{Response: r, Message: msg}
		}
		e := classify(err, r, now, redact)
		switch e.Code {
		case CodeCredentialInvalid, CodeNotFound, CodeRateLimited, CodeUnavailable, CodeConflict, CodeNotMergeable, CodeInvalid, CodeForbidden:
		default:
			t.Fatalf("code %q is not one of the codes", e.Code)
		}
		require.GreaterOrEqual(t, e.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, e.RetryAfter, maxRetryAfter)
		if e.Code != CodeRateLimited {
			require.Zero(t, e.RetryAfter)
		}
		require.Equal(t, e.Code == CodeUnavailable || e.Code == CodeRateLimited, e.Retryable())
		if r != nil && r.StatusCode >= 500 {
			require.Equal(t, CodeUnavailable, e.Code)
		}
		require.NotContains(t, e.Error(), token)
		require.NotContains(t, errors.Unwrap(e).Error(), token)
	})
}

func TestBoundedTransport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		size    int
		chunked bool
		wantErr bool
	}{
		{name: "at the bound", size: maxBody},
		{name: "over, with a length", size: maxBody + 1, wantErr: true},
		{name: "over, chunked", size: maxBody + 1, chunked: true, wantErr: true},
		{name: "small chunked", size: 10, chunked: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := boundedTransport{roundTripFunc(func(*http.Request) (*http.Response, error) {
				length := int64(tc.size)
				if tc.chunked {
					length = -1
				}
				return &http.Response{StatusCode: 200, ContentLength: length, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size)))}, nil
			})}
			resp, err := rt.RoundTrip(&http.Request{})
			if err == nil {
				var n int64
				n, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil {
					require.EqualValues(t, tc.size, n)
				}
			}
			if tc.wantErr {
				require.ErrorIs(t, err, errBodyTooLarge)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
