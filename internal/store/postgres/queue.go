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

var _ store.Queue = (*Store)(nil)

// SQL of the queue table. binding_id ” is the unrouted bucket. Every list
// is in seq order, the arrival order of the spool. The list statements
// share one argument list, numbered $1 workspace, $2 binding, $3/$4 peer,
// $5 room, $6 limit (NULL: none), $7 after, and each uses the ones it
// needs. Optional filters are ” for "any".
const (
	queueColumns = `workspace_id, profile, scope, message_id, seq, room_id, binding_id, sender_id,
addressed_to_user, sealed, state, attempts, received_at, claimed_at, delivered_at`
	queueInsert = `INSERT INTO queue (` + queueColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	queueSelect = `SELECT ` + queueColumns + ` FROM queue
WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4`
	queueSelectFrom     = `SELECT ` + queueColumns + ` FROM queue`
	queueWhereOfBinding = `
WHERE workspace_id = $1 AND binding_id = $2
  AND ($3::text = '' OR (profile = $3 AND scope = $4)) AND ($5::text = '' OR room_id = $5)`
	queueWhereUnrouted = `
WHERE workspace_id = $1 AND binding_id = '' AND $2::text = ''
  AND ($3::text = '' OR (profile = $3 AND scope = $4)) AND ($5::text = '' OR room_id = $5)`
	queueWhereOfPeer = `
WHERE workspace_id = $1 AND $2::text = '' AND profile = $3 AND scope = $4 AND ($5::text = '' OR room_id = $5)`
	queueWhereOfWorkspace = `
WHERE workspace_id = $1 AND $2::text = '' AND $3::text = '' AND $4::text = '' AND ($5::text = '' OR room_id = $5)`
	// The inbox's rows only, literal so that the partial indexes of
	// migration 0013 serve it.
	queueDelivered = `
  AND binding_id <> '' AND state = 'delivered'`
	queueOrder = `
  AND seq > $7
ORDER BY seq LIMIT $6`
	queueSelectOfBinding            = queueSelectFrom + queueWhereOfBinding + queueOrder
	queueSelectDeliveredOfBinding   = queueSelectFrom + queueWhereOfBinding + queueDelivered + queueOrder
	queueSelectUnrouted             = queueSelectFrom + queueWhereUnrouted + queueOrder
	queueSelectOfPeer               = queueSelectFrom + queueWhereOfPeer + queueOrder
	queueSelectDeliveredOfPeer      = queueSelectFrom + queueWhereOfPeer + queueDelivered + queueOrder
	queueSelectOfWorkspace          = queueSelectFrom + queueWhereOfWorkspace + queueOrder
	queueSelectDeliveredOfWorkspace = queueSelectFrom + queueWhereOfWorkspace + queueDelivered + queueOrder
	// The rooms of a peer's rows, through the lane index's prefix.
	queueRoomsOfPeer = `SELECT room_id, MIN(received_at) FROM queue
WHERE workspace_id = $1 AND profile = $2 AND scope = $3
GROUP BY room_id ORDER BY room_id`
	queueMarkClaimed = `UPDATE queue SET state = $1, claimed_at = $2
WHERE workspace_id = $3 AND profile = $4 AND scope = $5 AND message_id = $6`
	queueMarkDelivered = `UPDATE queue SET state = $1, delivered_at = $2, attempts = attempts + 1
WHERE workspace_id = $3 AND profile = $4 AND scope = $5 AND message_id = $6`
	queueDelete              = `DELETE FROM queue WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4`
	queuePruneUnroutedBefore = `DELETE FROM queue WHERE binding_id = '' AND received_at < $1`
	queuePruneUnroutedKeep   = `DELETE FROM queue WHERE binding_id = ''
AND (workspace_id, profile, scope, message_id) IN (
    SELECT workspace_id, profile, scope, message_id FROM (
        SELECT workspace_id, profile, scope, message_id,
               ROW_NUMBER() OVER (PARTITION BY workspace_id, profile, scope ORDER BY seq DESC) AS n
        FROM queue WHERE binding_id = ''
    ) AS ranked
    WHERE n > $1
)`
)

// queueRowArgs are the arguments of queueInsert for r.
func queueRowArgs(r store.QueueRow) []any {
	return []any{r.WorkspaceID, r.Peer.Profile, r.Peer.Scope, r.MessageID, r.Seq,
		r.Room, r.Binding, r.SenderID, r.AddressedToUser, r.Sealed, r.State, r.Attempts,
		micros(r.ReceivedAt), nullMicros(r.ClaimedAt), nullMicros(r.DeliveredAt)}
}

// QueueGet implements [store.Queue].
func (s *Store) QueueGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.QueueRow, error) {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("queue get %s: %w", msg, err)
	}
	r, err := scanQueueRow(s.pool.QueryRow(ctx, queueSelect, ws, key.Profile, key.Scope, msg))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("queue get %s: %w", msg, mapErr(err))
	}
	return r, nil
}

