package jam

import (
	"fmt"
	"strings"
)

// PeerKey is jam's key for one Band agent under one account profile, written
// "profile/scope". Both parts are 1–64 characters of letters, digits, '.',
// '_' and '-', and neither starts with '.', so a key is safe in file names,
// log attributes and URLs.
type PeerKey struct {
	Profile string
	Scope   string
}

// maxPeerPart bounds each half of a PeerKey.
const maxPeerPart = 64

// ParsePeerKey parses "profile/scope".
func ParsePeerKey(s string) (PeerKey, error) {
	profile, scope, ok := strings.Cut(s, "/")
	if !ok {
		return PeerKey{}, fmt.Errorf("%w: peer key %q: want profile/scope", ErrInvalid, clip(s))
	}
	k := PeerKey{Profile: profile, Scope: scope}
	if err := k.Validate(); err != nil {
		return PeerKey{}, err
	}
	return k, nil
}

// Validate reports whether both parts of k are well formed.
func (k PeerKey) Validate() error {
	if err := validPeerPart("profile", k.Profile); err != nil {
		return err
	}
	return validPeerPart("scope", k.Scope)
}

func validPeerPart(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: peer key %s is empty", ErrInvalid, what)
	}
	if len(s) > maxPeerPart {
		return fmt.Errorf("%w: peer key %s is longer than %d characters", ErrInvalid, what, maxPeerPart)
	}
	if s[0] == '.' {
		return fmt.Errorf("%w: peer key %s %q starts with '.'", ErrInvalid, what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: peer key %s %q: character %q is not allowed", ErrInvalid, what, clip(s), c)
		}
	}
	return nil
}

// String returns "profile/scope".
func (k PeerKey) String() string { return k.Profile + "/" + k.Scope }

// IsZero reports whether k is the zero PeerKey.
func (k PeerKey) IsZero() bool { return k == PeerKey{} }

// MarshalText encodes k as "profile/scope", and the zero key as "".
func (k PeerKey) MarshalText() ([]byte, error) {
	if k.IsZero() {
		return []byte{}, nil
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	return []byte(k.String()), nil
}

// UnmarshalText decodes "profile/scope"; an empty string decodes to the
// zero PeerKey.
func (k *PeerKey) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = PeerKey{}
		return nil
	}
	p, err := ParsePeerKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}
