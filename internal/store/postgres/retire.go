package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.RoomRetirement = (*Store)(nil)

// SQL of room retirement (table retired_rooms, migration 0003).
const (
	retiredUpsert = `INSERT INTO retired_rooms (workspace_id, profile, scope, room_id, retired_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (workspace_id, profile, scope, room_id) DO UPDATE SET retired_at = excluded.retired_at`
	retiredDelete = `DELETE FROM retired_rooms WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4`
	retiredSelect = `SELECT room_id FROM retired_rooms WHERE workspace_id = $1 AND profile = $2 AND scope = $3 ORDER BY room_id`
	// The lane's entries are counted before they are deleted so the
	// caller can release their spool budget; the spool is reached through
	// its lane index ($5 is the lane key).
	retiredSpoolUsage = `SELECT COUNT(*), COALESCE(SUM(length(sealed)), 0) FROM spool
WHERE lane_key = $5 AND workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4`
	retiredSpoolDelete = `DELETE FROM spool
WHERE lane_key = $5 AND workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4`
	retiredQueueDelete = `DELETE FROM queue WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4`
	retiredBindingDel  = `DELETE FROM bindings WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4 RETURNING id`
)

// RoomRetire implements [store.RoomRetirement] in one READ COMMITTED
// transaction that first locks the peer's row (see BindingPut), so a
// move of the room's entries either commits before (its row is deleted
// here) or runs after and sees the retirement.
func (s *Store) RoomRetire(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, at time.Time) (store.RoomRetired, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err == nil {
		err = store.ValidateTime("retired at", at)
	}
	if err != nil {
		return store.RoomRetired{}, fmt.Errorf("retire room %s: %w", room, err)
	}
	var out store.RoomRetired
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		out = store.RoomRetired{}
		if _, err := lockPeer(ctx, tx, ws, key); err != nil {
			return err
		}
		args := []any{ws, key.Profile, key.Scope, room}
		lane := append(args, spoolKey(string(ws), key.Profile, key.Scope, string(room)))
		if err := tx.QueryRow(ctx, retiredSpoolUsage, lane...).Scan(&out.Spooled, &out.SpooledBytes); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, retiredSpoolDelete, lane...); err != nil {
			return err
		}
		n, err := rowsAffected(ctx, tx, retiredQueueDelete, args...)
		if err != nil {
			return err
		}
		out.Queued = int(n)
		err = tx.QueryRow(ctx, retiredBindingDel, args...).Scan(&out.Binding)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err = tx.Exec(ctx, retiredUpsert, ws, key.Profile, key.Scope, room, micros(at))
		return err
	})
	if err != nil {
		return store.RoomRetired{}, fmt.Errorf("retire room %s: %w", room, err)
	}
	return out, nil
}

// RoomRestore implements [store.RoomRetirement].
func (s *Store) RoomRestore(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (bool, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err != nil {
		return false, fmt.Errorf("restore room %s: %w", room, err)
	}
	n, err := rowsAffected(ctx, s.pool, retiredDelete, ws, key.Profile, key.Scope, room)
	if err != nil {
		return false, fmt.Errorf("restore room %s: %w", room, mapErr(err))
	}
	return n > 0, nil
}

// RoomRetiredList implements [store.RoomRetirement].
func (s *Store) RoomRetiredList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]jam.RoomID, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return nil, fmt.Errorf("list retired rooms: %w", err)
	}
	out, err := queryAll(ctx, s.pool, func(r scanner) (jam.RoomID, error) {
		var id jam.RoomID
		err := r.Scan(&id)
		return id, err
	}, retiredSelect, ws, key.Profile, key.Scope)
	if err != nil {
		return nil, fmt.Errorf("list retired rooms: %w", mapErr(err))
	}
	return out, nil
}
