package webui_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	if cfg.StatePath == "" {
		cfg.StatePath = filepath.Join(dir, webui.StateFile)
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

// signIn posts a sign-in link's token as the link's page does.
func (b *testBundle) signIn(token string) *http.Response {
	return b.serve(signInPost(token))
}

func signInPost(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://"+host)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return r
}

// login exchanges a fresh token for the session cookie.
func (b *testBundle) login(t *testing.T) *http.Cookie {
	t.Helper()
	token, err := b.ui.LoginToken()
	require.NoError(t, err)
	resp := b.signIn(token)
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

	// Opening the link shows a page with a button; it signs nobody in.
	resp := b.serve(get("/?token=" + token))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Cookies())
	require.Equal(t, "same-origin", resp.Header.Get("Referrer-Policy"), "the form's post names its origin; no other origin sees the link")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	page := body(t, resp)
	require.Contains(t, page, `<form method="post" action="/signin">`)
	require.Contains(t, page, `name="token" value="`+token+`"`)
	require.NotContains(t, page, "<script", "the sign-in page runs nothing")

	resp = b.signIn(token)
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
	require.Equal(t, int(webui.AbsoluteLifetime/time.Second), c.MaxAge, "the cookie outlives no session")
	require.Regexp(t, `^[A-Za-z0-9_-]{43}$`, c.Value, "the cookie is a random id and nothing else")

	// The token is spent: a second use (without the cookie) is refused,
	// by the link and by the form.
	resp = b.serve(get("/?token=" + token))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, resp.Cookies())
	require.Contains(t, body(t, resp), "already used")
	resp = b.signIn(token)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, resp.Cookies())

	// The cookie opens the page; nothing else does.
	resp = b.serve(get("/", c))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Contains(t, body(t, resp), `<script type="module" src="/assets/`)

	resp = b.serve(get("/"))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	page = body(t, resp)
	require.Contains(t, page, "not signed in")
	require.Contains(t, page, "jam ui")
	require.NotContains(t, page, "<script", "the sign-in page runs nothing")

	// A used link opened again by a signed-in browser just goes home.
	resp = b.serve(get("/?token="+token, c))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Empty(t, resp.Cookies())

	resp = b.serve(get("/?token=" + strings.Repeat("0", 64)))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.signIn(strings.Repeat("0", 64)).StatusCode)
}

// TestUI_linkPreviewDoesNotSpendToken: a link previewer or a prefetch
// GETs the link, maybe twice; the person's click still signs in.
func TestUI_linkPreviewDoesNotSpendToken(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	token, err := b.ui.LoginToken()
	require.NoError(t, err)
	for range 2 {
		resp := b.serve(get("/?token=" + token))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Empty(t, resp.Cookies())
	}
	resp := b.signIn(token)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	require.NoError(t, b.ui.Authorize(get("/v1/status", resp.Cookies()[0])))
}

// TestUI_tokenExpires: a link works for TokenLifetime after it is minted.
func TestUI_tokenExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	early, err := b.ui.LoginToken()
	require.NoError(t, err)
	late, err := b.ui.LoginToken()
	require.NoError(t, err)

	b.clock.Add(webui.TokenLifetime - time.Second)
	require.Equal(t, http.StatusSeeOther, b.signIn(early).StatusCode, "just inside its lifetime")

	b.clock.Add(time.Second)
	resp := b.serve(get("/?token=" + late))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body(t, resp), "expired")
	resp = b.signIn(late)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, resp.Cookies())
}

func TestUI_signInRefusesForeignPosts(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	cases := []struct {
		name   string
		mutate func(r *http.Request)
	}{
		{name: "no origin", mutate: func(r *http.Request) { r.Header.Del("Origin") }},
		{name: "another port", mutate: func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:8080") }},
		{name: "another site", mutate: func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }},
		{name: "cross-site fetch", mutate: func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }},
		{name: "same-site fetch", mutate: func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token, err := b.ui.LoginToken()
			require.NoError(t, err)
			r := signInPost(token)
			tc.mutate(r)
			resp := b.serve(r)
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			require.Empty(t, resp.Cookies())
			// The refused post did not spend the token.
			require.Equal(t, http.StatusSeeOther, b.signIn(token).StatusCode)
		})
	}
	token, err := b.ui.LoginToken()
	require.NoError(t, err)
	r := signInPost(token)
	r.Body = io.NopCloser(strings.NewReader("token=" + strings.Repeat("a", 8<<10)))
	require.Equal(t, http.StatusBadRequest, b.serve(r).StatusCode, "an oversized form")
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
	require.Equal(t, http.StatusUnauthorized, b.signIn(first).StatusCode, "the oldest token was dropped")
	require.Equal(t, http.StatusSeeOther, b.signIn(third).StatusCode)
	require.Equal(t, http.StatusSeeOther, b.signIn(second).StatusCode)
}

func TestUI_Authorize(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	other := setup(t, webui.Config{}).login(t) // another daemon's session

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
		{name: "cookie of another daemon", req: req{method: http.MethodGet, cookie: other}, wantErr: jam.ErrUnauthenticated, wantMsg: "not signed in"},
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

func TestUI_sessionIdleExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	// Each use pushes the idle end back.
	for range 3 {
		b.clock.Add(webui.IdleLifetime - time.Minute)
		require.NoError(t, b.ui.Authorize(get("/v1/status", c)))
	}
	b.clock.Add(webui.IdleLifetime)
	err := b.ui.Authorize(get("/v1/status", c))
	require.ErrorIs(t, err, jam.ErrUnauthenticated)
	require.ErrorContains(t, err, "idle")
	require.Equal(t, http.StatusUnauthorized, b.serve(get("/", c)).StatusCode)
}

