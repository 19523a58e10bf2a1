package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// fakeUI serves one page and vouches for requests by a test header.
type fakeUI struct{}

func (fakeUI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "ui page %s", r.URL.Path)
}

func (fakeUI) Authorize(r *http.Request) error {
	switch r.Header.Get("X-Test-Session") {
	case "ok":
		return nil
	case "csrf":
		return fmt.Errorf("%w: origin is not this listener", jam.ErrPermissionDenied)
	}
	return fmt.Errorf("%w: no web ui session", jam.ErrUnauthenticated)
}

func (fakeUI) LoginToken() (string, error) { return "tok123", nil }

func setupUI(t *testing.T, cfg Config) (*Server, string, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamui")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg.SocketPath = filepath.Join(dir, "s.sock")
	cfg.TokenPath = filepath.Join(dir, "token")
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := New(cfg, okBackend())
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	raw, _ := os.ReadFile(cfg.TokenPath) // absent when TCP is off
	return srv, cfg.SocketPath, strings.TrimSpace(string(raw))
}

func TestServer_tcpMountsUI(t *testing.T) {
	t.Parallel()
	srv, socket, token := setupUI(t, Config{HTTPAddr: "127.0.0.1:0", UI: fakeUI{}})
	addr := srv.HTTPAddr()

	cases := []struct {
		name       string
		method     string
		path       string
		host       string
		headers    map[string]string
		wantStatus int
		wantCode   wire.Code
		wantBody   string
	}{
		{name: "ui page needs no token", path: "/", wantStatus: 200, wantBody: "ui page /"},
		{name: "ui asset", path: "/assets/x/app.css", wantStatus: 200, wantBody: "ui page /assets/x/app.css"},
		{name: "api with bearer", path: "/v1/status", headers: map[string]string{"Authorization": "Bearer " + token}, wantStatus: 200},
		{name: "api with ui session", path: "/v1/status", headers: map[string]string{"X-Test-Session": "ok"}, wantStatus: 200},
		{name: "api post with ui session", method: http.MethodPost, path: "/v1/status", headers: map[string]string{"X-Test-Session": "ok"}, wantStatus: 405, wantCode: wire.CodeMethodNotAllowed},
		{name: "api failing the csrf checks", path: "/v1/status", headers: map[string]string{"X-Test-Session": "csrf"}, wantStatus: 403, wantCode: wire.CodePermissionDenied, wantBody: "origin is not this listener"},
		{name: "api without credentials", path: "/v1/status", wantStatus: 401, wantCode: wire.CodeUnauthenticated},
		{name: "wrong bearer beats a session", path: "/v1/status", headers: map[string]string{"Authorization": "Bearer nope", "X-Test-Session": "ok"}, wantStatus: 401, wantCode: wire.CodeUnauthenticated},
		{name: "unknown api route is the api's", path: "/v1/nope", headers: map[string]string{"X-Test-Session": "ok"}, wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "rebinding host on the ui", path: "/", host: "evil.example:80", wantStatus: 403, wantCode: wire.CodePermissionDenied},
		{name: "rebinding host on the api", path: "/v1/status", host: "evil.example:80", headers: map[string]string{"X-Test-Session": "ok"}, wantStatus: 403, wantCode: wire.CodePermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, "http://"+addr+tc.path, nil)
			require.NoError(t, err)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.Equal(t, tc.wantStatus, resp.StatusCode)
			if tc.wantCode != "" {
				detail := decodeError(t, resp)
				require.Equal(t, tc.wantCode, detail.Code)
				require.Contains(t, detail.Message, tc.wantBody)
				return
			}
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Contains(t, string(raw), tc.wantBody)
		})
	}

	// jam ui: a fresh one-time link over the socket.
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post("http://jamd/v1/ui/login", "application/json", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var login wire.UILogin
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&login))
	require.Equal(t, "http://"+addr+"/?token=tok123", login.URL)
}

func TestServer_uiLoginWithoutUI(t *testing.T) {
	t.Parallel()
	srv, _, _ := setupUI(t, Config{})
	_, err := srv.UILoginURL()
	require.ErrorIs(t, err, jam.ErrUnavailable)
}

func TestServer_httpFallback(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()

	srv, _, _ := setupUI(t, Config{HTTPAddr: busy.Addr().String(), HTTPFallback: true})
	require.NotEqual(t, busy.Addr().String(), srv.HTTPAddr(), "a taken default port falls back to a free one")
	require.True(t, strings.HasPrefix(srv.HTTPAddr(), "127.0.0.1:"))

	dir, err := os.MkdirTemp("", "jamui")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	strict, err := New(Config{SocketPath: filepath.Join(dir, "s.sock"), TokenPath: filepath.Join(dir, "t"), HTTPAddr: busy.Addr().String(), Logger: slog.New(slog.DiscardHandler)}, okBackend())
	require.NoError(t, err)
	require.ErrorContains(t, strict.Start(t.Context()), "address already in use", "a configured address is never swapped")
	require.NoError(t, strict.Stop(context.Background()))
}
