package store

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the messaging records: accounts, peers, bindings, the
// spool, the queue, reply intents and quarantine. Canonical methods check
// a record against the seam's limits and return it in stored form (UUIDs
// canonical, defaults filled); Validate methods only check.

// Canonical checks a and returns it with its UUIDs canonical.
func (a Account) Canonical() (Account, error) {
	if err := ValidateWorkspaceID(a.WorkspaceID); err != nil {
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
	if err := ValidateText("handle", a.Handle); err != nil {
		return a, err
	}
	if err := validateKeyHolder(a.ConnectionID, a.KeySealed); err != nil {
		return a, err
	}
	return a, ValidateTime("created at", a.CreatedAt)
}

// validateKeyHolder checks where an account's or a peer's key lives: a
// valid connection id, or "" with the legacy sealed key.
func validateKeyHolder(id jam.ConnectionID, sealed []byte) error {
	if id == "" {
		if err := validateSealed("sealed key", sealed); err != nil {
			return fmt.Errorf("%w (and no connection holds the key)", err)
		}
		return nil
	}
	if _, err := jam.ParseID[jam.ConnectionID](string(id)); err != nil {
		return fmt.Errorf("connection id: %w", err)
	}
	return nil
}

// Canonical checks p and returns it with its UUIDs canonical.
func (p Peer) Canonical() (Peer, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
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
	if err := ValidateText("handle", p.Handle); err != nil {
		return p, err
	}
	if err := ValidateText("name", p.Name); err != nil {
		return p, err
	}
	if err := validateKeyHolder(p.ConnectionID, p.KeySealed); err != nil {
		return p, err
	}
	return p, ValidateTime("created at", p.CreatedAt)
}

// Canonical checks b and returns it with its UUIDs canonical.
func (b Binding) Canonical() (Binding, error) {
	if _, err := jam.ParseID[jam.BindingID](string(b.ID)); err != nil {
		return b, err
	}
	if err := ValidateScope(b.WorkspaceID, b.Peer); err != nil {
		return b, err
	}
	var err error
	if b.Room, err = parseUUID(b.Room); err != nil {
		return b, err
	}
	if err := ValidateRequiredText("alias", b.Alias); err != nil {
		return b, err
	}
	if _, err := jam.ParseID[jam.SessionID](string(b.SessionID)); err != nil {
		return b, err
	}
	if _, err := jam.ParseEnum("runtime mode", string(b.Mode), jam.RuntimeModes); err != nil {
		return b, err
	}
	return b, ValidateTime("created at", b.CreatedAt)
}

// Canonical checks e and returns it with its UUIDs canonical.
func (e SpoolEntry) Canonical() (SpoolEntry, error) {
	if err := ValidateScope(e.WorkspaceID, e.Peer); err != nil {
		return e, err
	}
	var err error
	if e.Room, err = parseUUID(e.Room); err != nil {
		return e, err
	}
	if e.MessageID, err = parseMessageID(e.MessageID); err != nil {
		return e, err
	}
	if err := validateSealed("sealed message", e.Sealed); err != nil {
		return e, err
	}
	return e, ValidateTime("received at", e.ReceivedAt)
}

// ValidateSpoolMove checks the inputs of SpoolMove and returns row with
// its UUIDs canonical.
func ValidateSpoolMove(seq int64, row QueueRow) (QueueRow, error) {
	if seq < 1 {
		return row, fmt.Errorf("%w: seq %d is not positive", jam.ErrInvalid, seq)
	}
	if err := ValidateWorkspaceID(row.WorkspaceID); err != nil {
		return row, err
	}
	if !row.Peer.IsZero() {
		if err := row.Peer.Validate(); err != nil {
			return row, err
		}
	}
	var err error
	if row.Room != "" {
		if row.Room, err = parseUUID(row.Room); err != nil {
			return row, err
		}
	}
	if row.MessageID != "" {
		if row.MessageID, err = parseMessageID(row.MessageID); err != nil {
			return row, err
		}
	}
	if row.SenderID != "" {
		if row.SenderID, err = parseUUID(row.SenderID); err != nil {
			return row, err
		}
	}
	if err := validateSealed("sealed message", row.Sealed); err != nil {
		return row, err
	}
	if row.State != "" && row.State != QueueQueued {
		return row, fmt.Errorf("%w: a moved row starts %q, not %q", jam.ErrInvalid, QueueQueued, row.State)
	}
	return row, nil
}

// ValidateSpoolMatch checks that the set identity fields of row describe
// e, the spool entry it is moved from.
func ValidateSpoolMatch(e SpoolEntry, row QueueRow) error {
	switch {
	case !row.Peer.IsZero() && row.Peer != e.Peer:
		return fmt.Errorf("%w: row is for peer %s, entry %d for %s", jam.ErrInvalid, row.Peer, e.Seq, e.Peer)
	case row.Room != "" && row.Room != e.Room:
		return fmt.Errorf("%w: row is for room %s, entry %d for %s", jam.ErrInvalid, row.Room, e.Seq, e.Room)
	case row.MessageID != "" && row.MessageID != e.MessageID:
		return fmt.Errorf("%w: row is message %s, entry %d is %s", jam.ErrInvalid, row.MessageID, e.Seq, e.MessageID)
	}
	return nil
}

// Canonical checks p and returns it with its UUIDs canonical.
func (p QueueListParams) Canonical() (QueueListParams, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
		return p, err
	}
	if !p.Peer.IsZero() {
		if err := p.Peer.Validate(); err != nil {
			return p, err
		}
	}
	if p.Binding != "" {
		if p.Unrouted {
			return p, fmt.Errorf("%w: unrouted and binding %s are exclusive", jam.ErrInvalid, p.Binding)
		}
		if _, err := jam.ParseID[jam.BindingID](string(p.Binding)); err != nil {
			return p, err
		}
	}
	if p.Room != "" {
		var err error
		if p.Room, err = parseUUID(p.Room); err != nil {
			return p, err
		}
	}
	if p.Limit < 0 {
		return p, fmt.Errorf("%w: limit %d is negative", jam.ErrInvalid, p.Limit)
	}
	if p.After < 0 {
		return p, fmt.Errorf("%w: after %d is negative", jam.ErrInvalid, p.After)
	}
	if p.Delivered && p.Unrouted {
		return p, fmt.Errorf("%w: delivered rows are routed; unrouted and delivered are exclusive", jam.ErrInvalid)
	}
	return p, nil
}

