package webui_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/webui"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const host = "127.0.0.1:7420"

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type testBundle struct {
	ui    *webui.UI
	dir   string
	clock *clock
}

func setup(t *testing.T, cfg webui.Config) *testBundle {
	t.Helper()
	dir := t.TempDir()
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	if cfg.KeyPath == "" {
		cfg.KeyPath = filepath.Join(dir, webui.KeyFile)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Now = c.Now
	ui, err := webui.New(cfg)
	require.NoError(t, err)
	return &testBundle{ui: ui, dir: dir, clock: c}
}

// serve runs one request through the UI.
func (b *testBundle) serve(r *http.Request) *http.Response {
	w := httptest.NewRecorder()
	b.ui.ServeHTTP(w, r)
	return w.Result()
}

func get(target string, cookies ...*http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://"+host+target, nil)
	for _, c := range cookies {
		r.AddCookie(c)
	}
	return r
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(raw)
}

// login exchanges a fresh token for the session cookie.
func (b *testBundle) login(t *testing.T) *http.Cookie {
	t.Helper()
	token, err := b.ui.LoginToken()
	require.NoError(t, err)
	resp := b.serve(get("/?token=" + token))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	return cookies[0]
}

func TestUI_loginExchangesTokenOnceForCookie(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	token, err := b.ui.LoginToken()
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{64}$`, token)

	resp := b.serve(get("/?token=" + token))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("Location"), "the token leaves the address bar")
	require.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.Equal(t, "jam_ui_7420", c.Name, "the cookie is named after the listener's port")
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.Equal(t, "/", c.Path)
	require.Equal(t, 30*24*3600, c.MaxAge)
	require.NotContains(t, c.Value, token)

	// The token is spent: a second use (without the cookie) is refused.
	resp = b.serve(get("/?token=" + token))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, resp.Cookies())
	require.Contains(t, body(t, resp), "already used")

	// The cookie opens the page; nothing else does.
	resp = b.serve(get("/", c))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Contains(t, body(t, resp), `<script type="module" src="/assets/`)

	resp = b.serve(get("/"))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	page := body(t, resp)
	require.Contains(t, page, "not signed in")
	require.Contains(t, page, "jam ui")
	require.NotContains(t, page, "<script", "the sign-in page runs nothing")

	// A used link opened again by a signed-in browser just goes home.
	resp = b.serve(get("/?token="+token, c))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Empty(t, resp.Cookies())

	resp = b.serve(get("/?token=" + strings.Repeat("0", 64)))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestUI_tokensAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{MaxTokens: 2})
	first, err := b.ui.LoginToken()
	require.NoError(t, err)
	second, err := b.ui.LoginToken()
	require.NoError(t, err)
	third, err := b.ui.LoginToken()
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, b.serve(get("/?token="+first)).StatusCode, "the oldest token was dropped")
	require.Equal(t, http.StatusSeeOther, b.serve(get("/?token="+third)).StatusCode)
	require.Equal(t, http.StatusSeeOther, b.serve(get("/?token="+second)).StatusCode)
}

