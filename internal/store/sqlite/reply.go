package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the reply_intents table.
const (
	replyColumns = `workspace_id, profile, scope, message_id, room_id, sealed, parts, posted, posted_ids, state, created_at, updated_at`
	replyInsert  = `INSERT INTO reply_intents (` + replyColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	replySelect  = `SELECT ` + replyColumns + ` FROM reply_intents
WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
	replyAdvance = `UPDATE reply_intents SET posted = ?, posted_ids = ?, state = ?, updated_at = ?
WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
)

// ReplyIntentPut implements [store.Messaging]. The first put records the
// intent; later puts may only advance it: the room, the number of parts
// and the sealed reply stay as first recorded (a later Sealed is ignored,
// since sealing the same reply again yields other bytes), the posted ids
// already recorded must stay a prefix of the new ones, and a posted intent
// never returns to pending. Anything else is jam.ErrConflict, because it
// would let a crash post a part twice.
//
// Parts is at least 1; Posted counts PostedIDs and is at most Parts; an
// intent is posted only when every part is. UpdatedAt defaults to
// CreatedAt.
func (s *Store) ReplyIntentPut(ctx context.Context, r store.ReplyIntent) error {
	r, err := validateReplyIntent(r)
	if err != nil {
		return fmt.Errorf("reply intent put %s: %w", r.MessageID, err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		old, err := scanReplyIntent(tx.QueryRowContext(ctx, replySelect, r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID))
		if errors.Is(err, sql.ErrNoRows) {
			_, err := tx.ExecContext(ctx, replyInsert, r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID, r.Room,
				r.Sealed, r.Parts, r.Posted, joinIDs(r.PostedIDs), r.State, r.CreatedAt.UnixMicro(), r.UpdatedAt.UnixMicro())
			return err
		}
		if err != nil {
			return err
		}
		if err := checkReplyAdvance(old, r); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, replyAdvance, r.Posted, joinIDs(r.PostedIDs), r.State, r.UpdatedAt.UnixMicro(),
			r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID)
		return err
	})
	if err != nil {
		return fmt.Errorf("reply intent put %s: %w", r.MessageID, err)
	}
	return nil
}

// validateReplyIntent checks r and returns it with its UUIDs canonical and
// UpdatedAt defaulted.
func validateReplyIntent(r store.ReplyIntent) (store.ReplyIntent, error) {
	var err error
	if r.MessageID, err = validateMessageKey(r.WorkspaceID, r.Peer, r.MessageID); err != nil {
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
	case store.ReplyPending:
	case store.ReplyPosted:
		if r.Posted != r.Parts {
			return r, fmt.Errorf("%w: posted with %d of %d parts", jam.ErrInvalid, r.Posted, r.Parts)
		}
	default:
		return r, fmt.Errorf("%w: reply state %q is not %q or %q", jam.ErrInvalid, r.State, store.ReplyPending, store.ReplyPosted)
	}
	if err := validateTime("created at", r.CreatedAt); err != nil {
		return r, err
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	return r, nil
}

// checkReplyAdvance reports whether next only advances old.
func checkReplyAdvance(old, next store.ReplyIntent) error {
	switch {
	case next.Room != old.Room:
		return fmt.Errorf("%w: intent is for room %s, not %s", jam.ErrConflict, old.Room, next.Room)
	case next.Parts != old.Parts:
		return fmt.Errorf("%w: intent has %d parts, not %d", jam.ErrConflict, old.Parts, next.Parts)
	case next.Posted < old.Posted || !slices.Equal(next.PostedIDs[:old.Posted], old.PostedIDs):
		return fmt.Errorf("%w: intent already posted %v", jam.ErrConflict, old.PostedIDs)
	case old.State == store.ReplyPosted && next.State != store.ReplyPosted:
		return fmt.Errorf("%w: intent is already posted", jam.ErrConflict)
	}
	return nil
}

// ReplyIntentGet implements [store.Messaging]; no intent is jam.ErrNotFound.
func (s *Store) ReplyIntentGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.ReplyIntent, error) {
	msg, err := validateMessageKey(ws, key, msg)
	if err != nil {
		return store.ReplyIntent{}, fmt.Errorf("reply intent get %s: %w", msg, err)
	}
	r, err := scanReplyIntent(s.reader.QueryRowContext(ctx, replySelect, ws, key.Profile, key.Scope, msg))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.ReplyIntent{}, fmt.Errorf("reply intent get %s: %w", msg, err)
	}
	return r, nil
}

func joinIDs(ids []jam.PlatformMessageID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	return strings.Join(parts, ",")
}

func splitIDs(s string) []jam.PlatformMessageID {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	ids := make([]jam.PlatformMessageID, len(parts))
	for i, p := range parts {
		ids[i] = jam.PlatformMessageID(p)
	}
	return ids
}

func scanReplyIntent(row scanner) (store.ReplyIntent, error) {
	var r store.ReplyIntent
	var ids string
	var created, updated int64
	err := row.Scan(&r.WorkspaceID, &r.Peer.Profile, &r.Peer.Scope, &r.MessageID, &r.Room, &r.Sealed,
		&r.Parts, &r.Posted, &ids, &r.State, &created, &updated)
	if err != nil {
		return store.ReplyIntent{}, err
	}
	r.PostedIDs = splitIDs(ids)
	r.CreatedAt = fromMicros(created)
	r.UpdatedAt = fromMicros(updated)
	return r, nil
}
