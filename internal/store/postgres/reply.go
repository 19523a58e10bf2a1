package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Replies = (*Store)(nil)

// SQL of the reply_intents table.
const (
	replyColumns = `workspace_id, profile, scope, message_id, room_id, sealed, parts, posted, posted_ids, state, created_at, updated_at`
	replyInsert  = `INSERT INTO reply_intents (` + replyColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (workspace_id, profile, scope, message_id) DO NOTHING`
	replySelect = `SELECT ` + replyColumns + ` FROM reply_intents
WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4`
	replySelectForUpdate = replySelect + ` FOR UPDATE`
	replyAdvance         = `UPDATE reply_intents SET posted = $1, posted_ids = $2, state = $3, updated_at = $4
WHERE workspace_id = $5 AND profile = $6 AND scope = $7 AND message_id = $8`
	linkInsert = `INSERT INTO reply_links (workspace_id, message_id, profile, scope, room_id, reply_to, turn_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`
	linkSelect = `SELECT message_id, profile, scope, room_id, reply_to, turn_id FROM reply_links
WHERE workspace_id = $1 AND message_id = ANY($2) ORDER BY message_id COLLATE "C"`
)

// ReplyIntentPut implements [store.Replies] with the rules of the SQLite
// dialect: the first put records the intent; later puts may only advance
// it (store.ValidateReplyAdvance), anything else is jam.ErrConflict. In
// one READ COMMITTED transaction the intent is inserted if absent (ON
// CONFLICT DO NOTHING) and otherwise read FOR UPDATE and advanced, so two
// puts of one intent through two handles are checked one after the
// other, each against what the other committed.
func (s *Store) ReplyIntentPut(ctx context.Context, r store.ReplyIntent) error {
	r, err := r.Canonical()
	if err != nil {
		return fmt.Errorf("reply intent put %s: %w", r.MessageID, err)
	}
	key := []any{r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID}
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		n, err := rowsAffected(ctx, tx, replyInsert, r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID, r.Room,
			r.Sealed, r.Parts, r.Posted, joinIDs(r.PostedIDs), r.State, micros(r.CreatedAt), micros(r.UpdatedAt))
		if err != nil {
			return err
		}
		if n == 1 {
			return putLinks(ctx, tx, r, 0)
		}
		old, err := scanReplyIntent(tx.QueryRow(ctx, replySelectForUpdate, key...))
		if err != nil {
			return err
		}
		if err := store.ValidateReplyAdvance(old, r); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, replyAdvance, append([]any{r.Posted, joinIDs(r.PostedIDs), r.State, micros(r.UpdatedAt)}, key...)...); err != nil {
			return err
		}
		return putLinks(ctx, tx, r, old.Posted)
	})
	if err != nil {
		return fmt.Errorf("reply intent put %s: %w", r.MessageID, err)
	}
	return nil
}

// ReplyIntentGet implements [store.Replies]; no intent is jam.ErrNotFound.
func (s *Store) ReplyIntentGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.ReplyIntent, error) {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return store.ReplyIntent{}, fmt.Errorf("reply intent get %s: %w", msg, err)
	}
	r, err := scanReplyIntent(s.pool.QueryRow(ctx, replySelect, ws, key.Profile, key.Scope, msg))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.ReplyIntent{}, fmt.Errorf("reply intent get %s: %w", msg, mapErr(err))
	}
	return r, nil
}

// putLinks records the links of r's posted ids from index from on, in
// the transaction that records them; a link already recorded stays as it
// is (ON CONFLICT DO NOTHING).
func putLinks(ctx context.Context, tx pgx.Tx, r store.ReplyIntent, from int) error {
	for _, id := range r.PostedIDs[from:] {
		if _, err := tx.Exec(ctx, linkInsert, r.WorkspaceID, id, r.Peer.Profile, r.Peer.Scope, r.Room, r.MessageID,
			r.Turn, micros(r.UpdatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// ReplyLinks implements [store.Replies]. Malformed ids are skipped: they
// cannot name a posted part.
func (s *Store) ReplyLinks(ctx context.Context, ws jam.WorkspaceID, ids []jam.PlatformMessageID) ([]store.ReplyLink, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("reply links: %w", err)
	}
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		if c, err := jam.ParseUUID[jam.PlatformMessageID](string(id)); err == nil {
			keys = append(keys, string(c))
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out, err := queryAll(ctx, s.pool, func(row scanner) (store.ReplyLink, error) {
		var l store.ReplyLink
		err := row.Scan(&l.MessageID, &l.Peer.Profile, &l.Peer.Scope, &l.Room, &l.ReplyTo, &l.Turn)
		return l, err
	}, linkSelect, ws, keys)
	if err != nil {
		return nil, fmt.Errorf("reply links: %w", mapErr(err))
	}
	return out, nil
}

// joinIDs is the stored form of posted ids: comma-separated in part order
// (UUIDs contain no commas), as in the SQLite dialect.
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
