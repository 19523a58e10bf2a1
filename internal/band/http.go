package band

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// HTTPConfig configures the shared HTTP client.
type HTTPConfig struct {
	// MaxInFlight bounds concurrent requests. Default 16.
	MaxInFlight int
	// MaxIdlePerHost bounds idle connections per host. Default 8.
	MaxIdlePerHost int
	// Timeout is the default per-request timeout. Default 15s.
	Timeout time.Duration
}

func (c HTTPConfig) withDefaults() HTTPConfig {
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 16
	}
	if c.MaxIdlePerHost == 0 {
		c.MaxIdlePerHost = 8
	}
	if c.Timeout == 0 {
		c.Timeout = 15 * time.Second
	}
	return c
}

// HTTP is the daemon-wide HTTP client every Band client shares.
type HTTP struct {
	cfg  HTTPConfig
	hc   *http.Client
	sema chan struct{}
}

// NewHTTP builds the shared client.
func NewHTTP(cfg HTTPConfig) *HTTP {
	cfg = cfg.withDefaults()
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.MaxIdlePerHost * 4,
		MaxIdleConnsPerHost: cfg.MaxIdlePerHost,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &HTTP{
		cfg: cfg,
		hc: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		sema: make(chan struct{}, cfg.MaxInFlight),
	}
}

// InFlight reports how many requests hold a permit now.
func (h *HTTP) InFlight() int { return len(h.sema) }

// CloseIdle closes idle connections.
func (h *HTTP) CloseIdle() { h.hc.CloseIdleConnections() }

// do sends req once it holds a permit. The returned response's body
// releases the permit when closed, or when read to the end.
func (h *HTTP) do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.cfg.Timeout)
		req = req.WithContext(ctx)
		resp, err := h.acquireAndDo(req)
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	return h.acquireAndDo(req)
}

func (h *HTTP) acquireAndDo(req *http.Request) (*http.Response, error) {
	select {
	case h.sema <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		<-h.sema
		return nil, err
	}
	resp.Body = &permitBody{ReadCloser: resp.Body, release: func() { <-h.sema }}
	return resp, nil
}

// permitBody releases the request permit exactly once: at EOF, on a read
// error, or on Close.
type permitBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *permitBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.release)
	}
	return n, err
}

func (b *permitBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// cancelBody cancels the request's default timeout context when closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// errTransport wraps network failures so they classify as retryable.
type transportError struct{ err error }

func (e *transportError) Error() string { return "transport: " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// Is makes transport failures match jam.ErrUnavailable: the same call may
// succeed later.
func (e *transportError) Is(target error) bool { return target == jam.ErrUnavailable }

func isTransport(err error) bool {
	var te *transportError
	return errors.As(err, &te)
}

// wrapTransport names the request of a network failure. The URL that
// net/http quotes in it loses its query and userinfo (see redactURL).
func wrapTransport(method, path string, err error) error {
	err = redactURL(err)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return fmt.Errorf("%s %s: %w", method, path, &transportError{err: err})
}