func TestUI_sessionAbsoluteExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	used := time.Duration(0)
	for used+webui.IdleLifetime/2 < webui.AbsoluteLifetime {
		b.clock.Add(webui.IdleLifetime / 2)
		used += webui.IdleLifetime / 2
		require.NoError(t, b.ui.Authorize(get("/v1/status", c)), "in use after %s", used)
	}
	b.clock.Add(webui.AbsoluteLifetime - used)
	err := b.ui.Authorize(get("/v1/status", c))
	require.ErrorIs(t, err, jam.ErrUnauthenticated, "in use all along, but signed in %s ago", webui.AbsoluteLifetime)
	require.ErrorContains(t, err, "session expired")
}

func TestUI_sessionsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{MaxSessions: 2})
	first := b.login(t)
	b.clock.Add(time.Second)
	second := b.login(t)
	b.clock.Add(time.Second)
	require.NoError(t, b.ui.Authorize(get("/v1/status", first)), "first is now the most recently used")
	b.clock.Add(time.Second)
	third := b.login(t)
	require.NoError(t, b.ui.Authorize(get("/v1/status", first)))
	require.ErrorIs(t, b.ui.Authorize(get("/v1/status", second)), jam.ErrUnauthenticated, "the least recently used session ended")
	require.NoError(t, b.ui.Authorize(get("/v1/status", third)))
}

func TestUI_sessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	gone := b.login(t)
	statePath := filepath.Join(b.dir, webui.StateFile)
	fi, err := os.Stat(statePath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	raw, err := os.ReadFile(statePath)
	require.NoError(t, err)
	require.NotContains(t, string(raw), c.Value, "the file keeps hashes only")
	signOut(t, b, gone)

	again, err := webui.New(webui.Config{StatePath: statePath, Logger: slog.New(slog.DiscardHandler), Now: b.clock.Now})
	require.NoError(t, err)
	require.NoError(t, again.Authorize(get("/v1/status", c)), "a restart keeps the session")
	require.ErrorIs(t, again.Authorize(get("/v1/status", gone)), jam.ErrUnauthenticated, "and the sign-out")

	// Expiry holds across a restart too.
	b.clock.Add(webui.IdleLifetime)
	later, err := webui.New(webui.Config{StatePath: statePath, Logger: slog.New(slog.DiscardHandler), Now: b.clock.Now})
	require.NoError(t, err)
	require.ErrorIs(t, later.Authorize(get("/v1/status", c)), jam.ErrUnauthenticated)

	// A damaged file signs every browser out; it does not stop the UI.
	fresh := setup(t, webui.Config{})
	kept := fresh.login(t)
	require.NoError(t, os.WriteFile(filepath.Join(fresh.dir, webui.StateFile), []byte("{not json"), 0o600))
	damaged, err := webui.New(webui.Config{StatePath: filepath.Join(fresh.dir, webui.StateFile), Logger: slog.New(slog.DiscardHandler), Now: fresh.clock.Now})
	require.NoError(t, err)
	require.ErrorIs(t, damaged.Authorize(get("/v1/status", kept)), jam.ErrUnauthenticated)
}

// signOut signs c out as the page does.
func signOut(t *testing.T, b *testBundle, c *http.Cookie) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/signout", nil)
	r.AddCookie(c)
	r.Header.Set("X-Jam-UI", "1")
	r.Header.Set("Origin", "http://"+host)
	resp := b.serve(r)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	return resp
}

func TestUI_signOut(t *testing.T) {
	t.Parallel()
	b := setup(t, webui.Config{})
	c := b.login(t)
	other := b.login(t)
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/signout", nil)
	r.AddCookie(c)
	require.Equal(t, http.StatusForbidden, b.serve(r).StatusCode, "sign-out needs the UI header too")

	resp := signOut(t, b, c)
	require.Len(t, resp.Cookies(), 1)
	require.Equal(t, -1, resp.Cookies()[0].MaxAge)

	// The cookie, replayed after sign-out, opens nothing: sign-out ended
	// the session in the daemon, not only in the browser.
	replay := httptest.NewRequest(http.MethodPost, "http://"+host+"/v1/rooms", nil)
	replay.AddCookie(c)
	replay.Header.Set("X-Jam-UI", "1")
	replay.Header.Set("Origin", "http://"+host)
	require.ErrorIs(t, b.ui.Authorize(replay), jam.ErrUnauthenticated)
	require.Equal(t, http.StatusUnauthorized, b.serve(get("/", c)).StatusCode)
	require.NoError(t, b.ui.Authorize(get("/v1/status", other)), "another browser stays signed in")
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
	_, err := webui.New(webui.Config{})
	require.ErrorContains(t, err, "logger is required")
	_, err = webui.New(webui.Config{Logger: log, IdleLifetime: time.Second})
	require.ErrorContains(t, err, "under a minute")
	_, err = webui.New(webui.Config{Logger: log, IdleLifetime: 2 * time.Hour, AbsoluteLifetime: time.Hour})
	require.ErrorContains(t, err, "longer than the absolute")
	_, err = webui.New(webui.Config{Logger: log, MaxSessions: -1})
	require.ErrorContains(t, err, "must be positive")
	_, err = webui.New(webui.Config{Logger: log})
	require.NoError(t, err, "no state file keeps sessions in memory")
}