func TestUI_Authorize(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	other := setup(t, webui.Config{}).login(t) // signed by another daemon's key

	type req struct {
		method  string
		cookie  *http.Cookie
		host    string
		headers map[string]string
	}
	post := func(cookie *http.Cookie, headers map[string]string) req {
		return req{method: http.MethodPost, cookie: cookie, headers: headers}
	}
	okHeaders := map[string]string{"X-Jam-UI": "1", "Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range okHeaders {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	tampered := *c
	tampered.Value = c.Value[:len(c.Value)-2] + "AA"
	renamed := *c
	renamed.Name = "jam_ui_7421"

	cases := []struct {
		name    string
		req     req
		wantErr error
		wantMsg string
	}{
		{name: "get with cookie", req: req{method: http.MethodGet, cookie: c}},
		{name: "same-origin get", req: req{method: http.MethodGet, cookie: c, headers: map[string]string{"Sec-Fetch-Site": "same-origin"}}},
		{name: "post from the page", req: post(c, okHeaders)},
		{name: "no cookie", req: req{method: http.MethodGet}, wantErr: jam.ErrUnauthenticated},
		{name: "cookie of another daemon", req: req{method: http.MethodGet, cookie: other}, wantErr: jam.ErrUnauthenticated, wantMsg: "not signed"},
		{name: "tampered cookie", req: req{method: http.MethodGet, cookie: &tampered}, wantErr: jam.ErrUnauthenticated},
		{name: "cookie of another port", req: req{method: http.MethodGet, cookie: &renamed}, wantErr: jam.ErrUnauthenticated},
		{name: "post without the ui header", req: post(c, with("X-Jam-UI", "")), wantErr: jam.ErrPermissionDenied, wantMsg: "X-Jam-UI: 1"},
		{name: "post without origin", req: post(c, with("Origin", "")), wantErr: jam.ErrPermissionDenied, wantMsg: "is not this listener"},
		{name: "post from another port", req: post(c, with("Origin", "http://127.0.0.1:8080")), wantErr: jam.ErrPermissionDenied},
		{name: "post from another site", req: post(c, with("Origin", "https://evil.example")), wantErr: jam.ErrPermissionDenied},
		{name: "cross-site get", req: req{method: http.MethodGet, cookie: c, headers: map[string]string{"Sec-Fetch-Site": "cross-site"}}, wantErr: jam.ErrPermissionDenied},
		{name: "same-site get (another port)", req: req{method: http.MethodGet, cookie: c, headers: map[string]string{"Sec-Fetch-Site": "same-site"}}, wantErr: jam.ErrPermissionDenied},
		{name: "delete without the ui header", req: req{method: http.MethodDelete, cookie: c, headers: with("X-Jam-UI", "")}, wantErr: jam.ErrPermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tc.req.method, "http://"+host+"/v1/rooms/x/messages", nil)
			if tc.req.cookie != nil {
				r.AddCookie(tc.req.cookie)
			}
			for k, v := range tc.req.headers {
				r.Header.Set(k, v)
			}
			err := b.ui.Authorize(r)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			require.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

func TestUI_sessionExpiresAndRenews(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{SessionTTL: 72 * time.Hour})
	c := b.login(t)
	require.NoError(t, b.ui.Authorize(get("/v1/status", c)))

	// Past a day, opening the page renews the session.
	b.clock.Add(25 * time.Hour)
	resp := b.serve(get("/", c))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	renewed := resp.Cookies()
	require.Len(t, renewed, 1)
	require.NotEqual(t, c.Value, renewed[0].Value)

	// The old cookie expires on time; the renewed one lasts longer.
	b.clock.Add(48 * time.Hour)
	require.ErrorIs(t, b.ui.Authorize(get("/v1/status", c)), jam.ErrUnauthenticated)
	require.NoError(t, b.ui.Authorize(get("/v1/status", renewed[0])))
	require.Equal(t, http.StatusUnauthorized, b.serve(get("/", c)).StatusCode)
}

func TestUI_sessionSurvivesRestartWithItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	keyPath := filepath.Join(b.dir, webui.KeyFile)
	fi, err := os.Stat(keyPath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	again, err := webui.New(webui.Config{KeyPath: keyPath, Logger: slog.New(slog.DiscardHandler), Now: b.clock.Now})
	require.NoError(t, err)
	require.NoError(t, again.Authorize(get("/v1/status", c)), "the same key vouches for the cookie after a restart")

	// A new key signs every browser out.
	require.NoError(t, os.Remove(keyPath))
	fresh, err := webui.New(webui.Config{KeyPath: keyPath, Logger: slog.New(slog.DiscardHandler), Now: b.clock.Now})
	require.NoError(t, err)
	require.ErrorIs(t, fresh.Authorize(get("/v1/status", c)), jam.ErrUnauthenticated)

	require.NoError(t, os.WriteFile(keyPath, []byte("short\n"), 0o600))
	_, err = webui.New(webui.Config{KeyPath: keyPath, Logger: slog.New(slog.DiscardHandler)})
	require.ErrorContains(t, err, "is not 32 hex-encoded bytes")
}

func TestUI_signOut(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/signout", nil)
	r.AddCookie(c)
	require.Equal(t, http.StatusForbidden, b.serve(r).StatusCode, "sign-out needs the UI header too")

	r.Header.Set("X-Jam-UI", "1")
	r.Header.Set("Origin", "http://"+host)
	resp := b.serve(r)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	require.Equal(t, -1, resp.Cookies()[0].MaxAge)
}

var assetRef = regexp.MustCompile(`/assets/([0-9a-f]{12})/`)

func TestUI_staticAssets(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	index := body(t, b.serve(get("/", c)))
	m := assetRef.FindStringSubmatch(index)
	require.NotNil(t, m, "the page names its assets by version")
	version := m[1]

	cases := []struct {
		path       string
		wantStatus int
		wantType   string
		wantCache  string
		wantBody   string
	}{
		{path: "/assets/" + version + "/app.css", wantStatus: 200, wantType: "text/css; charset=utf-8", wantCache: "public, max-age=31536000, immutable", wantBody: "--accent"},
		{path: "/assets/" + version + "/js/app.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantCache: "public, max-age=31536000, immutable", wantBody: "import "},
		{path: "/assets/" + version + "/js/room.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantBody: "feed.on("},
		{path: "/assets/" + version + "/icon.svg", wantStatus: 200, wantType: "image/svg+xml"},
		{path: "/assets/000000000000/app.css", wantStatus: 200, wantType: "text/css; charset=utf-8", wantCache: "no-cache"},
		{path: "/assets/" + version + "/index.html", wantStatus: 404},
		{path: "/assets/" + version + "/nope.js", wantStatus: 404},
		{path: "/assets/" + version + "/../webui.go", wantStatus: 307}, // cleaned to /assets/webui.go, which is not an asset
		{path: "/elsewhere", wantStatus: 404, wantType: "text/html; charset=utf-8"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			resp := b.serve(get(tc.path))
			text := body(t, resp)
			require.Equal(t, tc.wantStatus, resp.StatusCode)
			require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
			if tc.wantType != "" {
				require.Equal(t, tc.wantType, resp.Header.Get("Content-Type"))
			}
			if tc.wantCache != "" {
				require.Equal(t, tc.wantCache, resp.Header.Get("Cache-Control"))
			}
			require.Contains(t, text, tc.wantBody)
		})
	}

	// A revalidation with the ETag costs no body.
	resp := b.serve(get("/assets/" + version + "/app.css"))
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	r := get("/assets/" + version + "/app.css")
	r.Header.Set("If-None-Match", etag)
	resp = b.serve(r)
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	require.Empty(t, body(t, resp))
}

// TestUI_modulesResolve checks that every module the page imports is
// served: a broken relative import would only show in a browser.
func TestUI_modulesResolve(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	version := assetRef.FindStringSubmatch(body(t, b.serve(get("/", c))))[1]
	imports := regexp.MustCompile(`from '\./([a-z]+\.js)'`)
	seen := map[string]bool{}
	queue := []string{"app.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		resp := b.serve(get("/assets/" + version + "/js/" + name))
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		for _, m := range imports.FindAllStringSubmatch(body(t, resp), -1) {
			queue = append(queue, m[1])
		}
	}
	require.GreaterOrEqual(t, len(seen), 8)
}

func TestNew_validates(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	_, err := webui.New(webui.Config{Logger: log})
	require.ErrorContains(t, err, "key path is required")
	_, err = webui.New(webui.Config{KeyPath: filepath.Join(t.TempDir(), "k")})
	require.ErrorContains(t, err, "logger is required")
	_, err = webui.New(webui.Config{KeyPath: filepath.Join(t.TempDir(), "k"), Logger: log, SessionTTL: time.Second})
	require.ErrorContains(t, err, "under a minute")
}
