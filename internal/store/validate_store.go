package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of workspaces, settings, daemon runs, events and the room
// cache.

// Validate checks p against the workspace limits.
func (p WorkspaceEnsureParams) Validate() error {
	if err := ValidateWorkspaceID(p.ID); err != nil {
		return err
	}
	if p.Name == "" {
		return fmt.Errorf("%w: name is empty", jam.ErrInvalid)
	}
	if err := ValidateText("name", p.Name); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(p.Name); n > MaxWorkspaceNameLen {
		return fmt.Errorf("%w: name has %d characters, limit %d", jam.ErrInvalid, n, MaxWorkspaceNameLen)
	}
	if p.At.IsZero() {
		return fmt.Errorf("%w: time is zero", jam.ErrInvalid)
	}
	return nil
}

// Validate checks p against the setting limits.
func (p SettingPutParams) Validate() error {
	if err := ValidateSettingKey(p.WorkspaceID, p.Key); err != nil {
		return err
	}
	if len(p.Value) > MaxSettingValueLen {
		return fmt.Errorf("%w: value has %d bytes, limit %d", jam.ErrInvalid, len(p.Value), MaxSettingValueLen)
	}
	if err := ValidateText("value", p.Value); err != nil {
		return err
	}
	if p.At.IsZero() {
		return fmt.Errorf("%w: time is zero", jam.ErrInvalid)
	}
	return nil
}

// Validate checks the start of a daemon run.
func (p DaemonRunStartParams) Validate() error {
	if p.Node == "" {
		return fmt.Errorf("%w: node is empty", jam.ErrInvalid)
	}
	if err := ValidateText("node", p.Node); err != nil {
		return err
	}
	if err := ValidateText("version", p.Version); err != nil {
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

// EmptyEventPayload is what an event without a payload stores.
const EmptyEventPayload = "{}"

// Canonical checks an event and returns it in stored form: UUIDs
// canonical, an empty payload as [EmptyEventPayload].
func (e EventRecord) Canonical() (EventRecord, error) {
	if err := ValidateWorkspaceID(e.WorkspaceID); err != nil {
		return e, err
	}
	if err := ValidateEventKind(e.Kind); err != nil {
		return e, err
	}
	if !e.Peer.IsZero() {
		if err := e.Peer.Validate(); err != nil {
			return e, err
		}
	}
	var err error
	if e.Room != "" {
		if e.Room, err = parseUUID(e.Room); err != nil {
			return e, err
		}
	}
	if e.MessageID != "" {
		// A Band message's UUID or a local notice's id.
		if e.MessageID, err = parseMessageID(e.MessageID); err != nil {
			return e, err
		}
	}
	if e.Payload, err = canonicalEventPayload(e.Payload); err != nil {
		return e, err
	}
	return e, ValidateTime("created at", e.CreatedAt)
}

// ValidateEventKind accepts a non-empty kind of at most [MaxEventKindLen]
// bytes of [a-z0-9._-].
func ValidateEventKind(kind string) error {
	if kind == "" {
		return fmt.Errorf("%w: event kind is empty", jam.ErrInvalid)
	}
	if len(kind) > MaxEventKindLen {
		return fmt.Errorf("%w: event kind is longer than %d bytes", jam.ErrInvalid, MaxEventKindLen)
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: event kind %q: character %q is not allowed", jam.ErrInvalid, kind, c)
		}
	}
	return nil
}

// canonicalEventPayload accepts a JSON object (or nothing, stored as {}).
// The text must also be storable as TEXT: JSON escapes NUL, so a valid
// document never holds a raw one, and invalid UTF-8 is refused.
func canonicalEventPayload(p json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(p)) == 0 {
		return json.RawMessage(EmptyEventPayload), nil
	}
	if len(p) > MaxEventPayloadLen {
		return nil, fmt.Errorf("%w: event payload is %d bytes, over %d", jam.ErrInvalid, len(p), MaxEventPayloadLen)
	}
	// json.Valid lets invalid UTF-8 inside strings pass.
	if !json.Valid(p) || !utf8.Valid(p) || bytes.TrimLeft(p, " \t\r\n")[0] != '{' {
		return nil, fmt.Errorf("%w: event payload is not a JSON object", jam.ErrInvalid)
	}
	return p, nil
}

