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

// KeyFile is the name of the session key file in the data directory.
const KeyFile = "ui.key"

// HeaderUI is the header every state-changing request of the UI's page
// carries. A page on another origin cannot add it without a CORS
// preflight, which the daemon never grants.
const HeaderUI = "X-Jam-UI"

// Config configures a UI.
type Config struct {
	// KeyPath is the session key file (created with mode 0600 when
	// missing). Required.
	KeyPath string
	// Logger is required.
	Logger *slog.Logger
	// SessionTTL is how long a session lasts after it was last renewed;
	// default 30 days. Opening the UI renews a session older than a day.
	SessionTTL time.Duration
	// MaxTokens bounds the login tokens waiting to be used; minting one
	// more drops the oldest. Default 16.
	MaxTokens int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.SessionTTL == 0 {
		c.SessionTTL = 30 * 24 * time.Hour
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
	case c.KeyPath == "":
		return errors.New("webui: key path is required")
	case c.Logger == nil:
		return errors.New("webui: logger is required")
	case c.SessionTTL < time.Minute:
		return errors.New("webui: session lifetime under a minute")
	}
	return nil
}

// renewAfter is the age past which opening the UI renews a session.
const renewAfter = 24 * time.Hour

// UI serves the web UI and vouches for its sessions. It is safe for
// concurrent use.
type UI struct {
	cfg    Config
	log    *slog.Logger
	key    []byte
	assets *assets
	mux    *http.ServeMux

	mu     sync.Mutex
	tokens map[[sha256.Size]byte]struct{} // guarded by mu
	order  [][sha256.Size]byte            // guarded by mu; oldest first
}

// New loads (or creates) the session key and prepares the assets.
func New(cfg Config) (*UI, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	key, err := loadKey(cfg.KeyPath)
	if err != nil {
		return nil, err
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	u := &UI{cfg: cfg, log: cfg.Logger.With("component", "webui"), key: key, assets: a, tokens: map[[sha256.Size]byte]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", u.handleIndex)
	mux.HandleFunc("GET "+assetPrefix+"{version}/{path...}", u.handleAsset)
	mux.HandleFunc("POST /signout", u.handleSignOut)
	mux.HandleFunc("/", u.handleNotFound)
	u.mux = mux
	return u, nil
}

// LoginToken mints a one-time login token: the URL /?token=TOKEN on the
// UI's listener exchanges it for a session cookie. It is valid until it
// is used or the daemon stops; only the newest MaxTokens are kept.
func (u *UI) LoginToken() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate login token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	h := hashToken(token)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tokens[h] = struct{}{}
	u.order = append(u.order, h)
	for len(u.order) > u.cfg.MaxTokens {
		delete(u.tokens, u.order[0])
		u.order = u.order[1:]
	}
	return token, nil
}

// redeem uses up a login token; it reports whether the token was valid.
func (u *UI) redeem(token string) bool {
	h := hashToken(token)
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.tokens[h]; !ok {
		return false
	}
	delete(u.tokens, h)
	for i, o := range u.order {
		if o == h {
			u.order = append(u.order[:i:i], u.order[i+1:]...)
			break
		}
	}
	return true
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
	if _, err := u.session(r); err != nil {
		return fmt.Errorf("%w: %v", jam.ErrUnauthenticated, err)
	}
	if err := sameOrigin(r); err != nil {
		return fmt.Errorf("%w: %v", jam.ErrPermissionDenied, err)
	}
	return nil
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
		u.handleLogin(w, r)
		return
	}
	s, err := u.session(r)
	if err != nil {
		u.page(w, http.StatusUnauthorized, signInPage{Reason: "This browser is not signed in to jam."})
		return
	}
	if u.cfg.Now().Sub(s.Issued) > renewAfter {
		if err := u.setSession(w, r); err != nil {
			u.log.Warn("renew session", "err", err)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(u.assets.index)
}

// handleLogin exchanges a one-time token for a session cookie and
// redirects to the UI without the token in the address.
func (u *UI) handleLogin(w http.ResponseWriter, r *http.Request) {
	if u.redeem(r.URL.Query().Get("token")) {
		if err := u.setSession(w, r); err != nil {
			u.log.Error("start session", "err", err)
			http.Error(w, "cannot start a session; see the daemon log", http.StatusInternalServerError)
			return
		}
		u.log.Info("web ui signed in", "remote", r.RemoteAddr)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if _, err := u.session(r); err == nil {
		// A used link opened again in a browser that is signed in.
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	u.page(w, http.StatusUnauthorized, signInPage{Reason: "This sign-in link was already used, or it belongs to an earlier run of the daemon."})
}

func (u *UI) handleSignOut(w http.ResponseWriter, r *http.Request) {
	if err := u.Authorize(r); err != nil {
		status := http.StatusForbidden
		if errors.Is(err, jam.ErrUnauthenticated) {
			status = http.StatusUnauthorized
		}
		http.Error(w, err.Error(), status)
		return
	}
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
