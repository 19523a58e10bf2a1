package webui

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// StateFile is the name of the session table's file in the data
// directory.
const StateFile = "ui.sessions"

// HeaderUI is the header every state-changing request of the UI's page
// carries. A page on another origin cannot add it without a CORS
// preflight, which the daemon never grants.
const HeaderUI = "X-Jam-UI"

// Config configures a UI.
type Config struct {
	// StatePath is the file that keeps the session table across restarts
	// (mode 0600, hashes of session ids only). Empty keeps it in memory:
	// a restart then signs every browser out.
	StatePath string
	// Logger is required.
	Logger *slog.Logger
	// IdleLifetime ends a session unused for this long; default
	// [IdleLifetime].
	IdleLifetime time.Duration
	// AbsoluteLifetime ends a session this long after its sign-in;
	// default [AbsoluteLifetime].
	AbsoluteLifetime time.Duration
	// MaxSessions bounds the live sessions; default [DefaultMaxSessions].
	MaxSessions int
	// TokenLifetime is how long a sign-in link works; default
	// [TokenLifetime].
	TokenLifetime time.Duration
	// MaxTokens bounds the login tokens waiting to be used; minting one
	// more drops the oldest. Default 16.
	MaxTokens int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.IdleLifetime == 0 {
		c.IdleLifetime = IdleLifetime
	}
	if c.AbsoluteLifetime == 0 {
		c.AbsoluteLifetime = AbsoluteLifetime
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.TokenLifetime == 0 {
		c.TokenLifetime = TokenLifetime
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = 16
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Logger == nil:
		return errors.New("webui: logger is required")
	case c.IdleLifetime < time.Minute || c.AbsoluteLifetime < time.Minute:
		return errors.New("webui: session lifetime under a minute")
	case c.IdleLifetime > c.AbsoluteLifetime:
		return errors.New("webui: idle lifetime longer than the absolute lifetime")
	case c.TokenLifetime < time.Second:
		return errors.New("webui: token lifetime under a second")
	case c.MaxSessions < 1 || c.MaxTokens < 1:
		return errors.New("webui: session and token bounds must be positive")
	}
	return nil
}

// UI serves the web UI and keeps its sessions. It is safe for concurrent
// use.
type UI struct {
	cfg    Config
	log    *slog.Logger
	assets *assets
	mux    *http.ServeMux

	// fileMu orders the writes of StatePath; it is taken before mu and
	// held across the write, never while serving a request otherwise.
	fileMu sync.Mutex

	mu       sync.Mutex
	sessions map[idHash]*session             // guarded by mu
	tokens   map[[sha256.Size]byte]time.Time // guarded by mu; the time each was minted
	order    [][sha256.Size]byte             // guarded by mu; oldest first
}

// New loads the session table (when StatePath names one) and prepares
// the assets.
func New(cfg Config) (*UI, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	u := &UI{cfg: cfg, log: cfg.Logger.With("component", "webui"), assets: a,
		sessions: map[idHash]*session{}, tokens: map[[sha256.Size]byte]time.Time{}}
	if cfg.StatePath != "" {
		u.loadState()
		if err := u.save(); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", u.handleIndex)
	mux.HandleFunc("POST /signin", u.handleSignIn)
	mux.HandleFunc("GET "+assetPrefix+"{version}/{path...}", u.handleAsset)
	mux.HandleFunc("POST /signout", u.handleSignOut)
	mux.HandleFunc("/", u.handleNotFound)
	u.mux = mux
	return u, nil
}

// LoginToken mints a one-time login token: the URL /?token=TOKEN on the
// UI's listener shows a page whose button exchanges it (POST /signin) for
// a session cookie. It is valid for TokenLifetime, until it is used, or
// until the daemon stops; only the newest MaxTokens are kept.
func (u *UI) LoginToken() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate login token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	h := hashToken(token)
	now := u.cfg.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tokens[h] = now
	u.order = append(u.order, h)
	for len(u.order) > u.cfg.MaxTokens {
		delete(u.tokens, u.order[0])
		u.order = u.order[1:]
	}
	return token, nil
}

// tokenState is what a sign-in link is worth.
type tokenState int

const (
	tokenUnknown tokenState = iota // used, dropped, or never minted
	tokenExpired
	tokenValid
)

// checkToken reports on a token without using it up; spend says to use
// it up when it is valid. An expired token is dropped.
func (u *UI) checkToken(token string, spend bool) tokenState {
	h := hashToken(token)
	now := u.cfg.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	minted, ok := u.tokens[h]
	if !ok {
		return tokenUnknown
	}
	state := tokenValid
	if !now.Before(minted.Add(u.cfg.TokenLifetime)) {
		state = tokenExpired
	}
	if state == tokenExpired || spend {
		delete(u.tokens, h)
		for i, o := range u.order {
			if o == h {
				u.order = append(u.order[:i:i], u.order[i+1:]...)
				break
			}
		}
	}
	return state
}

// ServeHTTP serves the UI: the page, its assets, sign-in and sign-out.
// The caller has checked that the request names a loopback host.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	u.mux.ServeHTTP(w, r)
}

