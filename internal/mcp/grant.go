package mcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"golang.org/x/time/rate"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
)

// ServerName is the name agents know jam's server by; they prefix its
// tools with it (Claude Code calls mcp__jam__room_reply).
const ServerName = "jam"

// tokenLabel separates the token derivation from any other use of the key.
const tokenLabel = "jam mcp session token\x00"

// grant is one session's standing with the server: its token's hash and
// its bounds. It holds no token.
type grant struct {
	session jam.SessionID
	serial  uint64 // this grant's number, which its token is derived from
	hash    [sha256.Size]byte
	limiter *rate.Limiter // calls a second
	slots   chan struct{} // calls inside Actions
}

// acquire takes a concurrency slot without waiting.
func (g *grant) acquire() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g *grant) release() { <-g.slots }

// Grant returns the server entry a session's threads are given: Name
// "jam", the URL, and the header Authorization: Bearer <token>. A session
// has one token for the server's life: Grant again returns the same
// entry, until Revoke; a Grant after Revoke makes a new token.
//
// It fails with jam.ErrInvalid for a malformed session id and with
// jam.ErrUnavailable when the server has no URL yet (neither Listen nor
// Config.URL), is closed, or already holds MaxSessions grants.
func (s *Server) Grant(session jam.SessionID) (harness.MCPServer, error) {
	if _, err := jam.ParseID[jam.SessionID](string(session)); err != nil {
		return harness.MCPServer{}, fmt.Errorf("grant mcp token: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return harness.MCPServer{}, fmt.Errorf("grant mcp token: %w: the server is closed", jam.ErrUnavailable)
	case s.url == "":
		return harness.MCPServer{}, fmt.Errorf("grant mcp token: %w: the server is not listening", jam.ErrUnavailable)
	}
	g, ok := s.bySession[session]
	if !ok {
		if len(s.bySession) >= s.cfg.MaxSessions {
			return harness.MCPServer{}, fmt.Errorf("grant mcp token: %w: %d sessions hold tokens, the most allowed", jam.ErrUnavailable, len(s.bySession))
		}
		s.serial++
		g = &grant{
			session: session,
			serial:  s.serial,
			limiter: rate.NewLimiter(rate.Limit(s.cfg.CallsPerSecond), s.cfg.Burst),
			slots:   make(chan struct{}, s.cfg.MaxConcurrent),
		}
		g.hash = sha256.Sum256([]byte(s.tokenLocked(g)))
		s.bySession[session] = g
		s.byHash[g.hash] = g
	}
	return harness.MCPServer{
		Name:    ServerName,
		URL:     s.url,
		Headers: map[string]string{"Authorization": "Bearer " + s.tokenLocked(g)},
	}, nil
}

// Revoke ends a session's grant: its token is refused from the next
// request on. Calls already inside Actions finish. Revoking a session
// without a grant does nothing.
func (s *Server) Revoke(session jam.SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.bySession[session]; ok {
		delete(s.bySession, session)
		delete(s.byHash, g.hash)
	}
}

// tokenLocked derives a grant's token: HMAC-SHA256 under the server's
// random key of the grant's serial number and session. Deriving it
// instead of drawing it lets Grant hand out the same token again while
// the table keeps only its hash; the serial makes a grant after Revoke a
// new token.
func (s *Server) tokenLocked(g *grant) string {
	mac := hmac.New(sha256.New, s.key[:])
	mac.Write([]byte(tokenLabel))
	mac.Write(binary.BigEndian.AppendUint64(nil, g.serial))
	mac.Write([]byte(g.session))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// lookup finds the grant of a presented token. The table is keyed by the
// token's SHA-256, so the token itself is never compared: how long a
// lookup takes can tell a guesser only about hash prefixes, which say
// nothing about any token.
func (s *Server) lookup(token string) (*grant, bool) {
	if len(token) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return nil, false
	}
	h := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.byHash[h]
	return g, ok
}
