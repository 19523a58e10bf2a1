package postgres

import (
	"fmt"
	"strings"
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
