package webui

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Sessions are kept server-side, in a table keyed by the SHA-256 of a
// random 32-byte id: the cookie carries the id and nothing else, and the
// table (in memory, mirrored to StateFile) keeps only its hash, so neither
// a dump of the process nor a copy of the file yields a usable cookie.
// A session ends when it is signed out (the row is deleted), when it has
// not been used for IdleLifetime, or AbsoluteLifetime after it began,
// whichever comes first.
const (
	// IdleLifetime ends a session nobody has used for this long.
	IdleLifetime = 12 * time.Hour
	// AbsoluteLifetime ends a session this long after its sign-in, used
	// or not.
	AbsoluteLifetime = 7 * 24 * time.Hour
	// TokenLifetime is how long a sign-in link works after it was minted.
	TokenLifetime = 10 * time.Minute
	// DefaultMaxSessions bounds the live sessions; signing in once more
	// ends the one used least recently.
	DefaultMaxSessions = 32

	idLen = 32
	// touchEvery is how stale the file's last-use time of a session may
	// get: a request refreshes it in memory at once, and in the file
	// once this much later.
	touchEvery = time.Minute
	// stateVersion is the format of StateFile.
	stateVersion = 1
	// maxStateBytes bounds what loadState reads.
	maxStateBytes = 1 << 20
)

type idHash [sha256.Size]byte

// session is one row of the table.
type session struct {
	Created  time.Time
	LastSeen time.Time
	// saved is the LastSeen the file holds.
	saved time.Time
}

// expired says why s is over at now, or "" when it is live.
func (s *session) expired(now time.Time, idle, absolute time.Duration) string {
	switch {
	case !now.Before(s.Created.Add(absolute)):
		return "session expired"
	case !now.Before(s.LastSeen.Add(idle)):
		return "session expired after being idle"
	}
	return ""
}

// stateFile is the file form of the session table.
type stateFile struct {
	Version  int            `json:"version"`
	Sessions []stateSession `json:"sessions"`
}

type stateSession struct {
	// IDHash is the hex SHA-256 of the session id.
	IDHash   string `json:"id_hash"`
	Created  int64  `json:"created"`   // unix seconds
	LastSeen int64  `json:"last_seen"` // unix seconds
}

// decodeState parses StateFile. It refuses anything it did not write.
func decodeState(raw []byte) (map[idHash]*session, error) {
	var f stateFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("web ui sessions: %w", err)
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("web ui sessions: version %d, want %d", f.Version, stateVersion)
	}
	out := make(map[idHash]*session, len(f.Sessions))
	for i, s := range f.Sessions {
		b, err := hex.DecodeString(s.IDHash)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("web ui sessions: entry %d: id_hash is not %d hex-encoded bytes", i, sha256.Size)
		}
		if s.Created <= 0 || s.LastSeen < s.Created {
			return nil, fmt.Errorf("web ui sessions: entry %d: bad times", i)
		}
		var h idHash
		copy(h[:], b)
		t := time.Unix(s.LastSeen, 0)
		out[h] = &session{Created: time.Unix(s.Created, 0), LastSeen: t, saved: t}
	}
	return out, nil
}

func encodeState(table map[idHash]*session) ([]byte, error) {
	f := stateFile{Version: stateVersion, Sessions: make([]stateSession, 0, len(table))}
	for h, s := range table {
		f.Sessions = append(f.Sessions, stateSession{IDHash: hex.EncodeToString(h[:]), Created: s.Created.Unix(), LastSeen: s.LastSeen.Unix()})
	}
	return json.Marshal(f)
}

// loadState reads the session table at path; a missing file is an empty
// table. A file it cannot read is reported and replaced by an empty table
// (every browser signs in again): it holds nothing worth more.
func (u *UI) loadState() {
	f, err := os.Open(u.cfg.StatePath)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		u.log.Warn("web ui sessions unreadable; every browser signs in again", "err", err)
		return
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err == nil && len(raw) > maxStateBytes {
		err = fmt.Errorf("over %d bytes", maxStateBytes)
	}
	if err != nil {
		u.log.Warn("web ui sessions unreadable; every browser signs in again", "err", err)
		return
	}
	table, err := decodeState(raw)
	if err != nil {
		u.log.Warn("web ui sessions unreadable; every browser signs in again", "err", err)
		return
	}
	now := u.cfg.Now()
	for h, s := range table {
		if s.expired(now, u.cfg.IdleLifetime, u.cfg.AbsoluteLifetime) == "" {
			u.sessions[h] = s
		}
	}
}

