package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	linkInsert = `INSERT INTO reply_links (workspace_id, message_id, profile, scope, room_id, reply_to, turn_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	linkSelect = `SELECT message_id, profile, scope, room_id, reply_to, turn_id FROM reply_links
WHERE workspace_id = ? AND message_id IN (`
)

// maxLinkIDs bounds one ReplyLinks query's placeholders.
const maxLinkIDs = 500

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
	r, err := r.Canonical()
	if err != nil {
		return fmt.Errorf("reply intent put %s: %w", r.MessageID, err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		old, err := scanReplyIntent(tx.QueryRowContext(ctx, replySelect, r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID))
		if errors.Is(err, sql.ErrNoRows) {
			_, err := tx.ExecContext(ctx, replyInsert, r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID, r.Room,
				r.Sealed, r.Parts, r.Posted, joinIDs(r.PostedIDs), r.State, r.CreatedAt.UnixMicro(), r.UpdatedAt.UnixMicro())
			if err != nil {
				return err
			}
			return putLinks(ctx, tx, r, 0)
		}
		if err != nil {
			return err
		}
		if err := store.ValidateReplyAdvance(old, r); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, replyAdvance, r.Posted, joinIDs(r.PostedIDs), r.State, r.UpdatedAt.UnixMicro(),
			r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID)
		if err != nil {
			return err
		}
		return putLinks(ctx, tx, r, old.Posted)
	})
	if err != nil {
		return fmt.Errorf("reply intent put %s: %w", r.MessageID, err)
	}
	return nil
}

// ReplyIntentGet implements [store.Messaging]; no intent is jam.ErrNotFound.
func (s *Store) ReplyIntentGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.ReplyIntent, error) {
	msg, err := store.ValidateMessageKey(ws, key, msg)
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

// putLinks records the links of r's posted ids from index from on; a link
// already recorded stays as it is.
func putLinks(ctx context.Context, tx *sql.Tx, r store.ReplyIntent, from int) error {
	for _, id := range r.PostedIDs[from:] {
		if _, err := tx.ExecContext(ctx, linkInsert, r.WorkspaceID, id, r.Peer.Profile, r.Peer.Scope, r.Room, r.MessageID,
			r.Turn, r.UpdatedAt.UnixMicro()); err != nil {
			return err
		}
	}
	return nil
}

// ReplyLinks implements [store.Messaging]. Malformed ids are skipped: they
// cannot name a posted part.
func (s *Store) ReplyLinks(ctx context.Context, ws jam.WorkspaceID, ids []jam.PlatformMessageID) ([]store.ReplyLink, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("reply links: %w", err)
	}
	var keys []any
	for _, id := range ids {
		if c, err := jam.ParseUUID[jam.PlatformMessageID](string(id)); err == nil {
			keys = append(keys, c)
		}
	}
	var out []store.ReplyLink
	for len(keys) > 0 {
		n := min(len(keys), maxLinkIDs)
		args := append([]any{ws}, keys[:n]...)
		keys = keys[n:]
		q := linkSelect + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + `) ORDER BY message_id`
		rows, err := s.reader.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("reply links: %w", err)
		}
		for rows.Next() {
			var l store.ReplyLink
			if err := rows.Scan(&l.MessageID, &l.Peer.Profile, &l.Peer.Scope, &l.Room, &l.ReplyTo, &l.Turn); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reply links: %w", err)
			}
			out = append(out, l)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("reply links: %w", err)
		}
	}
	return out, nil
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