// QueueList implements [store.Queue], with the selections of the SQLite
// dialect: Binding set (that binding's rows, optionally also filtered by
// Peer); Unrouted (the bucket, optionally of one Peer); Peer set (all of
// the peer's rows, routed or not); otherwise every row of the workspace.
// Room filters any of them. Limit 0 means no limit.
func (s *Store) QueueList(ctx context.Context, p store.QueueListParams) ([]store.QueueRow, error) {
	p, err := p.Canonical()
	if err != nil {
		return nil, fmt.Errorf("queue list: %w", err)
	}
	var query string
	binding, profile, scope := string(p.Binding), p.Peer.Profile, p.Peer.Scope
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
	var limit *int64
	if p.Limit > 0 {
		l := int64(p.Limit)
		limit = &l
	}
	out, err := queryAll(ctx, s.pool, scanQueueRow, query,
		p.WorkspaceID, binding, profile, scope, string(p.Room), limit, p.After)
	if err != nil {
		return nil, fmt.Errorf("queue list: %w", mapErr(err))
	}
	return out, nil
}

// QueueRooms implements [store.Queue]: one grouped read.
func (s *Store) QueueRooms(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]store.QueueRoom, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("queue rooms: %w", err)
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("queue rooms: %w", err)
	}
	out, err := queryAll(ctx, s.pool, func(r scanner) (store.QueueRoom, error) {
		var q store.QueueRoom
		var at int64
		if err := r.Scan(&q.Room, &at); err != nil {
			return q, err
		}
		q.FirstReceived = fromMicros(at)
		return q, nil
	}, queueRoomsOfPeer, ws, key.Profile, key.Scope)
	if err != nil {
		return nil, fmt.Errorf("queue rooms of %s: %w", key, mapErr(err))
	}
	return out, nil
}

// QueueMark implements [store.Queue] with one statement (the SQLite
// dialect groups concurrent marks into one transaction to save fsyncs of
// its single writer; here each mark is its own short statement). A claim
// sets the state and ClaimedAt; a delivery sets the state and
// DeliveredAt and counts one attempt. Marks record progress rather than
// fence it. A missing row is jam.ErrNotFound.
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
	n, err := rowsAffected(ctx, s.pool, query, p.State, micros(p.At), p.WorkspaceID, p.Peer.Profile, p.Peer.Scope, msg)
	if err != nil {
		return fmt.Errorf("queue mark %s: %w", msg, mapErr(err))
	}
	if n == 0 {
		return fmt.Errorf("queue mark %s: %w", msg, jam.ErrNotFound)
	}
	return nil
}

// QueueSettle implements [store.Queue]: the row goes and the tombstone is
// written in one transaction. Settling a message that is not queued but
// already has a tombstone succeeds, so a retried settlement is
// idempotent; a message that is neither is jam.ErrNotFound.
func (s *Store) QueueSettle(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, at time.Time) error {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return fmt.Errorf("queue settle %s: %w", msg, err)
	}
	if err := store.ValidateTime("time", at); err != nil {
		return fmt.Errorf("queue settle %s: %w", msg, err)
	}
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		n, err := rowsAffected(ctx, tx, queueDelete, ws, key.Profile, key.Scope, msg)
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

// QueuePruneUnrouted implements [store.Queue] across all workspaces:
// unrouted rows received before before go first, then all but the newest
// keep (by seq) of each peer. Pruned rows get no tombstone.
func (s *Store) QueuePruneUnrouted(ctx context.Context, before time.Time, keep int) (int, error) {
	if err := store.ValidateTime("before", before); err != nil {
		return 0, fmt.Errorf("queue prune unrouted: %w", err)
	}
	if keep < 0 {
		return 0, fmt.Errorf("queue prune unrouted: %w: keep %d is negative", jam.ErrInvalid, keep)
	}
	var total int64
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		total = 0
		for _, step := range []struct {
			query string
			arg   any
		}{{queuePruneUnroutedBefore, micros(before)}, {queuePruneUnroutedKeep, keep}} {
			n, err := rowsAffected(ctx, tx, step.query, step.arg)
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
	var claimed, delivered *int64
	err := row.Scan(&r.WorkspaceID, &r.Peer.Profile, &r.Peer.Scope, &r.MessageID, &r.Seq, &r.Room, &r.Binding,
		&r.SenderID, &r.AddressedToUser, &r.Sealed, &r.State, &r.Attempts, &received, &claimed, &delivered)
	if err != nil {
		return store.QueueRow{}, err
	}
	if len(r.Sealed) == 0 {
		return store.QueueRow{}, fmt.Errorf("%w: queued message %s: sealed message is empty", store.ErrCorrupt, r.MessageID)
	}
	r.ReceivedAt = fromMicros(received)
	r.ClaimedAt = fromNullMicros(claimed)
	r.DeliveredAt = fromNullMicros(delivered)
	return r, nil
}
