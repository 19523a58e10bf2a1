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

// SQL of the queue table. binding_id ” is the unrouted bucket. Every list
// is in seq order, the arrival order of the spool.
//
// SQLite-only: "LIMIT -1" means no limit; PostgreSQL spells it LIMIT NULL
// (or LIMIT ALL). The list statements share one argument list, numbered
// ?1 workspace, ?2 binding, ?3/?4 peer, ?5 room, ?6 limit, and each uses
// the ones it needs. Optional filters are ” for "any"; each statement
// keeps a fixed index prefix, so the optional terms only filter.
const (
	queueColumns = `workspace_id, profile, scope, message_id, seq, room_id, binding_id, sender_id,
addressed_to_user, sealed, state, attempts, received_at, claimed_at, delivered_at`
	queueInsert = `INSERT INTO queue (` + queueColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	queueSelect = `SELECT ` + queueColumns + ` FROM queue
WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
	// The listings: a selection, optionally the inbox's rows only
	// (queueDelivered, literal so that the partial index queue_inbox
	// serves it), rows after ?7 (a later page), oldest first.
	queueSelectFrom     = `SELECT ` + queueColumns + ` FROM queue`
	queueWhereOfBinding = `
WHERE workspace_id = ?1 AND binding_id = ?2
  AND (?3 = '' OR (profile = ?3 AND scope = ?4)) AND (?5 = '' OR room_id = ?5)`
	queueWhereUnrouted = `
WHERE workspace_id = ?1 AND binding_id = ''
  AND (?3 = '' OR (profile = ?3 AND scope = ?4)) AND (?5 = '' OR room_id = ?5)`
	queueWhereOfPeer = `
WHERE workspace_id = ?1 AND profile = ?3 AND scope = ?4 AND (?5 = '' OR room_id = ?5)`
	queueWhereOfWorkspace = `
WHERE workspace_id = ?1 AND (?5 = '' OR room_id = ?5)`
	queueDelivered = `
  AND binding_id <> '' AND state = 'delivered'`
	queueOrder = `
  AND seq > ?7
ORDER BY seq LIMIT ?6`
	queueSelectOfBinding            = queueSelectFrom + queueWhereOfBinding + queueOrder
	queueSelectDeliveredOfBinding   = queueSelectFrom + queueWhereOfBinding + queueDelivered + queueOrder
	queueSelectUnrouted             = queueSelectFrom + queueWhereUnrouted + queueOrder
	queueSelectOfPeer               = queueSelectFrom + queueWhereOfPeer + queueOrder
	queueSelectDeliveredOfPeer      = queueSelectFrom + queueWhereOfPeer + queueDelivered + queueOrder
	queueSelectOfWorkspace          = queueSelectFrom + queueWhereOfWorkspace + queueOrder
	queueSelectDeliveredOfWorkspace = queueSelectFrom + queueWhereOfWorkspace + queueDelivered + queueOrder
	// The rooms of a peer's rows, through the lane index's prefix.
	queueRoomsOfPeer = `SELECT room_id, MIN(received_at) FROM queue
WHERE workspace_id = ? AND profile = ? AND scope = ?
GROUP BY room_id ORDER BY room_id`
	queueMarkClaimed = `UPDATE queue SET state = ?, claimed_at = ?
WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
	queueMarkDelivered = `UPDATE queue SET state = ?, delivered_at = ?, attempts = attempts + 1
WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
	queueDelete = `DELETE FROM queue WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
	// queueUnrouteBinding sends a binding's rows to the unrouted bucket.
	queueUnrouteBinding = `UPDATE queue SET binding_id = '' WHERE workspace_id = ? AND binding_id = ?`
	// queueRehomeRoom gives every row of a (peer, room) to the binding that
	// now owns it: the previous owner's rows and the unrouted ones.
	queueRehomeRoom = `UPDATE queue SET binding_id = ?1
WHERE workspace_id = ?2 AND profile = ?3 AND scope = ?4 AND room_id = ?5 AND binding_id <> ?1`
	queuePruneUnroutedBefore = `DELETE FROM queue WHERE binding_id = '' AND received_at < ?`
	queuePruneUnroutedKeep   = `DELETE FROM queue WHERE binding_id = ''
AND (workspace_id, profile, scope, message_id) IN (
    SELECT workspace_id, profile, scope, message_id FROM (
        SELECT workspace_id, profile, scope, message_id,
               ROW_NUMBER() OVER (PARTITION BY workspace_id, profile, scope ORDER BY seq DESC) AS n
        FROM queue WHERE binding_id = ''
    ) AS ranked
    WHERE n > ?
)`
)