// Canonical checks p and returns it with its UUIDs canonical and its
// attention items scoped to p's workspace, account and room.
func (p RoomCacheApplyParams) Canonical() (RoomCacheApplyParams, error) {
	var err error
	if p.Room, err = ValidateRoomKey(p.WorkspaceID, p.AccountID, p.Room); err != nil {
		return p, err
	}
	if p.Seq < 1 {
		return p, fmt.Errorf("%w: sequence %d is not positive", jam.ErrInvalid, p.Seq)
	}
	if err := ValidateTime("at", p.At); err != nil {
		return p, err
	}
	if n := len(p.Upserts) + len(p.Deletes); n > MaxRoomCacheApplyItems {
		return p, fmt.Errorf("%w: %d upserts and deletes, over %d", jam.ErrInvalid, n, MaxRoomCacheApplyItems)
	}
	seen := make(map[jam.PlatformMessageID]bool, len(p.Upserts)+len(p.Deletes))
	upserts := make([]RoomCacheItem, len(p.Upserts))
	for i, it := range p.Upserts {
		if it.MessageID, err = parseUUID(it.MessageID); err != nil {
			return p, err
		}
		if seen[it.MessageID] {
			return p, fmt.Errorf("%w: message %s is written twice", jam.ErrInvalid, it.MessageID)
		}
		seen[it.MessageID] = true
		if it.Seq < 1 || it.Seq > p.Seq {
			return p, fmt.Errorf("%w: item %s sequence %d is outside 1..%d", jam.ErrInvalid, it.MessageID, it.Seq, p.Seq)
		}
		if err := ValidateTime("inserted at", it.InsertedAt); err != nil {
			return p, err
		}
		if err := validateSealed("sealed message", it.Sealed); err != nil {
			return p, err
		}
		upserts[i] = it
	}
	p.Upserts = upserts
	deletes := make([]jam.PlatformMessageID, len(p.Deletes))
	for i, id := range p.Deletes {
		if deletes[i], err = parseUUID(id); err != nil {
			return p, err
		}
		if seen[deletes[i]] {
			return p, fmt.Errorf("%w: message %s is written twice", jam.ErrInvalid, deletes[i])
		}
		seen[deletes[i]] = true
	}
	p.Deletes = deletes
	attention := make([]AttentionItem, len(p.Attention))
	for i, a := range p.Attention {
		if a, err = p.canonicalAttention(a); err != nil {
			return p, err
		}
		attention[i] = a
	}
	p.Attention = attention
	return p, nil
}

// canonicalAttention checks one attention item of p, whose room is
// already canonical.
func (p RoomCacheApplyParams) canonicalAttention(a AttentionItem) (AttentionItem, error) {
	if (a.WorkspaceID != "" && a.WorkspaceID != p.WorkspaceID) || (a.AccountID != "" && a.AccountID != p.AccountID) {
		return a, fmt.Errorf("%w: attention item of another account", jam.ErrInvalid)
	}
	a.WorkspaceID, a.AccountID = p.WorkspaceID, p.AccountID
	if a.Room == "" {
		a.Room = p.Room
	}
	var err error
	if a.Room, err = parseUUID(a.Room); err != nil {
		return a, err
	}
	if a.Room != p.Room {
		return a, fmt.Errorf("%w: attention item of room %s in a write of room %s", jam.ErrInvalid, a.Room, p.Room)
	}
	if a.MessageID, err = parseUUID(a.MessageID); err != nil {
		return a, err
	}
	if a.SenderID, err = parseUUID(a.SenderID); err != nil {
		return a, err
	}
	if err := ValidateRequiredText("attention kind", a.Kind); err != nil {
		return a, err
	}
	if err := ValidateTime("message at", a.MessageAt); err != nil {
		return a, err
	}
	return a, ValidateTime("staged at", a.StagedAt)
}

// Canonical checks m and returns it with its UUIDs canonical.
func (m RoomSystemMessage) Canonical() (RoomSystemMessage, error) {
	var err error
	if m.Room, err = ValidateRoomKey(m.WorkspaceID, m.AccountID, m.Room); err != nil {
		return m, err
	}
	if m.MessageID, err = parseUUID(m.MessageID); err != nil {
		return m, err
	}
	if m.ParticipantID, err = parseUUID(m.ParticipantID); err != nil {
		return m, err
	}
	if err := ValidateTime("inserted at", m.InsertedAt); err != nil {
		return m, err
	}
	if err := validateSealed("sealed message", m.Sealed); err != nil {
		return m, err
	}
	return m, ValidateTime("created at", m.CreatedAt)
}

// ValidateEventListLimit accepts a limit of 1 to [MaxEventListLimit].
func ValidateEventListLimit(limit int) error {
	if limit < 1 || limit > MaxEventListLimit {
		return fmt.Errorf("%w: limit %d is outside 1 to %d", jam.ErrInvalid, limit, MaxEventListLimit)
	}
	return nil
}

// ValidateEventPrune checks the arguments of Events.EventPrune: a
// positive count to keep and a time.
func ValidateEventPrune(keepNewest int, before time.Time) error {
	if keepNewest < 1 {
		return fmt.Errorf("%w: keep %d must be positive", jam.ErrInvalid, keepNewest)
	}
	if before.IsZero() {
		return fmt.Errorf("%w: zero time", jam.ErrInvalid)
	}
	return nil
}

// ListLimit checks a list limit of the room cache and returns the one to
// use: a negative limit is jam.ErrInvalid, 0 or one over max selects max.
func ListLimit(limit, max int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", jam.ErrInvalid, limit)
	case limit == 0 || limit > max:
		return max, nil
	}
	return limit, nil
}
