package store

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
)

// Field and key checks every dialect shares. Each error wraps
// jam.ErrInvalid (the jam.Parse* helpers included), and ids come back in
// their canonical lower-case form, so a lookup with an upper-case UUID
// finds the row written with a lower-case one.

// ValidateText rejects strings PostgreSQL's TEXT cannot hold (invalid UTF-8
// or NUL), so every dialect accepts the same inputs.
func ValidateText(field, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not valid UTF-8", jam.ErrInvalid, field)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%w: %s contains a NUL byte", jam.ErrInvalid, field)
	}
	return nil
}

// ValidateRequiredText rejects an empty or non-storable string.
func ValidateRequiredText(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	return ValidateText(field, v)
}

// ValidateTime rejects a zero time.
func ValidateTime(field string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%w: %s is zero", jam.ErrInvalid, field)
	}
	return nil
}

// validateSealed rejects an empty sealed blob: the store only ever holds
// sealed material, and sealing never yields zero bytes.
func validateSealed(field string, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	return nil
}

// validatePeerKey rejects a zero or malformed peer key.
func validatePeerKey(k jam.PeerKey) error {
	if k.IsZero() {
		return fmt.Errorf("%w: peer key is empty", jam.ErrInvalid)
	}
	return k.Validate()
}

// validateProfile checks a profile name with the peer key's rules for its
// first half.
func validateProfile(profile string) error {
	return jam.PeerKey{Profile: profile, Scope: "_"}.Validate()
}

// validateBandURL accepts an absolute http or https URL.
func validateBandURL(v string) error {
	if err := ValidateRequiredText("band url", v); err != nil {
		return err
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: band url %q is not an absolute http(s) URL", jam.ErrInvalid, v)
	}
	return nil
}

// parseUUID returns the canonical form of a required UUID.
func parseUUID[T jam.UUID](v T) (T, error) {
	return jam.ParseUUID[T](string(v))
}

// parseMessageID returns the canonical form of a required queued message
// id: a Band UUID or a local notice id.
func parseMessageID(v jam.PlatformMessageID) (jam.PlatformMessageID, error) {
	return jam.ParseMessageID(string(v))
}

// ValidateWorkspaceID rejects an empty or malformed id before it reaches
// SQL, so a typo is ErrInvalid rather than a misleading ErrNotFound.
func ValidateWorkspaceID(id jam.WorkspaceID) error {
	if id == "" {
		return fmt.Errorf("%w: workspace id is empty", jam.ErrInvalid)
	}
	_, err := jam.ParseID[jam.WorkspaceID](string(id))
	return err
}

// ValidateScope checks the (workspace, peer) pair most lookups take.
func ValidateScope(ws jam.WorkspaceID, key jam.PeerKey) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	return validatePeerKey(key)
}

// ValidateLane checks a (workspace, peer, room) and returns the room
// canonical.
func ValidateLane(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (jam.RoomID, error) {
	if err := ValidateScope(ws, key); err != nil {
		return room, err
	}
	return parseUUID(room)
}

// ValidateMessageKey checks a (workspace, peer, message) and returns the
// message id canonical.
func ValidateMessageKey(ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (jam.PlatformMessageID, error) {
	if err := ValidateScope(ws, key); err != nil {
		return msg, err
	}
	return parseMessageID(msg)
}

// ValidateAccountKey checks the (workspace, profile) an account is found by.
func ValidateAccountKey(ws jam.WorkspaceID, profile string) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	return validateProfile(profile)
}

// ValidateAccountRef checks a (workspace, account id) pair.
func ValidateAccountRef(ws jam.WorkspaceID, acct jam.AccountID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.AccountID](string(acct))
	return err
}

// ValidateRoomKey checks the (workspace, account, room) of a room cache
// call and returns the canonical room id.
func ValidateRoomKey(ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID) (jam.RoomID, error) {
	if err := ValidateAccountRef(ws, acct); err != nil {
		return room, err
	}
	return parseUUID(room)
}

// ValidateBindingKey checks a (workspace, binding id) pair.
func ValidateBindingKey(ws jam.WorkspaceID, id jam.BindingID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.BindingID](string(id))
	return err
}

// ValidateSettingKey checks a (workspace, setting key) pair.
func ValidateSettingKey(ws jam.WorkspaceID, key string) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: key is empty", jam.ErrInvalid)
	}
	if len(key) > MaxSettingKeyLen {
		return fmt.Errorf("%w: key has %d bytes, limit %d", jam.ErrInvalid, len(key), MaxSettingKeyLen)
	}
	return ValidateText("key", key)
}