// Canonical checks r and returns it with its UUIDs canonical and
// UpdatedAt defaulted to CreatedAt.
func (r ReplyIntent) Canonical() (ReplyIntent, error) {
	var err error
	if r.MessageID, err = ValidateMessageKey(r.WorkspaceID, r.Peer, r.MessageID); err != nil {
		return r, err
	}
	if r.Room, err = parseUUID(r.Room); err != nil {
		return r, err
	}
	if err := validateSealed("sealed reply", r.Sealed); err != nil {
		return r, err
	}
	if r.Parts < 1 {
		return r, fmt.Errorf("%w: parts %d is not positive", jam.ErrInvalid, r.Parts)
	}
	if r.Posted < 0 || r.Posted > r.Parts {
		return r, fmt.Errorf("%w: posted %d is outside 0..%d", jam.ErrInvalid, r.Posted, r.Parts)
	}
	if len(r.PostedIDs) != r.Posted {
		return r, fmt.Errorf("%w: %d posted ids for %d posted parts", jam.ErrInvalid, len(r.PostedIDs), r.Posted)
	}
	ids := make([]jam.PlatformMessageID, len(r.PostedIDs))
	for i, id := range r.PostedIDs {
		if ids[i], err = parseUUID(id); err != nil {
			return r, err
		}
	}
	r.PostedIDs = ids
	switch r.State {
	case ReplyPending:
	case ReplyPosted:
		if r.Posted != r.Parts {
			return r, fmt.Errorf("%w: posted with %d of %d parts", jam.ErrInvalid, r.Posted, r.Parts)
		}
	default:
		return r, fmt.Errorf("%w: reply state %q is not %q or %q", jam.ErrInvalid, r.State, ReplyPending, ReplyPosted)
	}
	if err := ValidateTime("created at", r.CreatedAt); err != nil {
		return r, err
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	return r, nil
}

// ValidateReplyAdvance reports whether next, a canonical intent, only
// advances old, the stored one; otherwise the error wraps jam.ErrConflict.
func ValidateReplyAdvance(old, next ReplyIntent) error {
	switch {
	case next.Room != old.Room:
		return fmt.Errorf("%w: intent is for room %s, not %s", jam.ErrConflict, old.Room, next.Room)
	case next.Parts != old.Parts:
		return fmt.Errorf("%w: intent has %d parts, not %d", jam.ErrConflict, old.Parts, next.Parts)
	case next.Posted < old.Posted || !slices.Equal(next.PostedIDs[:old.Posted], old.PostedIDs):
		return fmt.Errorf("%w: intent already posted %v", jam.ErrConflict, old.PostedIDs)
	case old.State == ReplyPosted && next.State != ReplyPosted:
		return fmt.Errorf("%w: intent is already posted", jam.ErrConflict)
	}
	return nil
}

// ValidateQuarantine checks the reason and time of a quarantine move and
// returns the reason as stored: valid UTF-8, without NUL, cut to
// [MaxQuarantineReasonLen] bytes.
func ValidateQuarantine(reason string, at time.Time) (string, error) {
	if strings.TrimSpace(reason) == "" {
		return reason, fmt.Errorf("%w: reason is empty", jam.ErrInvalid)
	}
	return CutQuarantineReason(reason), ValidateTime("time", at)
}

// CutQuarantineReason makes reason storable: invalid UTF-8 replaced, NUL
// dropped, cut at a rune boundary to at most [MaxQuarantineReasonLen]
// bytes.
func CutQuarantineReason(reason string) string {
	reason = strings.ReplaceAll(strings.ToValidUTF8(reason, "\uFFFD"), "\x00", "")
	if len(reason) <= MaxQuarantineReasonLen {
		return reason
	}
	cut := MaxQuarantineReasonLen
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}
