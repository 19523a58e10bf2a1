// Package apiclient is the Go client of jam's control API. The CLI reaches
// the daemon only through it.
//
// It dials the daemon's unix socket, decodes the error envelope into
// [*Error] (whose Code is stable), and reports a daemon that is not running
// as [ErrNotRunning] rather than as a raw dial error.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
)

// ErrNotRunning means no daemon answers on the socket.
var ErrNotRunning = errors.New("jamd is not running")

// Error is an error response from the daemon.
type Error struct {
	HTTPStatus int
	Code       wire.Code
	Message    string
}

func (e *Error) Error() string { return e.Message + " (" + string(e.Code) + ")" }

// Client talks to one daemon. It is safe for concurrent use.
type Client struct {
	socket string
	hc     *http.Client
}

// New returns a client for the daemon listening on socketPath.
func New(socketPath string) *Client {
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", socketPath)
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{socket: socketPath, hc: &http.Client{Transport: tr}}
}

// NewWrapped is New with the client's transport wrapped by wrap (tests
// validate every answer with it).
func NewWrapped(socketPath string, wrap func(http.RoundTripper) http.RoundTripper) *Client {
	c := New(socketPath)
	c.hc.Transport = wrap(c.hc.Transport)
	return c
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Status returns the daemon's status.
func (c *Client) Status(ctx context.Context) (wire.Status, error) {
	var st wire.Status
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/status"}, &st)
	return st, err
}

// WaitReady polls Status every interval until the daemon answers or ctx
// ends. It returns the first answer, or the last error when ctx ends.
func (c *Client) WaitReady(ctx context.Context, interval time.Duration) (wire.Status, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		st, err := c.Status(ctx)
		switch {
		case err == nil:
			return st, nil
		case ctx.Err() != nil && last != nil:
			// ctx ended during this call (or a tick raced ctx.Done): the
			// daemon was still not running.
			return wire.Status{}, last
		case !errors.Is(err, ErrNotRunning) && !errors.Is(err, syscall.ECONNRESET):
			// A connection reset on the socket is a daemon not serving
			// yet as well: seen right after a daemon was killed, while
			// the next one starts.
			return st, err
		}
		last = err
		select {
		case <-ctx.Done():
			return wire.Status{}, err
		case <-t.C:
		}
	}
}

// request is one call to the daemon.
type request struct {
	method string
	// path is already escaped; see pathf.
	path  string
	query url.Values
	// body is encoded as JSON when not nil.
	body any
	// timeout bounds the whole call on top of ctx; 0 leaves it to ctx.
	timeout time.Duration
}

func (c *Client) do(ctx context.Context, r request, out any) error {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	target := "http://jamd" + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		raw, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if notRunning(err) {
			return fmt.Errorf("%w (no daemon answers on %s)", ErrNotRunning, c.socket)
		}
		if r.timeout > 0 && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s %s: no answer within %s: %w", r.method, r.path, r.timeout, err)
		}
		return fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", r.method, r.path, err)
	}
	if len(raw) > maxResponse {
		return fmt.Errorf("%s %s: the response is over %d MiB", r.method, r.path, maxResponse>>20)
	}
	if resp.StatusCode >= 300 {
		var eb wire.ErrorBody
		if json.Unmarshal(raw, &eb) != nil || eb.Error.Code == "" {
			return &Error{HTTPStatus: resp.StatusCode, Code: wire.CodeInternal, Message: fmt.Sprintf("%s %s: unexpected %s", r.method, r.path, resp.Status)}
		}
		return &Error{HTTPStatus: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out == nil {
		return nil
	}
	if b, ok := out.(*[]byte); ok {
		*b = raw // a body that is not JSON (a patch), as it came
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", r.method, r.path, err)
	}
	return nil
}

// maxResponse bounds one response body.
const maxResponse = 16 << 20

// pathf builds a request path, escaping each argument as one segment.
func pathf(format string, segments ...string) string {
	args := make([]any, len(segments))
	for i, s := range segments {
		args[i] = url.PathEscape(s)
	}
	return fmt.Sprintf(format, args...)
}

// notRunning reports whether a dial error means nothing listens: the
// socket file is missing, or it is stale and refuses connections.
func notRunning(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}