// insertQueueRow inserts r inside tx.
func insertQueueRow(ctx context.Context, tx *sql.Tx, r store.QueueRow) error {
	_, err := tx.ExecContext(ctx, queueInsert, queueRowArgs(r)...)
	return err
}

// queueRowArgs are the arguments of queueInsert for r.
func queueRowArgs(r store.QueueRow) []any {
	return []any{r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID, r.Seq,
		r.Room, r.Binding, r.SenderID, r.AddressedToUser, r.Sealed, r.State, r.Attempts,
		r.ReceivedAt.UnixMicro(), toNullMicros(r.ClaimedAt), toNullMicros(r.DeliveredAt)}
}

// QueueGet implements [store.Messaging].
func (s *Store) QueueGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.QueueRow, error) {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("queue get %s: %w", msg, err)
	}
	r, err := scanQueueRow(s.reader.QueryRowContext(ctx, queueSelect, ws, key.Profile, key.Scope, msg))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("queue get %s: %w", msg, err)
	}
	return r, nil
}

// QueueList implements [store.Messaging]. The selection is, in order of
// precedence: Binding set (that binding's rows, optionally also filtered
// by Peer); Unrouted (the bucket, optionally of one Peer); Peer set (all
// of the peer's rows, routed or not); otherwise every row of the
// workspace. Room filters any of them. Limit 0 means no limit. Binding
// together with Unrouted is jam.ErrInvalid.
func (s *Store) QueueList(ctx context.Context, p store.QueueListParams) ([]store.QueueRow, error) {
	p, err := p.Canonical()
	if err != nil {
		return nil, fmt.Errorf("queue list: %w", err)
	}
	var query string
	switch {
	case p.Binding != "" && p.Delivered:
		query = queueSelectDeliveredOfBinding
	case p.Binding != "":
		query = queueSelectOfBinding
	case p.Unrouted:
		query = queueSelectUnrouted
	case !p.Peer.IsZero() && p.Delivered:
		query = queueSelectDeliveredOfPeer
	case !p.Peer.IsZero():
		query = queueSelectOfPeer
	case p.Delivered:
		query = queueSelectDeliveredOfWorkspace
	default:
		query = queueSelectOfWorkspace
	}
	limit := int64(-1)
	if p.Limit > 0 {
		limit = int64(p.Limit)
	}
	out, err := queryAll(ctx, s.reader, scanQueueRow, query,
		p.WorkspaceID, p.Binding, p.Peer.Profile, p.Peer.Scope, p.Room, limit, p.After)
	if err != nil {
		return nil, fmt.Errorf("queue list: %w", err)
	}
	return out, nil
}

// QueueRooms implements [store.Messaging]: one grouped read, not the
// peer's rows (a restart with a large backlog reconciles its rooms with
// it; loading every row took seconds at 100,000).
func (s *Store) QueueRooms(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]store.QueueRoom, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("queue rooms: %w", err)
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("queue rooms: %w", err)
	}
	out, err := queryAll(ctx, s.reader, func(r scanner) (store.QueueRoom, error) {
		var q store.QueueRoom
		var at int64
		if err := r.Scan(&q.Room, &at); err != nil {
			return q, err
		}
		q.FirstReceived = fromMicros(at)
		return q, nil
	}, queueRoomsOfPeer, ws, key.Profile, key.Scope)
	if err != nil {
		return nil, fmt.Errorf("queue rooms of %s: %w", key, err)
	}
	return out, nil
}

