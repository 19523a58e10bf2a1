package band

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// maxResponseBytes bounds a response body read into memory.
const maxResponseBytes = 32 << 20

// Credential authenticates requests and sockets.
type Credential interface {
	// Key returns the secret to send now.
	Key(ctx context.Context) (string, error)
	// Refresh renews an expired secret. Credentials that cannot be renewed
	// return ErrNotRefreshable.
	Refresh(ctx context.Context) error
	// Bearer reports whether the secret goes in an Authorization: Bearer
	// header rather than X-API-Key.
	Bearer() bool
}

// ErrNotRefreshable is returned by credentials that cannot be renewed.
var ErrNotRefreshable = errors.New("credential cannot be refreshed")

// APIKey is a static Band API key (band_a_… for agents, band_u_… for users).
type APIKey string

// Key implements Credential.
func (k APIKey) Key(context.Context) (string, error) { return string(k), nil }

// Refresh implements Credential: API keys do not expire.
func (APIKey) Refresh(context.Context) error { return ErrNotRefreshable }

// Bearer implements Credential.
func (APIKey) Bearer() bool { return false }

// TokenSource is a bearer credential whose owner can renew it.
type TokenSource struct {
	// RefreshFunc returns a new token.
	RefreshFunc func(ctx context.Context) (string, error)

	mu    sync.Mutex
	token string // guarded by mu
}

// NewTokenSource returns a bearer credential starting at token.
func NewTokenSource(token string, refresh func(ctx context.Context) (string, error)) *TokenSource {
	return &TokenSource{token: token, RefreshFunc: refresh}
}

// Key implements Credential.
func (s *TokenSource) Key(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, nil
}

// Refresh implements Credential.
func (s *TokenSource) Refresh(ctx context.Context) error {
	if s.RefreshFunc == nil {
		return ErrNotRefreshable
	}
	t, err := s.RefreshFunc(ctx)
	if err != nil {
		return fmt.Errorf("refresh token: %w", err)
	}
	s.mu.Lock()
	s.token = t
	s.mu.Unlock()
	return nil
}

// Bearer implements Credential.
func (*TokenSource) Bearer() bool { return true }

// Client calls Band's REST API with one credential.
type Client struct {
	http *HTTP
	base *url.URL
	cred Credential
}

// NewClient returns a client of the Band (or hub) at baseURL, such as
// https://app.band.ai, authenticating with cred.
func NewClient(h *HTTP, baseURL string, cred Credential) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("band url %q: want http(s)://host", safeURL(baseURL))
	}
	if err := plainBase(u); err != nil {
		return nil, err
	}
	return &Client{http: h, base: u, cred: cred}, nil
}

// BaseURL returns the REST base URL.
func (c *Client) BaseURL() string { return c.base.String() }

// Credential returns the client's credential.
func (c *Client) Credential() Credential { return c.cred }

// call sends one request and decodes a success body into out. It returns
// the HTTP status. A 401 is retried once after a refresh of the credential.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
	}
	status, err := c.once(ctx, method, path, query, body, out)
	var be *Error
	if errors.As(err, &be) && be.Status == http.StatusUnauthorized {
		if rerr := c.cred.Refresh(ctx); rerr == nil {
			return c.once(ctx, method, path, query, body, out)
		}
	}
	return status, err
}

func (c *Client) once(ctx context.Context, method, path string, query url.Values, body []byte, out any) (int, error) {
	u := *c.base
	u.Path = c.base.Path + "/api/v1" + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, redactURL(err))
	}
	key, err := c.cred.Key(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s %s: credential: %w", method, path, err)
	}
	if c.cred.Bearer() {
		req.Header.Set("Authorization", "Bearer "+key)
	} else {
		req.Header.Set("X-API-Key", key)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.do(req)
	if err != nil {
		return 0, wrapTransport(method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, wrapTransport(method, path, err)
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, parseError(resp, raw))
	}
	if out != nil && resp.StatusCode != http.StatusNoContent && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode response: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }
