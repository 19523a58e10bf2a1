package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the room cache tables: room_cache_state, room_cache_items,
// room_system_messages and attention_items (migration 0005).
const (
	accountCountByID = `SELECT COUNT(*) FROM accounts WHERE workspace_id = ? AND id = ?`

	roomStateSelectSeq = `SELECT seq FROM room_cache_state WHERE workspace_id = ? AND account_id = ? AND room_id = ?`
	roomStateInsert    = `INSERT INTO room_cache_state (workspace_id, account_id, room_id, seq, updated_at) VALUES (?, ?, ?, ?, ?)`
	roomStateAdvance   = `UPDATE room_cache_state SET seq = ?, updated_at = ?
WHERE workspace_id = ? AND account_id = ? AND room_id = ? AND seq < ?`
	roomStateSelectAll = `SELECT room_id, seq, updated_at FROM room_cache_state
WHERE workspace_id = ? AND account_id = ? ORDER BY room_id`

	roomItemColumns   = `message_id, seq, inserted_at, sealed`
	roomItemDeleteAll = `DELETE FROM room_cache_items WHERE workspace_id = ? AND account_id = ? AND room_id = ?`
	roomItemDeleteOne = `DELETE FROM room_cache_items WHERE workspace_id = ? AND account_id = ? AND room_id = ? AND message_id = ?`
	roomItemUpsert    = `INSERT INTO room_cache_items (workspace_id, account_id, room_id, ` + roomItemColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, account_id, room_id, message_id) DO UPDATE SET
    seq = excluded.seq,
    inserted_at = excluded.inserted_at,
    sealed = excluded.sealed`
	// roomItemTrim keeps the newest ? items of a room.
	roomItemTrim = `DELETE FROM room_cache_items WHERE workspace_id = ? AND account_id = ? AND room_id = ? AND message_id NOT IN (
    SELECT message_id FROM room_cache_items WHERE workspace_id = ? AND account_id = ? AND room_id = ?
    ORDER BY inserted_at DESC, message_id DESC LIMIT ?)`
	roomItemSelect = `SELECT ` + roomItemColumns + ` FROM room_cache_items
