package hub

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
)

// newUUID returns a random version 4 UUID in lower-case canonical form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// parseUUID canonicalises s, reporting whether it is a UUID at all.
func parseUUID(s string) (string, bool) {
	id, err := jam.ParseUUID[jam.IdentityID](s)
	return string(id), err == nil
}

// newKey mints an API key: the prefix and 32 random bytes.
func newKey(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// hashKey is the stored form of a key.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// newRequestID names one request in its error bodies and logs.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// slugify turns an agent name into the slug of its handle: lower case,
// runs of anything outside [a-z0-9] become one '-', no leading or trailing
// '-'.
func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// formatMicros renders a stored time the way Band does.
func formatMicros(us int64) string { return protocol.FormatTime(time.UnixMicro(us)) }

// formatMicrosPtr renders an optional stored time.
func formatMicrosPtr(us *int64) *string {
	if us == nil {
		return nil
	}
	s := formatMicros(*us)
	return &s
}
