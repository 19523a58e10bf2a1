package postgres

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The checks of parameters every dialect makes before SQL, with the same
// wording as the SQLite dialect's. Each is one function so that it can
// give way to the seam's own validator (package store) by changing its
// body to one call.

// validateText rejects strings PostgreSQL's TEXT cannot hold (invalid
// UTF-8 or NUL).
func validateText(field, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not valid UTF-8", jam.ErrInvalid, field)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%w: %s contains a NUL byte", jam.ErrInvalid, field)
	}
	return nil
}

// validateWorkspaceID rejects an empty or malformed id before it reaches
// SQL, so a typo is ErrInvalid rather than a misleading ErrNotFound.
func validateWorkspaceID(id jam.WorkspaceID) error {
	if id == "" {
		return fmt.Errorf("%w: workspace id is empty", jam.ErrInvalid)
	}
	_, err := jam.ParseID[jam.WorkspaceID](string(id))
	return err
}

func validateWorkspaceEnsure(p store.WorkspaceEnsureParams) error {
	if err := validateWorkspaceID(p.ID); err != nil {
		return err
	}
	if p.Name == "" {
		return fmt.Errorf("%w: name is empty", jam.ErrInvalid)
	}
	if err := validateText("name", p.Name); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(p.Name); n > store.MaxWorkspaceNameLen {
		return fmt.Errorf("%w: name has %d characters, limit %d", jam.ErrInvalid, n, store.MaxWorkspaceNameLen)
	}
	if p.At.IsZero() {
		return fmt.Errorf("%w: time is zero", jam.ErrInvalid)
	}
	return nil
}

func validateSettingKey(ws jam.WorkspaceID, key string) error {
	if err := validateWorkspaceID(ws); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: key is empty", jam.ErrInvalid)
	}
	if len(key) > store.MaxSettingKeyLen {
		return fmt.Errorf("%w: key has %d bytes, limit %d", jam.ErrInvalid, len(key), store.MaxSettingKeyLen)
	}
	return validateText("key", key)
}

func validateSettingPut(p store.SettingPutParams) error {
	if err := validateSettingKey(p.WorkspaceID, p.Key); err != nil {
		return err
	}
	if len(p.Value) > store.MaxSettingValueLen {
		return fmt.Errorf("%w: value has %d bytes, limit %d", jam.ErrInvalid, len(p.Value), store.MaxSettingValueLen)
	}
	if err := validateText("value", p.Value); err != nil {
		return err
	}
	if p.At.IsZero() {
		return fmt.Errorf("%w: time is zero", jam.ErrInvalid)
	}
	return nil
}

func validateDaemonRunStart(p store.DaemonRunStartParams) error {
	if p.Node == "" {
		return fmt.Errorf("%w: node is empty", jam.ErrInvalid)
	}
	if err := validateText("node", p.Node); err != nil {
		return err
	}
	if err := validateText("version", p.Version); err != nil {
		return err
	}
	if p.PID <= 0 {
		return fmt.Errorf("%w: pid %d is not positive", jam.ErrInvalid, p.PID)
	}
	if p.At.IsZero() {
		return fmt.Errorf("%w: time is zero", jam.ErrInvalid)
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

// parseUUID returns the canonical (lower-case) form of a required UUID,
// the form every UUID is stored in.
func parseUUID[T jam.UUID](v T) (T, error) {
	return jam.ParseUUID[T](string(v))
}

// parseMessageID returns the canonical form of a required queued message
// id: a Band UUID or a local notice id.
func parseMessageID(v jam.PlatformMessageID) (jam.PlatformMessageID, error) {
	return jam.ParseMessageID(string(v))
}

// validateSealed rejects an empty sealed blob: the store only ever holds
// sealed material, and sealing never yields zero bytes.
func validateSealed(field string, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	return nil
}

func validateTime(field string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%w: %s is zero", jam.ErrInvalid, field)
	}
	return nil
}

// validateRequiredText rejects an empty or non-storable string.
func validateRequiredText(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	return validateText(field, v)
}

// validateBandURL accepts an absolute http or https URL.
func validateBandURL(v string) error {
	if err := validateRequiredText("band url", v); err != nil {
		return err
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: band url %q is not an absolute http(s) URL", jam.ErrInvalid, v)
	}
	return nil
}

// validateScope checks the (workspace, peer) pair most lookups take.
func validateScope(ws jam.WorkspaceID, key jam.PeerKey) error {
	if err := validateWorkspaceID(ws); err != nil {
		return err
	}
	return validatePeerKey(key)
}

// validateAccount checks a and returns it with its UUIDs canonical.
func validateAccount(a store.Account) (store.Account, error) {
	if err := validateWorkspaceID(a.WorkspaceID); err != nil {
		return a, err
	}
	if _, err := jam.ParseID[jam.AccountID](string(a.ID)); err != nil {
		return a, err
	}
	if err := validateProfile(a.Profile); err != nil {
		return a, err
	}
	if err := validateBandURL(a.BandURL); err != nil {
		return a, err
	}
	var err error
	if a.UserID, err = parseUUID(a.UserID); err != nil {
		return a, err
	}
	if err := validateText("handle", a.Handle); err != nil {
		return a, err
	}
	if err := validateSealed("sealed key", a.KeySealed); err != nil {
		return a, err
	}
	return a, validateTime("created at", a.CreatedAt)
}

func validateAccountKey(ws jam.WorkspaceID, profile string) error {
	if err := validateWorkspaceID(ws); err != nil {
		return err
	}
	return validateProfile(profile)
}

// validatePeer checks p and returns it with its UUIDs canonical.
func validatePeer(p store.Peer) (store.Peer, error) {
	if err := validateWorkspaceID(p.WorkspaceID); err != nil {
		return p, err
	}
	if err := validatePeerKey(p.Key); err != nil {
		return p, err
	}
	if _, err := jam.ParseID[jam.AccountID](string(p.AccountID)); err != nil {
		return p, err
	}
	var err error
	if p.AgentID, err = parseUUID(p.AgentID); err != nil {
		return p, err
	}
	if err := validateText("handle", p.Handle); err != nil {
		return p, err
	}
	if err := validateText("name", p.Name); err != nil {
		return p, err
	}
	if err := validateSealed("sealed key", p.KeySealed); err != nil {
		return p, err
	}
	return p, validateTime("created at", p.CreatedAt)
}

// validateBinding checks b and returns it with its UUIDs canonical.
func validateBinding(b store.Binding) (store.Binding, error) {
	if _, err := jam.ParseID[jam.BindingID](string(b.ID)); err != nil {
		return b, err
	}
	if err := validateScope(b.WorkspaceID, b.Peer); err != nil {
		return b, err
	}
	var err error
	if b.Room, err = parseUUID(b.Room); err != nil {
		return b, err
	}
	if err := validateRequiredText("alias", b.Alias); err != nil {
		return b, err
	}
	if _, err := jam.ParseID[jam.SessionID](string(b.SessionID)); err != nil {
		return b, err
	}
	if _, err := jam.ParseEnum("runtime mode", string(b.Mode), jam.RuntimeModes); err != nil {
		return b, err
	}
	return b, validateTime("created at", b.CreatedAt)
}

func validateBindingKey(ws jam.WorkspaceID, id jam.BindingID) error {
	if err := validateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.BindingID](string(id))
	return err
}
