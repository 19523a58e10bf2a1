package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// fakeBackend is the shared fake daemon.
type fakeBackend = apitest.Backend

var _ Backend = fakeBackend{}

type testBundle struct {
	srv    *Server
	dir    string
	socket string
	unix   *http.Client
}

func setup(t *testing.T, backend Backend, httpAddr string, opts ...func(*Config)) *testBundle {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamapi") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	cfg := Config{SocketPath: socket, HTTPAddr: httpAddr, TokenPath: filepath.Join(dir, "token"), Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg, backend)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &testBundle{srv: srv, dir: dir, socket: socket, unix: &http.Client{Transport: tr}}
}

func okBackend() fakeBackend {
	return fakeBackend{StatusFunc: func(context.Context) (wire.Status, error) {
		return wire.Status{State: wire.StateRunning, PID: 42}, nil
	}}
}

func decodeError(t *testing.T, resp *http.Response) wire.ErrorDetail {
	t.Helper()
	defer resp.Body.Close()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body wire.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Error
}

func TestServer_statusOverSocket(t *testing.T) {
	t.Parallel()
	b := setup(t, okBackend(), "")
	resp, err := b.unix.Get("http://jamd/v1/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st wire.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Equal(t, 42, st.PID)

	fi, err := os.Stat(b.socket)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Empty(t, b.srv.HTTPAddr())
}

func TestServer_routingErrorsUseEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t, okBackend(), "")
	cases := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantCode   wire.Code
		wantAllow  string
	}{
		{name: "unknown route", method: http.MethodGet, path: "/v1/nope", wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "root", method: http.MethodGet, path: "/", wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "wrong method", method: http.MethodPost, path: "/v1/status", wantStatus: 405, wantCode: wire.CodeMethodNotAllowed, wantAllow: "GET, HEAD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tc.method, "http://jamd"+tc.path, nil)
			require.NoError(t, err)
			resp, err := b.unix.Do(req)
			require.NoError(t, err)
			require.Equal(t, tc.wantStatus, resp.StatusCode)
			require.Equal(t, tc.wantAllow, resp.Header.Get("Allow"))
			require.Equal(t, tc.wantCode, decodeError(t, resp).Code)
		})
	}
}

func TestServer_backendErrorsAreClassified(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   wire.Code
		wantMsg    string
	}{
		{name: "unavailable", err: fmt.Errorf("store info: %w", jam.ErrUnavailable), wantStatus: 503, wantCode: wire.CodeUnavailable, wantMsg: "status: store info: unavailable"},
		{name: "stopping beats unavailable", err: errors.Join(jam.ErrUnavailable, jam.ErrStopping), wantStatus: 503, wantCode: wire.CodeStopping},
		{name: "not found", err: jam.ErrNotFound, wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "internal hides detail", err: errors.New("disk on fire at /secret/path"), wantStatus: 500, wantCode: wire.CodeInternal, wantMsg: "internal error; see the daemon log"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fakeBackend{StatusFunc: func(context.Context) (wire.Status, error) { return wire.Status{}, tc.err }}, "")
			resp, err := b.unix.Get("http://jamd/v1/status")
			require.NoError(t, err)
			require.Equal(t, tc.wantStatus, resp.StatusCode)
			detail := decodeError(t, resp)
			require.Equal(t, tc.wantCode, detail.Code)
			if tc.wantMsg != "" {
				require.Equal(t, tc.wantMsg, detail.Message)
			}
		})
	}
}

func TestServer_panicBecomesInternalError(t *testing.T) {
	t.Parallel()
	b := setup(t, fakeBackend{StatusFunc: func(context.Context) (wire.Status, error) { panic("boom") }}, "")
	resp, err := b.unix.Get("http://jamd/v1/status")
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, wire.CodeInternal, decodeError(t, resp).Code)
}

func TestServer_tcpRequiresToken(t *testing.T) {
	t.Parallel()
	b := setup(t, okBackend(), "127.0.0.1:0")
	addr := b.srv.HTTPAddr()
	require.NotEmpty(t, addr)
	raw, err := os.ReadFile(filepath.Join(b.dir, "token"))
	require.NoError(t, err)
	token := strings.TrimSpace(string(raw))
	require.Len(t, token, 64)
	fi, err := os.Stat(filepath.Join(b.dir, "token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	cases := []struct {
		name       string
		auth       string
		host       string
		wantStatus int
		wantCode   wire.Code
	}{
		{name: "good token", auth: "Bearer " + token, wantStatus: 200},
		{name: "localhost host", auth: "Bearer " + token, host: "localhost:1", wantStatus: 200},
		{name: "no token", wantStatus: 401, wantCode: wire.CodeUnauthenticated},
		{name: "wrong token", auth: "Bearer " + strings.Repeat("0", 64), wantStatus: 401, wantCode: wire.CodeUnauthenticated},
		{name: "basic auth", auth: "Basic Zm9vOmJhcg==", wantStatus: 401, wantCode: wire.CodeUnauthenticated},
		{name: "rebinding host", auth: "Bearer " + token, host: "evil.example:80", wantStatus: 403, wantCode: wire.CodePermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/status", nil)
			require.NoError(t, err)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.Equal(t, tc.wantStatus, resp.StatusCode)
			if tc.wantCode != "" {
				require.Equal(t, tc.wantCode, decodeError(t, resp).Code)
			} else {
				resp.Body.Close()
			}
		})
	}
}

func TestServer_lifecycle(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "jamapi")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "s.sock")
	// A stale socket file from a crashed daemon is replaced.
	require.NoError(t, os.WriteFile(socket, nil, 0o600))

	srv, err := New(Config{SocketPath: socket, Logger: slog.New(slog.DiscardHandler)}, okBackend())
	require.NoError(t, err)
	require.NoError(t, srv.Stop(context.Background()), "stop before start")
	require.NoError(t, srv.Start(t.Context()))
	require.Error(t, srv.Start(t.Context()), "start twice")
	require.NoError(t, srv.Stop(context.Background()))
	require.NoError(t, srv.Stop(context.Background()), "stop twice")
	_, err = os.Stat(socket)
	require.ErrorIs(t, err, os.ErrNotExist, "stop removes the socket")
}

func TestNew_validates(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no socket", cfg: Config{Logger: log}, wantErr: "socket path is required"},
		{name: "http without token", cfg: Config{SocketPath: "/tmp/x.sock", HTTPAddr: "127.0.0.1:0", Logger: log}, wantErr: "token path is required"},
		{name: "no logger", cfg: Config{SocketPath: "/tmp/x.sock"}, wantErr: "logger is required"},
		{name: "long socket path", cfg: Config{SocketPath: "/tmp/" + strings.Repeat("d", 120) + "/jamd.sock", Logger: log}, wantErr: "over the 107 a unix socket allows"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg, okBackend())
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	srv := &Server{cfg: Config{MaxBodyBytes: 64}.withDefaults(), log: slog.New(slog.DiscardHandler)}
	type body struct {
		Name string          `json:"name"`
		ID   jam.WorkspaceID `json:"id"`
	}
	cases := []struct {
		name        string
		contentType string
		body        string
		wantCode    wire.Code
		wantMsg     string
	}{
		{name: "ok", body: `{"name":"a"}`},
		{name: "ok with type", contentType: "application/json; charset=utf-8", body: `{"name":"a"}`},
		{name: "wrong type", contentType: "text/plain", body: `{}`, wantCode: wire.CodeInvalidArgument, wantMsg: "is not application/json"},
		{name: "unknown field", body: `{"nmae":"a"}`, wantCode: wire.CodeInvalidArgument, wantMsg: `unknown field "nmae"`},
		{name: "two values", body: `{"name":"a"}{}`, wantCode: wire.CodeInvalidArgument, wantMsg: "want one JSON value"},
		{name: "truncated", body: `{"name":`, wantCode: wire.CodeInvalidArgument},
		{name: "bad id", body: `{"id":"sess_01jdq00000000000000000000000"}`, wantCode: wire.CodeInvalidArgument, wantMsg: `want "ws_"`},
		{name: "too large", body: `{"name":"` + strings.Repeat("x", 100) + `"}`, wantCode: wire.CodePayloadTooLarge},
		{name: "empty", body: ``, wantCode: wire.CodeInvalidArgument},
		{name: "invalid utf-8", body: "{\"name\":\"a\xffb\"}", wantCode: wire.CodeInvalidArgument, wantMsg: "not valid UTF-8"},
		{name: "deeply nested", body: strings.Repeat("[", 60), wantCode: wire.CodeInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			var dst body
			err := srv.decodeJSON(httptest.NewRecorder(), req, &dst)
			if tc.wantCode == "" {
				require.NoError(t, err)
				return
			}
			code, msg := classify(err)
			require.Equal(t, tc.wantCode, code)
			require.Contains(t, msg, tc.wantMsg)
		})
	}
}

func TestCatalogue_everyCodeHasAStatus(t *testing.T) {
	t.Parallel()
	for _, c := range wire.Codes {
		_, ok := httpStatus[c]
		require.True(t, ok, "code %s has no HTTP status", c)
	}
	require.Len(t, httpStatus, len(wire.Codes))
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add(`{"name":"a"}`)
	f.Add(`{"id":"ws_01jdq00000000000000000000000"}`)
	f.Add(`[[[[[[[[[[`)
	srv := &Server{cfg: Config{}.withDefaults(), log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, body string) {
		var dst struct {
			Name string          `json:"name"`
			ID   jam.WorkspaceID `json:"id"`
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(body))
		err := srv.decodeJSON(httptest.NewRecorder(), req, &dst)
		if err != nil {
			code, _ := classify(err)
			if code != wire.CodeInvalidArgument && code != wire.CodePayloadTooLarge {
				t.Fatalf("bad body %q classified as %s", body, code)
			}
			return
		}
		if dst.ID != "" {
			if _, err := jam.ParseID[jam.WorkspaceID](string(dst.ID)); err != nil {
				t.Fatalf("decoded an invalid id %q", dst.ID)
			}
		}
	})
}
