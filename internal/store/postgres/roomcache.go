package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.RoomCache = (*Store)(nil)

// SQL of the room cache tables: room_cache_state, room_cache_items,
// room_system_messages and attention_items (migration 0005).
const (
	// accountShareByID checks the account and keeps it from being
	// removed until the transaction ends.
	accountShareByID = `SELECT 1 FROM accounts WHERE workspace_id = $1 AND id = $2 FOR KEY SHARE`

	roomStateSelectSeq = `SELECT seq FROM room_cache_state WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3`
	roomStateInsert    = `INSERT INTO room_cache_state (workspace_id, account_id, room_id, seq, updated_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (workspace_id, account_id, room_id) DO NOTHING`
	// roomStateAdvance is the watermark's check and its move in one
	// statement: under READ COMMITTED a concurrent advance of the row
	// makes this one wait and then test seq < $1 against the committed
	// value, so two writes can never both pass with one sequence.
	roomStateAdvance = `UPDATE room_cache_state SET seq = $1, updated_at = $2
WHERE workspace_id = $3 AND account_id = $4 AND room_id = $5 AND seq < $1`
	roomStateSelectAll = `SELECT room_id, seq, updated_at FROM room_cache_state
WHERE workspace_id = $1 AND account_id = $2 ORDER BY room_id`

	roomItemColumns   = `message_id, seq, inserted_at, sealed`
	roomItemDeleteAll = `DELETE FROM room_cache_items WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3`
	roomItemDeleteOne = `DELETE FROM room_cache_items WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3 AND message_id = $4`
	roomItemUpsert    = `INSERT INTO room_cache_items (workspace_id, account_id, room_id, ` + roomItemColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (workspace_id, account_id, room_id, message_id) DO UPDATE SET
    seq = excluded.seq,
    inserted_at = excluded.inserted_at,
    sealed = excluded.sealed`
	// roomItemTrim keeps the newest $4 items of a room.
	roomItemTrim = `DELETE FROM room_cache_items WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3 AND message_id NOT IN (
    SELECT message_id FROM room_cache_items WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3
    ORDER BY inserted_at DESC, message_id DESC LIMIT $4)`
	roomItemSelect = `SELECT ` + roomItemColumns + ` FROM room_cache_items
WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3 ORDER BY inserted_at DESC, message_id DESC LIMIT $4`

	roomSystemColumns   = `workspace_id, account_id, room_id, message_id, participant_id, inserted_at, sealed, created_at`
	roomSystemInsert    = `INSERT INTO room_system_messages (` + roomSystemColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`
	roomSystemDeleteAll = `DELETE FROM room_system_messages WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3`
	roomSystemTrim      = `DELETE FROM room_system_messages WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3 AND message_id NOT IN (
    SELECT message_id FROM room_system_messages WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3
    ORDER BY inserted_at DESC, message_id DESC LIMIT $4)`
	roomSystemSelect = `SELECT ` + roomSystemColumns + ` FROM room_system_messages
WHERE workspace_id = $1 AND account_id = $2 AND room_id = $3 ORDER BY inserted_at DESC, message_id DESC LIMIT $4`

	attentionColumns = `workspace_id, account_id, message_id, room_id, sender_id, kind, message_at, staged_at`
	attentionInsert  = `INSERT INTO attention_items (` + attentionColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`
	attentionTrim    = `DELETE FROM attention_items WHERE workspace_id = $1 AND account_id = $2 AND message_id NOT IN (
    SELECT message_id FROM attention_items WHERE workspace_id = $1 AND account_id = $2
    ORDER BY staged_at DESC, message_id DESC LIMIT $3)`
	attentionSelect = `SELECT ` + attentionColumns + ` FROM attention_items
WHERE workspace_id = $1 AND account_id = $2 ORDER BY staged_at DESC, message_id DESC LIMIT $3`
)

// RoomCacheApply implements [store.RoomCache] in one READ COMMITTED
// transaction; the watermark is decided by roomStateAdvance's predicate.
func (s *Store) RoomCacheApply(ctx context.Context, p store.RoomCacheApplyParams) error {
	p, err := p.Canonical()
	if err != nil {
		return fmt.Errorf("room cache apply %s@%d: %w", p.Room, p.Seq, err)
	}
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if err := advanceRoomState(ctx, tx, p); err != nil {
			return err
		}
		if p.Replace {
			if _, err := tx.Exec(ctx, roomItemDeleteAll, p.WorkspaceID, p.AccountID, p.Room); err != nil {
				return err
			}
		}
		for _, id := range p.Deletes {
			if _, err := tx.Exec(ctx, roomItemDeleteOne, p.WorkspaceID, p.AccountID, p.Room, id); err != nil {
				return err
			}
		}
		for _, it := range p.Upserts {
			if _, err := tx.Exec(ctx, roomItemUpsert, p.WorkspaceID, p.AccountID, p.Room,
				it.MessageID, it.Seq, micros(it.InsertedAt), it.Sealed); err != nil {
				return err
			}
		}
		if len(p.Upserts) > 0 {
			if _, err := tx.Exec(ctx, roomItemTrim, p.WorkspaceID, p.AccountID, p.Room, store.RoomCacheWindow); err != nil {
				return err
			}
		}
		return stageAttention(ctx, tx, p.WorkspaceID, p.AccountID, p.Attention)
	})
	if err != nil {
		return fmt.Errorf("room cache apply %s@%d: %w", p.Room, p.Seq, err)
	}
	return nil
}

// advanceRoomState moves the room's watermark to p.Seq, creating it on the
// first write of the room, and refuses a sequence that does not advance.
func advanceRoomState(ctx context.Context, tx pgx.Tx, p store.RoomCacheApplyParams) error {
	if err := requireAccount(ctx, tx, p.WorkspaceID, p.AccountID); err != nil {
		return err
	}
	n, err := rowsAffected(ctx, tx, roomStateInsert, p.WorkspaceID, p.AccountID, p.Room, p.Seq, micros(p.At))
	if err != nil || n == 1 {
		return err
	}
	if n, err = rowsAffected(ctx, tx, roomStateAdvance, p.Seq, micros(p.At), p.WorkspaceID, p.AccountID, p.Room); err != nil || n == 1 {
		return err
	}
	var seq int64
	if err := tx.QueryRow(ctx, roomStateSelectSeq, p.WorkspaceID, p.AccountID, p.Room).Scan(&seq); err != nil {
		return err
	}
	return fmt.Errorf("%w: sequence %d is at or below the stored watermark %d", jam.ErrConflict, p.Seq, seq)
}

// requireAccount reports a missing account as jam.ErrNotFound.
func requireAccount(ctx context.Context, tx pgx.Tx, ws jam.WorkspaceID, acct jam.AccountID) error {
	var one int
	err := tx.QueryRow(ctx, accountShareByID, ws, acct).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("account %s: %w", acct, jam.ErrNotFound)
	}
	return err
}

// stageAttention inserts items not staged yet and trims the account's items
// to the newest store.MaxAttentionItems.
func stageAttention(ctx context.Context, tx pgx.Tx, ws jam.WorkspaceID, acct jam.AccountID, items []store.AttentionItem) error {
	if len(items) == 0 {
		return nil
	}
	for _, a := range items {
		if _, err := tx.Exec(ctx, attentionInsert, ws, acct, a.MessageID, a.Room, a.SenderID, a.Kind,
			micros(a.MessageAt), micros(a.StagedAt)); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, attentionTrim, ws, acct, store.MaxAttentionItems)
	return err
}

// limitOr validates a list limit; 0 selects def.
func limitOr(limit, def int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", jam.ErrInvalid, limit)
	case limit == 0 || limit > def:
		return def, nil
	}
	return limit, nil
}

// RoomCacheStates implements [store.RoomCache].
func (s *Store) RoomCacheStates(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID) ([]store.RoomCacheState, error) {
	if err := store.ValidateAccountRef(ws, acct); err != nil {
		return nil, fmt.Errorf("room cache states: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanRoomCacheState, roomStateSelectAll, ws, acct)
	if err != nil {
		return nil, fmt.Errorf("room cache states: %w", mapErr(err))
	}
	return out, nil
}

func scanRoomCacheState(row scanner) (store.RoomCacheState, error) {
	var st store.RoomCacheState
	var updated int64
	if err := row.Scan(&st.Room, &st.Seq, &updated); err != nil {
		return store.RoomCacheState{}, err
	}
	st.UpdatedAt = fromMicros(updated)
	return st, nil
}

// RoomCacheItems implements [store.RoomCache]. A limit above
// store.RoomCacheWindow is clamped to it.
func (s *Store) RoomCacheItems(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID, limit int) ([]store.RoomCacheItem, error) {
	room, err := store.ValidateRoomKey(ws, acct, room)
	if err == nil {
		limit, err = limitOr(limit, store.RoomCacheWindow)
	}
	if err != nil {
		return nil, fmt.Errorf("room cache items %s: %w", room, err)
	}
	out, err := queryAll(ctx, s.pool, scanRoomCacheItem, roomItemSelect, ws, acct, room, limit)
	if err != nil {
		return nil, fmt.Errorf("room cache items %s: %w", room, mapErr(err))
	}
	return out, nil
}

func scanRoomCacheItem(row scanner) (store.RoomCacheItem, error) {
	var it store.RoomCacheItem
	var inserted int64
	if err := row.Scan(&it.MessageID, &it.Seq, &inserted, &it.Sealed); err != nil {
		return store.RoomCacheItem{}, err
	}
	it.InsertedAt = fromMicros(inserted)
	return it, nil
}

// RoomCacheRetire implements [store.RoomCache]. Retiring a room with
// nothing cached is not an error.
func (s *Store) RoomCacheRetire(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID) error {
	room, err := store.ValidateRoomKey(ws, acct, room)
	if err != nil {
		return fmt.Errorf("room cache retire %s: %w", room, err)
	}
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, roomItemDeleteAll, ws, acct, room); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, roomSystemDeleteAll, ws, acct, room)
		return err
	})
	if err != nil {
		return fmt.Errorf("room cache retire %s: %w", room, err)
	}
	return nil
}

// RoomSystemAppend implements [store.RoomCache]. An unknown account is
// jam.ErrNotFound.
func (s *Store) RoomSystemAppend(ctx context.Context, m store.RoomSystemMessage) error {
	m, err := m.Canonical()
	if err != nil {
		return fmt.Errorf("room system append %s: %w", m.MessageID, err)
	}
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if err := requireAccount(ctx, tx, m.WorkspaceID, m.AccountID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, roomSystemInsert, m.WorkspaceID, m.AccountID, m.Room, m.MessageID, m.ParticipantID,
			micros(m.InsertedAt), m.Sealed, micros(m.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, roomSystemTrim, m.WorkspaceID, m.AccountID, m.Room, store.MaxRoomSystemMessages)
		return err
	})
	if err != nil {
		return fmt.Errorf("room system append %s: %w", m.MessageID, err)
	}
	return nil
}

// RoomSystemList implements [store.RoomCache].
func (s *Store) RoomSystemList(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID, limit int) ([]store.RoomSystemMessage, error) {
	room, err := store.ValidateRoomKey(ws, acct, room)
	if err == nil {
		limit, err = limitOr(limit, store.MaxRoomSystemMessages)
	}
	if err != nil {
		return nil, fmt.Errorf("room system list %s: %w", room, err)
	}
	out, err := queryAll(ctx, s.pool, scanRoomSystemMessage, roomSystemSelect, ws, acct, room, limit)
	if err != nil {
		return nil, fmt.Errorf("room system list %s: %w", room, mapErr(err))
	}
	return out, nil
}

func scanRoomSystemMessage(row scanner) (store.RoomSystemMessage, error) {
	var m store.RoomSystemMessage
	var inserted, created int64
	if err := row.Scan(&m.WorkspaceID, &m.AccountID, &m.Room, &m.MessageID, &m.ParticipantID, &inserted, &m.Sealed, &created); err != nil {
		return store.RoomSystemMessage{}, err
	}
	m.InsertedAt = fromMicros(inserted)
	m.CreatedAt = fromMicros(created)
	return m, nil
}

// AttentionList implements [store.RoomCache].
func (s *Store) AttentionList(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, limit int) ([]store.AttentionItem, error) {
	err := store.ValidateAccountRef(ws, acct)
	if err == nil {
		limit, err = limitOr(limit, store.MaxAttentionItems)
	}
	if err != nil {
		return nil, fmt.Errorf("attention list: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanAttentionItem, attentionSelect, ws, acct, limit)
	if err != nil {
		return nil, fmt.Errorf("attention list: %w", mapErr(err))
	}
	return out, nil
}

func scanAttentionItem(row scanner) (store.AttentionItem, error) {
	var a store.AttentionItem
	var msgAt, staged int64
	if err := row.Scan(&a.WorkspaceID, &a.AccountID, &a.MessageID, &a.Room, &a.SenderID, &a.Kind, &msgAt, &staged); err != nil {
		return store.AttentionItem{}, err
	}
	a.MessageAt = fromMicros(msgAt)
	a.StagedAt = fromMicros(staged)
	return a, nil
}