// QueueMark implements [store.Messaging]. A claim sets the state and
// ClaimedAt; a delivery sets the state and DeliveredAt and counts one
// attempt. Marks record progress rather than fence it, so a redelivery
// may claim a delivered row again. A missing row is jam.ErrNotFound.
func (s *Store) QueueMark(ctx context.Context, p store.QueueMarkParams) error {
	msg, err := store.ValidateMessageKey(p.WorkspaceID, p.Peer, p.MessageID)
	if err != nil {
		return fmt.Errorf("queue mark %s: %w", p.MessageID, err)
	}
	var query string
	switch p.State {
	case store.QueueClaimed:
		query = queueMarkClaimed
	case store.QueueDelivered:
		query = queueMarkDelivered
	default:
		return fmt.Errorf("queue mark %s: %w: state %q is not %q or %q", msg, jam.ErrInvalid, p.State, store.QueueClaimed, store.QueueDelivered)
	}
	if err := store.ValidateTime("time", p.At); err != nil {
		return fmt.Errorf("queue mark %s: %w", msg, err)
	}
	// Concurrent marks share a transaction (markGroup).
	return s.mark(ctx, &markReq{query: query, msg: msg,
		args: []any{p.State, p.At.UnixMicro(), p.WorkspaceID, p.Peer.Profile, p.Peer.Scope, msg}})
}

// QueueSettle implements [store.Messaging]. Settling a message that is not
// queued but already has a tombstone succeeds, so a retried settlement is
// idempotent; a message that is neither is jam.ErrNotFound.
func (s *Store) QueueSettle(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, at time.Time) error {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return fmt.Errorf("queue settle %s: %w", msg, err)
	}
	if err := store.ValidateTime("time", at); err != nil {
		return fmt.Errorf("queue settle %s: %w", msg, err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, queueDelete, ws, key.Profile, key.Scope, msg)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			settled, err := isSettled(ctx, tx, ws, key, msg)
			if err != nil || settled {
				return err
			}
			return jam.ErrNotFound
		}
		return insertSettled(ctx, tx, ws, key, msg, at)
	})
	if err != nil {
		return fmt.Errorf("queue settle %s: %w", msg, err)
	}
	return nil
}

// QueuePruneUnrouted implements [store.Messaging] across all workspaces:
// unrouted rows received before before go first, then all but the newest
// keep (by seq) of each peer. Pruned rows get no tombstone: Band still
// holds them as unprocessed, and may replay them.
func (s *Store) QueuePruneUnrouted(ctx context.Context, before time.Time, keep int) (int, error) {
	if err := store.ValidateTime("before", before); err != nil {
		return 0, fmt.Errorf("queue prune unrouted: %w", err)
	}
	if keep < 0 {
		return 0, fmt.Errorf("queue prune unrouted: %w: keep %d is negative", jam.ErrInvalid, keep)
	}
	var total int64
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		for _, step := range []struct {
			query string
			arg   any
		}{{queuePruneUnroutedBefore, before.UnixMicro()}, {queuePruneUnroutedKeep, keep}} {
			res, err := tx.ExecContext(ctx, step.query, step.arg)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queue prune unrouted: %w", err)
	}
	return int(total), nil
}

func scanQueueRow(row scanner) (store.QueueRow, error) {
	var r store.QueueRow
	var received int64
	var claimed, delivered sql.NullInt64
	err := row.Scan(&r.WorkspaceID, &r.Peer.Profile, &r.Peer.Scope, &r.MessageID, &r.Seq, &r.Room, &r.Binding,
		&r.SenderID, &r.AddressedToUser, &r.Sealed, &r.State, &r.Attempts, &received, &claimed, &delivered)
	if err != nil {
		return store.QueueRow{}, corruptScan("queue", err)
	}
	if len(r.Sealed) == 0 {
		return store.QueueRow{}, fmt.Errorf("%w: queued message %s: sealed message is empty", store.ErrCorrupt, r.MessageID)
	}
	r.ReceivedAt = fromMicros(received)
	r.ClaimedAt = fromNullMicros(claimed)
	r.DeliveredAt = fromNullMicros(delivered)
	return r, nil
}
