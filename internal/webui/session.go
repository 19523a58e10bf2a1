package webui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The session cookie is stateless: its value is a random id, the time it
// was issued and the time it expires, with an HMAC-SHA256 over them under
// the key in KeyFile. Nothing about sessions is kept in memory or in the
// store, so a session survives a daemon restart (the browser tab that was
// open keeps working), and deleting the key file signs every browser out.
const (
	cookieVersion = "v1"
	// payloadLen is issued (8 bytes) + expires (8) + id (16).
	payloadLen = 8 + 8 + 16
	keyLen     = 32
)

// loadKey reads the session key at path, creating it (mode 0600) when it
// does not exist yet.
func loadKey(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil || len(key) != keyLen {
			return nil, fmt.Errorf("web ui key %s is not %d hex-encoded bytes; delete it to make a new one (every browser signs in again)", path, keyLen)
		}
		return key, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("read web ui key: %w", err)
	}
	key := make([]byte, keyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate web ui key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".uikey-*")
	if err != nil {
		return nil, fmt.Errorf("write web ui key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(hex.EncodeToString(key) + "\n")
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("write web ui key: %w", werr)
	}
	// Link, not rename: a daemon is the only writer (it holds the data
	// directory lock), but a key some earlier run wrote must never be
	// replaced silently.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return loadKey(path)
		}
		return nil, fmt.Errorf("write web ui key: %w", err)
	}
	return key, nil
}

// sessionCookie is what a valid cookie says.
type sessionCookie struct {
	Issued  time.Time
	Expires time.Time
}

// sign returns the cookie value of a new session issued at now.
func sign(key []byte, now time.Time, ttl time.Duration) (string, error) {
	var p [payloadLen]byte
	binary.BigEndian.PutUint64(p[0:8], uint64(now.Unix()))
	binary.BigEndian.PutUint64(p[8:16], uint64(now.Add(ttl).Unix()))
	if _, err := rand.Read(p[16:]); err != nil {
		return "", fmt.Errorf("generate session id: %w", err)
	}
	enc := base64.RawURLEncoding
	return cookieVersion + "." + enc.EncodeToString(p[:]) + "." + enc.EncodeToString(mac(key, p[:])), nil
}

// verify checks a cookie value: its form, its MAC, and that it has not
// expired at now.
func verify(key []byte, value string, now time.Time) (sessionCookie, error) {
	parts := strings.Split(value, ".")
	if len(parts) != 3 || parts[0] != cookieVersion {
		return sessionCookie{}, errors.New("malformed session cookie")
	}
	enc := base64.RawURLEncoding
	p, err := enc.DecodeString(parts[1])
	if err != nil || len(p) != payloadLen {
		return sessionCookie{}, errors.New("malformed session cookie")
	}
	sum, err := enc.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sum, mac(key, p)) {
		return sessionCookie{}, errors.New("session cookie is not signed by this daemon's key")
	}
	s := sessionCookie{
		Issued:  time.Unix(int64(binary.BigEndian.Uint64(p[0:8])), 0),
		Expires: time.Unix(int64(binary.BigEndian.Uint64(p[8:16])), 0),
	}
	if !now.Before(s.Expires) {
		return sessionCookie{}, errors.New("session expired")
	}
	return s, nil
}

func mac(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("jam web ui session " + cookieVersion + "\x00"))
	h.Write(payload)
	return h.Sum(nil)
}

// cookieName names the session cookie of the listener a request reached.
// Browsers scope cookies by host but not by port, so two daemons on one
// machine (each on its own port) would otherwise overwrite each other's.
func cookieName(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return "jam_ui_" + port
	}
	return "jam_ui"
}

// setSession writes a new session cookie for the listener of r.
func (u *UI) setSession(w http.ResponseWriter, r *http.Request) error {
	value, err := sign(u.key, u.cfg.Now(), u.cfg.SessionTTL)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName(r.Host),
		Value:    value,
		Path:     "/",
		MaxAge:   int(u.cfg.SessionTTL / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	return nil
}

// clearSession expires the session cookie of the listener of r.
func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName(r.Host), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// session returns the valid session r carries.
func (u *UI) session(r *http.Request) (sessionCookie, error) {
	c, err := r.Cookie(cookieName(r.Host))
	if err != nil {
		return sessionCookie{}, errors.New("no web ui session")
	}
	return verify(u.key, c.Value, u.cfg.Now())
}

// hashToken is how a login token is kept in memory: a dump of the process
// does not reveal a usable link.
func hashToken(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(token))
}
