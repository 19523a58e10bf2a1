package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of room retirement (table retired_rooms, migration 0003).
const (
	retiredUpsert = `INSERT INTO retired_rooms (workspace_id, profile, scope, room_id, retired_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, profile, scope, room_id) DO UPDATE SET retired_at = excluded.retired_at`
	retiredDelete = `DELETE FROM retired_rooms WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ?`
	retiredSelect = `SELECT room_id FROM retired_rooms WHERE workspace_id = ? AND profile = ? AND scope = ? ORDER BY room_id`
	// The lane's entries are counted before they are deleted so the
	// caller can release their spool budget.
	// The spool is reached through its lane index (spoolKey in spool.go).
	retiredSpoolUsage = `SELECT COUNT(*), COALESCE(SUM(length(sealed)), 0) FROM spool
WHERE lane_key = jam_spool_key(?1, ?2, ?3, ?4) AND workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND room_id = ?4`
	retiredSpoolDelete = `DELETE FROM spool
WHERE lane_key = jam_spool_key(?1, ?2, ?3, ?4) AND workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND room_id = ?4`
	retiredQueueDelete = `DELETE FROM queue WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ?`
	retiredBindingDel  = `DELETE FROM bindings WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ?`
)

// RoomRetire implements [store.Messaging].
func (s *Store) RoomRetire(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, at time.Time) (store.RoomRetired, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err == nil {
		err = store.ValidateTime("retired at", at)
	}
	if err != nil {
		return store.RoomRetired{}, fmt.Errorf("retire room %s: %w", room, err)
	}
	var out store.RoomRetired
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		args := []any{ws, key.Profile, key.Scope, room}
		if err := tx.QueryRowContext(ctx, retiredSpoolUsage, args...).Scan(&out.Spooled, &out.SpooledBytes); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, retiredSpoolDelete, args...); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, retiredQueueDelete, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		out.Queued = int(n)
		err = tx.QueryRowContext(ctx, bindingSelectIDOfRoom, args...).Scan(&out.Binding)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, retiredBindingDel, args...); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, retiredUpsert, ws, key.Profile, key.Scope, room, at.UnixMicro())
		return err
	})
	if err != nil {
		return store.RoomRetired{}, fmt.Errorf("retire room %s: %w", room, err)
	}
	return out, nil
}

// RoomRestore implements [store.Messaging].
func (s *Store) RoomRestore(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (bool, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err != nil {
		return false, fmt.Errorf("restore room %s: %w", room, err)
	}
	res, err := s.writer.ExecContext(ctx, retiredDelete, ws, key.Profile, key.Scope, room)
	if err != nil {
		return false, fmt.Errorf("restore room %s: %w", room, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("restore room %s: %w", room, err)
	}
	return n > 0, nil
}

// RoomRetiredList implements [store.Messaging].
func (s *Store) RoomRetiredList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]jam.RoomID, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return nil, fmt.Errorf("list retired rooms: %w", err)
	}
	rows, err := s.reader.QueryContext(ctx, retiredSelect, ws, key.Profile, key.Scope)
	if err != nil {
		return nil, fmt.Errorf("list retired rooms: %w", err)
	}
	defer rows.Close()
	var out []jam.RoomID
	for rows.Next() {
		var r jam.RoomID
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("list retired rooms: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list retired rooms: %w", err)
	}
	return out, nil
}