// Authorize vouches for a control API request made by the UI's page: it
// returns nil when r carries a valid session and passes the CSRF checks,
// an error wrapping jam.ErrUnauthenticated when it carries no valid
// session, and one wrapping jam.ErrPermissionDenied when it carries one
// but does not come from the UI's own page.
//
// The checks: a request another site's page made (Sec-Fetch-Site
// cross-site or same-site, which includes another port of this host) is
// refused; a state-changing request must carry HeaderUI: 1 and an Origin
// naming this listener. The cookie is SameSite=Strict as well.
func (u *UI) Authorize(r *http.Request) error {
	_, err := u.authorize(r)
	return err
}

func (u *UI) authorize(r *http.Request) (idHash, error) {
	h, err := u.session(r)
	if err != nil {
		return idHash{}, fmt.Errorf("%w: %v", jam.ErrUnauthenticated, err)
	}
	if err := sameOrigin(r); err != nil {
		return idHash{}, fmt.Errorf("%w: %v", jam.ErrPermissionDenied, err)
	}
	return h, nil
}

// sameOrigin is the CSRF defence of requests authenticated by the cookie.
func sameOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("a %s request may not use the web ui session", clip(site))
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if r.Header.Get(HeaderUI) != "1" {
		return fmt.Errorf("a %s with the web ui session needs the header %s: 1", r.Method, HeaderUI)
	}
	if origin := r.Header.Get("Origin"); origin != "http://"+r.Host {
		return fmt.Errorf("origin %q is not this listener (http://%s)", clip(origin), clip(r.Host))
	}
	return nil
}

func (u *UI) handleIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Has("token") {
		u.handleLink(w, r)
		return
	}
	if _, err := u.session(r); err != nil {
		u.page(w, http.StatusUnauthorized, signInPage{Reason: "This browser is not signed in to jam."})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(u.assets.index)
}

// handleLink answers a GET of a sign-in link. It never uses the token up
// (a link previewer or a prefetch would spend it): a valid one gets a page
// whose button posts it to /signin.
func (u *UI) handleLink(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	switch u.checkToken(token, false) {
	case tokenValid:
		// A browser sends "Origin: null" with a form post from a page
		// whose policy is no-referrer; same-origin lets the post name
		// this listener (which signInOrigin requires) and still sends
		// nothing to another origin.
		w.Header().Set("Referrer-Policy", "same-origin")
		u.page(w, http.StatusOK, signInPage{Title: "Sign in to jam", Token: token})
		return
	case tokenExpired:
		u.page(w, http.StatusUnauthorized, signInPage{Reason: "This sign-in link has expired: a link works for " + u.cfg.TokenLifetime.String() + " after it is printed."})
		return
	}
	if _, err := u.session(r); err == nil {
		// A used link opened again in a browser that is signed in.
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	u.page(w, http.StatusUnauthorized, signInPage{Reason: "This sign-in link was already used, or it belongs to an earlier run of the daemon."})
}

// maxSignInBody bounds the form POST /signin reads.
const maxSignInBody = 4 << 10

// handleSignIn exchanges a one-time token, posted by the form of the
// link's page, for a session cookie and redirects to the UI. The post
// must come from this listener's own page: Sec-Fetch-Site same-origin
// (or none) and an Origin naming the listener.
func (u *UI) handleSignIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := signInOrigin(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "malformed sign-in form", http.StatusBadRequest)
		return
	}
	switch u.checkToken(r.PostForm.Get("token"), true) {
	case tokenValid:
	case tokenExpired:
		u.page(w, http.StatusUnauthorized, signInPage{Reason: "This sign-in link has expired: a link works for " + u.cfg.TokenLifetime.String() + " after it is printed."})
		return
	default:
		u.page(w, http.StatusUnauthorized, signInPage{Reason: "This sign-in link was already used, or it belongs to an earlier run of the daemon."})
		return
	}
	if err := u.startSession(w, r); err != nil {
		u.log.Error("start session", "err", err)
		http.Error(w, "cannot start a session; see the daemon log", http.StatusInternalServerError)
		return
	}
	u.log.Info("web ui signed in", "remote", r.RemoteAddr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInOrigin is the CSRF defence of POST /signin, which carries no
// session yet (so Authorize does not apply) and is a plain form post (so
// it has no HeaderUI).
func signInOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("a %s request may not sign in", clip(site))
	}
	if origin := r.Header.Get("Origin"); origin != "http://"+r.Host {
		return fmt.Errorf("origin %q is not this listener (http://%s)", clip(origin), clip(r.Host))
	}
	return nil
}

// handleSignOut ends the session server-side (its cookie, replayed,
// opens nothing) and clears the cookie.
func (u *UI) handleSignOut(w http.ResponseWriter, r *http.Request) {
	h, err := u.authorize(r)
	if err != nil {
		status := http.StatusForbidden
		if errors.Is(err, jam.ErrUnauthenticated) {
			status = http.StatusUnauthorized
		}
		http.Error(w, err.Error(), status)
		return
	}
	u.endSession(h)
	u.log.Info("web ui signed out", "remote", r.RemoteAddr)
	clearSession(w, r)
	w.WriteHeader(http.StatusNoContent)
}

func (u *UI) handleNotFound(w http.ResponseWriter, r *http.Request) {
	u.page(w, http.StatusNotFound, signInPage{Title: "Not found", Reason: "There is no page at " + clip(r.URL.Path) + ".", Home: true})
}

// securityHeaders are sent with every response of the UI. The page loads
// nothing from elsewhere, runs no inline script and is never framed; the
// referrer is never sent, so a login link cannot leak through it.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