WHERE workspace_id = ? AND account_id = ? AND room_id = ? ORDER BY inserted_at DESC, message_id DESC LIMIT ?`

	roomSystemColumns   = `workspace_id, account_id, room_id, message_id, participant_id, inserted_at, sealed, created_at`
	roomSystemInsert    = `INSERT INTO room_system_messages (` + roomSystemColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	roomSystemDeleteAll = `DELETE FROM room_system_messages WHERE workspace_id = ? AND account_id = ? AND room_id = ?`
	roomSystemTrim      = `DELETE FROM room_system_messages WHERE workspace_id = ? AND account_id = ? AND room_id = ? AND message_id NOT IN (
    SELECT message_id FROM room_system_messages WHERE workspace_id = ? AND account_id = ? AND room_id = ?
    ORDER BY inserted_at DESC, message_id DESC LIMIT ?)`
	roomSystemSelect = `SELECT ` + roomSystemColumns + ` FROM room_system_messages
WHERE workspace_id = ? AND account_id = ? AND room_id = ? ORDER BY inserted_at DESC, message_id DESC LIMIT ?`

	attentionColumns = `workspace_id, account_id, message_id, room_id, sender_id, kind, message_at, staged_at`
	attentionInsert  = `INSERT INTO attention_items (` + attentionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	attentionTrim    = `DELETE FROM attention_items WHERE workspace_id = ? AND account_id = ? AND message_id NOT IN (
    SELECT message_id FROM attention_items WHERE workspace_id = ? AND account_id = ?
    ORDER BY staged_at DESC, message_id DESC LIMIT ?)`
	attentionSelect = `SELECT ` + attentionColumns + ` FROM attention_items
WHERE workspace_id = ? AND account_id = ? ORDER BY staged_at DESC, message_id DESC LIMIT ?`
)

// RoomCacheApply implements [store.RoomCache]. The watermark is read and
// advanced inside the writer's IMMEDIATE transaction, so two writes of one
// room can never both pass the check with the same sequence.
func (s *Store) RoomCacheApply(ctx context.Context, p store.RoomCacheApplyParams) error {
	p, err := p.Canonical()
	if err != nil {
		return fmt.Errorf("room cache apply %s@%d: %w", p.Room, p.Seq, err)
	}
	// One write per message the person sees: the hot statements run
	// prepared (see stmtCache).
	if err := s.stmts.prepare(ctx, s.writer, roomCacheApplyQueries...); err != nil {
		return fmt.Errorf("room cache apply %s@%d: %w", p.Room, p.Seq, err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		exec := func(q string, args ...any) error {
			st, err := s.stmts.inTx(ctx, tx, q)
			if err == nil {
				_, err = st.ExecContext(ctx, args...)
			}
			return err
		}
		if err := advanceRoomState(ctx, tx, p); err != nil {
			return err
		}
		if p.Replace {
			if err := exec(roomItemDeleteAll, p.WorkspaceID, p.AccountID, p.Room); err != nil {
				return err
			}
		}
		for _, id := range p.Deletes {
			if err := exec(roomItemDeleteOne, p.WorkspaceID, p.AccountID, p.Room, id); err != nil {
				return err
			}
		}
		for _, it := range p.Upserts {
			if err := exec(roomItemUpsert, p.WorkspaceID, p.AccountID, p.Room,
				it.MessageID, it.Seq, it.InsertedAt.UnixMicro(), it.Sealed); err != nil {
				return err
			}
		}
		if len(p.Upserts) > 0 {
			if err := exec(roomItemTrim, p.WorkspaceID, p.AccountID, p.Room,
				p.WorkspaceID, p.AccountID, p.Room, store.RoomCacheWindow); err != nil {
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

// roomCacheApplyQueries are the statements RoomCacheApply runs prepared.
var roomCacheApplyQueries = []string{roomItemDeleteAll, roomItemDeleteOne, roomItemUpsert, roomItemTrim}

// advanceRoomState moves the room's watermark to p.Seq, creating it on the
// first write of the room, and refuses a sequence that does not advance.
func advanceRoomState(ctx context.Context, tx *sql.Tx, p store.RoomCacheApplyParams) error {
	var seq int64
	err := tx.QueryRowContext(ctx, roomStateSelectSeq, p.WorkspaceID, p.AccountID, p.Room).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := requireAccount(ctx, tx, p.WorkspaceID, p.AccountID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, roomStateInsert, p.WorkspaceID, p.AccountID, p.Room, p.Seq, p.At.UnixMicro())
		return err
	case err != nil:
		return err
	case p.Seq <= seq:
		return fmt.Errorf("%w: sequence %d is at or below the stored watermark %d", jam.ErrConflict, p.Seq, seq)
	}
	_, err = tx.ExecContext(ctx, roomStateAdvance, p.Seq, p.At.UnixMicro(), p.WorkspaceID, p.AccountID, p.Room, p.Seq)
	return err
}

// requireAccount reports a missing account as jam.ErrNotFound.
func requireAccount(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, acct jam.AccountID) error {
	var n int
	if err := tx.QueryRowContext(ctx, accountCountByID, ws, acct).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("account %s: %w", acct, jam.ErrNotFound)
	}
	return nil
}

// stageAttention inserts items not staged yet and trims the account's items
// to the newest store.MaxAttentionItems.
func stageAttention(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, acct jam.AccountID, items []store.AttentionItem) error {
	if len(items) == 0 {
		return nil
	}
	for _, a := range items {
		if _, err := tx.ExecContext(ctx, attentionInsert, ws, acct, a.MessageID, a.Room, a.SenderID, a.Kind,
			a.MessageAt.UnixMicro(), a.StagedAt.UnixMicro()); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, attentionTrim, ws, acct, ws, acct, store.MaxAttentionItems)
	return err
}

// RoomCacheStates implements [store.RoomCache].
func (s *Store) RoomCacheStates(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID) ([]store.RoomCacheState, error) {
	if err := store.ValidateAccountRef(ws, acct); err != nil {
		return nil, fmt.Errorf("room cache states: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanRoomCacheState, roomStateSelectAll, ws, acct)
	if err != nil {
		return nil, fmt.Errorf("room cache states: %w", err)
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
		limit, err = store.ListLimit(limit, store.RoomCacheWindow)
	}
	if err != nil {
		return nil, fmt.Errorf("room cache items %s: %w", room, err)
	}
	out, err := queryAll(ctx, s.reader, scanRoomCacheItem, roomItemSelect, ws, acct, room, limit)
	if err != nil {
		return nil, fmt.Errorf("room cache items %s: %w", room, err)
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
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, roomItemDeleteAll, ws, acct, room); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, roomSystemDeleteAll, ws, acct, room)
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
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		if err := requireAccount(ctx, tx, m.WorkspaceID, m.AccountID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, roomSystemInsert, m.WorkspaceID, m.AccountID, m.Room, m.MessageID, m.ParticipantID,
			m.InsertedAt.UnixMicro(), m.Sealed, m.CreatedAt.UnixMicro()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, roomSystemTrim, m.WorkspaceID, m.AccountID, m.Room,
			m.WorkspaceID, m.AccountID, m.Room, store.MaxRoomSystemMessages)
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
		limit, err = store.ListLimit(limit, store.MaxRoomSystemMessages)
	}
	if err != nil {
		return nil, fmt.Errorf("room system list %s: %w", room, err)
	}
	out, err := queryAll(ctx, s.reader, scanRoomSystemMessage, roomSystemSelect, ws, acct, room, limit)
	if err != nil {
		return nil, fmt.Errorf("room system list %s: %w", room, err)
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
		limit, err = store.ListLimit(limit, store.MaxAttentionItems)
	}
	if err != nil {
		return nil, fmt.Errorf("attention list: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanAttentionItem, attentionSelect, ws, acct, limit)
	if err != nil {
		return nil, fmt.Errorf("attention list: %w", err)
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