// save writes the session table to StatePath (mode 0600, replaced
// atomically). fileMu orders the writes, so the file never goes back to
// an older table; mu is held only to copy the table.
func (u *UI) save() error {
	if u.cfg.StatePath == "" {
		return nil
	}
	u.fileMu.Lock()
	defer u.fileMu.Unlock()
	u.mu.Lock()
	raw, err := encodeState(u.sessions)
	for _, s := range u.sessions {
		s.saved = s.LastSeen
	}
	u.mu.Unlock()
	if err != nil {
		return fmt.Errorf("save web ui sessions: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(u.cfg.StatePath), ".uisessions-*")
	if err != nil {
		return fmt.Errorf("save web ui sessions: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(raw)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), u.cfg.StatePath)
	}
	if werr != nil {
		return fmt.Errorf("save web ui sessions: %w", werr)
	}
	return nil
}

// saveOrLog saves the table, logging a failure: the table in memory stays
// authoritative for this run.
func (u *UI) saveOrLog() {
	if err := u.save(); err != nil {
		u.log.Warn("web ui sessions not saved", "err", err)
	}
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

// startSession adds a session to the table and sets its cookie for the
// listener of r. Past MaxSessions the least recently used one ends.
func (u *UI) startSession(w http.ResponseWriter, r *http.Request) error {
	var id [idLen]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("generate session id: %w", err)
	}
	value := base64.RawURLEncoding.EncodeToString(id[:])
	now := u.cfg.Now()
	u.mu.Lock()
	u.pruneLocked(now)
	for len(u.sessions) >= u.cfg.MaxSessions {
		var oldest idHash
		var at time.Time
		first := true
		for h, s := range u.sessions {
			if first || s.LastSeen.Before(at) {
				oldest, at, first = h, s.LastSeen, false
			}
		}
		delete(u.sessions, oldest)
	}
	u.sessions[sha256.Sum256([]byte(value))] = &session{Created: now, LastSeen: now}
	u.mu.Unlock()
	if err := u.save(); err != nil {
		// A session the file does not hold would end at the next
		// restart; say so, but the sign-in stands.
		u.log.Warn("web ui sessions not saved", "err", err)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName(r.Host),
		Value:    value,
		Path:     "/",
		MaxAge:   int(u.cfg.AbsoluteLifetime / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	return nil
}

// pruneLocked drops the sessions that are over at now. u.mu is held.
func (u *UI) pruneLocked(now time.Time) {
	for h, s := range u.sessions {
		if s.expired(now, u.cfg.IdleLifetime, u.cfg.AbsoluteLifetime) != "" {
			delete(u.sessions, h)
		}
	}
}

// clearSession expires the session cookie of the listener of r.
func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName(r.Host), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// session checks the session r carries and records its use.
func (u *UI) session(r *http.Request) (idHash, error) {
	c, err := r.Cookie(cookieName(r.Host))
	if err != nil || c.Value == "" {
		return idHash{}, errors.New("no web ui session")
	}
	h := sha256.Sum256([]byte(c.Value))
	now := u.cfg.Now()
	u.mu.Lock()
	s, ok := u.sessions[h]
	if !ok {
		u.mu.Unlock()
		return idHash{}, errors.New("not signed in: the session is unknown, signed out, or ended")
	}
	if why := s.expired(now, u.cfg.IdleLifetime, u.cfg.AbsoluteLifetime); why != "" {
		delete(u.sessions, h)
		u.mu.Unlock()
		u.saveOrLog()
		return idHash{}, errors.New(why)
	}
	s.LastSeen = now
	stale := now.Sub(s.saved) >= touchEvery
	u.mu.Unlock()
	if stale {
		u.saveOrLog()
	}
	return h, nil
}

// endSession deletes one session: its cookie opens nothing any more.
func (u *UI) endSession(h idHash) {
	u.mu.Lock()
	delete(u.sessions, h)
	u.mu.Unlock()
	u.saveOrLog()
}

// hashToken is how a login token is kept in memory: a dump of the process
// does not reveal a usable link.
func hashToken(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(token))
}
