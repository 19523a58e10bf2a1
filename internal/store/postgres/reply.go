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
		if err != nil || n == 1 {
			return err
		}
		old, err := scanReplyIntent(tx.QueryRow(ctx, replySelectForUpdate, key...))
		if err != nil {
			return err
		}
		if err := store.ValidateReplyAdvance(old, r); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, replyAdvance, append([]any{r.Posted, joinIDs(r.PostedIDs), r.State, micros(r.UpdatedAt)}, key...)...)
		return err
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
