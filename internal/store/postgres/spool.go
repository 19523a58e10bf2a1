package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Spool = (*Store)(nil)

// SQL of the spool table.
const (
	spoolColumns = `seq, workspace_id, profile, scope, room_id, message_id, sealed, received_at`
	// spoolLockLanes takes a transaction-level advisory lock on each lane
	// key of a batch, in key order (so two appends never deadlock). Within
	// a lane, appends therefore commit in the order they took their
	// sequences: an identity value is handed out at insert, not at commit,
	// and without the lock a reader could move seq 7 of a lane while seq 6
	// was still uncommitted, and deliver the room out of order.
	spoolLockLanes = `SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k ORDER BY k`
	// spoolInsert appends a whole batch in one statement (the group
	// commit's shape: one statement, one commit), the columns passed as
	// arrays. An entry is skipped when its message is already spooled for
	// the peer (the unique constraint, ON CONFLICT DO NOTHING: a
	// concurrent append of the same message through another handle waits
	// for this one and then skips), queued or settled (NOT EXISTS, each a
	// primary-key lookup). RETURNING names the rows that went in; the
	// others are the duplicates.
	spoolInsert = `INSERT INTO spool (workspace_id, profile, scope, room_id, message_id, sealed, received_at, lane_key)
SELECT b.workspace_id, b.profile, b.scope, b.room_id, b.message_id, b.sealed, b.received_at, b.lane_key
FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::bigint[], $9::bigint[])
    AS b (n, workspace_id, profile, scope, room_id, message_id, sealed, received_at, lane_key)
WHERE NOT EXISTS (SELECT 1 FROM queue q WHERE q.workspace_id = b.workspace_id AND q.profile = b.profile
                  AND q.scope = b.scope AND q.message_id = b.message_id)
  AND NOT EXISTS (SELECT 1 FROM settled s WHERE s.workspace_id = b.workspace_id AND s.profile = b.profile
                  AND s.scope = b.scope AND s.message_id = b.message_id)
ORDER BY b.n
ON CONFLICT (workspace_id, profile, scope, message_id) DO NOTHING
RETURNING seq, workspace_id, profile, scope, message_id`
	// spoolSelectLane reads one lane through spool_lane (lane_key, seq).
	spoolSelectLane = `SELECT ` + spoolColumns + ` FROM spool
WHERE lane_key = $5 AND workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4
ORDER BY seq LIMIT $6`
	spoolSelectLanes = `SELECT workspace_id, profile, scope, room_id FROM spool
GROUP BY workspace_id, profile, scope, room_id ORDER BY MIN(seq)`
	spoolSelectUsage = `SELECT workspace_id, profile, scope, COUNT(*), COALESCE(SUM(length(sealed)), 0) FROM spool
GROUP BY workspace_id, profile, scope ORDER BY workspace_id, profile, scope`
	spoolTakeSeq = `DELETE FROM spool WHERE seq = $1 RETURNING ` + spoolColumns
	// A move takes the entry out of the spool and reads it in one
	// statement; a mismatch found afterwards rolls the transaction back.
	spoolTakeSeqOfWS = `DELETE FROM spool WHERE seq = $1 AND workspace_id = $2 RETURNING ` + spoolColumns
	spoolSelectSeqWS = `SELECT workspace_id, profile, scope FROM spool WHERE seq = $1 AND workspace_id = $2`
	// spoolMoveProbe answers, for one entry, every question the move asks
	// before inserting: is the message queued, is it settled, is its room
	// retired for the peer, and which binding owns the room ('' if none).
	spoolMoveProbe = `SELECT
  EXISTS (SELECT 1 FROM queue WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4),
  EXISTS (SELECT 1 FROM settled WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4),
  EXISTS (SELECT 1 FROM retired_rooms WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $5),
  COALESCE((SELECT id FROM bindings WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $5), '')`
	// peerLockForMove locks a peer's row against binding changes and other
	// moves of the peer (FOR NO KEY UPDATE conflicts with FOR UPDATE and
	// with itself, not with the foreign keys' KEY SHARE), so the owner a
	// move reads and the count of the peer's queue rows hold until it
	// commits.
	peerLockForMove = `SELECT 1 FROM peers WHERE workspace_id = $1 AND profile = $2 AND scope = $3 FOR NO KEY UPDATE`
)

// SpoolAppend implements [store.Spool]: every entry is validated before
// the transaction; the batch is one statement in one transaction (one
// commit); of several entries of one batch for the same message and peer,
// only the first can be appended.
func (s *Store) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	type ident struct {
		ws             jam.WorkspaceID
		profile, scope string
		msg            jam.PlatformMessageID
	}
	var (
		idx                                []int32
		wss, profiles, scopes, rooms, msgs []string
		sealed                             [][]byte
		received, laneKeys                 []int64
		at                                 = map[ident]int{}
	)
	for i, e := range entries {
		e, err := e.Canonical()
		if err != nil {
			return store.SpoolAppendResult{}, fmt.Errorf("spool append: entry %d (%s): %w", i, e.MessageID, err)
		}
		id := ident{e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID}
		if _, dup := at[id]; dup {
			continue // a repeat of an earlier entry: reported as not appended
		}
		at[id] = i
		idx = append(idx, int32(i))
		wss = append(wss, string(e.WorkspaceID))
		profiles = append(profiles, e.Peer.Profile)
		scopes = append(scopes, e.Peer.Scope)
		rooms = append(rooms, string(e.Room))
		msgs = append(msgs, string(e.MessageID))
		sealed = append(sealed, e.Sealed)
		received = append(received, micros(e.ReceivedAt))
		laneKeys = append(laneKeys, spoolKey(string(e.WorkspaceID), e.Peer.Profile, e.Peer.Scope, string(e.Room)))
	}
	res := store.SpoolAppendResult{Appended: make([]bool, len(entries)), Seqs: make([]int64, len(entries))}
	if len(idx) == 0 {
		return res, nil
	}
	lanes := slices.Compact(slices.Sorted(slices.Values(laneKeys)))
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		clear(res.Appended)
		clear(res.Seqs)
		if _, err := tx.Exec(ctx, spoolLockLanes, lanes); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, spoolInsert, idx, wss, profiles, scopes, rooms, msgs, sealed, received, laneKeys)
		if err != nil {
			return err
		}
		var seq int64
		var id ident
		_, err = pgx.ForEachRow(rows, []any{&seq, &id.ws, &id.profile, &id.scope, &id.msg}, func() error {
			i, ok := at[id]
			if !ok {
				return fmt.Errorf("spool append inserted message %s, which was not in the batch", id.msg)
			}
			res.Appended[i], res.Seqs[i] = true, seq
			return nil
		})
		return err
	})
	if err != nil {
		return store.SpoolAppendResult{}, fmt.Errorf("spool append: %w", err)
	}
	return res, nil
}

// spoolKey is the 64-bit FNV-1a hash of the parts, each followed by a NUL
// byte: the SQLite dialect's lane key, so a row copied between dialects
// keeps its key. Equal keys are a hint, never a match: every lookup also
// compares the text columns.
func spoolKey(ws, profile, scope, id string) int64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, part := range [...]string{ws, profile, scope, id} {
		for i := 0; i < len(part); i++ {
			h ^= uint64(part[i])
			h *= prime
		}
		h *= prime // the NUL separator: h ^= 0 changes nothing
	}
	return int64(h)
}

// SpoolNext implements [store.Spool].
func (s *Store) SpoolNext(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, limit int) ([]store.SpoolEntry, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err != nil {
		return nil, fmt.Errorf("spool next %s %s: %w", key, room, err)
	}
	if limit < 1 {
		return nil, fmt.Errorf("spool next %s %s: %w: limit %d is not positive", key, room, jam.ErrInvalid, limit)
	}
	lane := spoolKey(string(ws), key.Profile, key.Scope, string(room))
	out, err := queryAll(ctx, s.pool, scanSpoolEntry, spoolSelectLane, ws, key.Profile, key.Scope, room, lane, limit)
	if err != nil {
		return nil, fmt.Errorf("spool next %s %s: %w", key, room, mapErr(err))
	}
	return out, nil
}

// SpoolLanes implements [store.Spool]: the lane whose oldest entry is
// oldest comes first.
func (s *Store) SpoolLanes(ctx context.Context) ([]store.Lane, error) {
	out, err := queryAll(ctx, s.pool, func(row scanner) (store.Lane, error) {
		var l store.Lane
		err := row.Scan(&l.WorkspaceID, &l.Peer.Profile, &l.Peer.Scope, &l.Room)
		return l, err
	}, spoolSelectLanes)
	if err != nil {
		return nil, fmt.Errorf("spool lanes: %w", mapErr(err))
	}
	return out, nil
}

// SpoolUsage implements [store.Spool]. Bytes count the sealed messages.
func (s *Store) SpoolUsage(ctx context.Context) ([]store.SpoolUsage, error) {
	out, err := queryAll(ctx, s.pool, func(row scanner) (store.SpoolUsage, error) {
		var u store.SpoolUsage
		err := row.Scan(&u.WorkspaceID, &u.Peer.Profile, &u.Peer.Scope, &u.Entries, &u.Bytes)
		return u, err
	}, spoolSelectUsage)
	if err != nil {
		return nil, fmt.Errorf("spool usage: %w", mapErr(err))
	}
	return out, nil
}

// SpoolMove implements [store.Spool] as a batch of one (SpoolMoveBatch);
// a missing entry is jam.ErrNotFound.
func (s *Store) SpoolMove(ctx context.Context, seq int64, row store.QueueRow) (store.QueueRow, error) {
	row, err := store.ValidateSpoolMove(seq, row)
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	row.Seq = seq
	out, err := s.spoolMoveAll(ctx, []store.QueueRow{row})
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	if out[0].Outcome == store.MoveMissing {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, jam.ErrNotFound)
	}
	return out[0].Row, nil
}

// SpoolMoveBatch implements [store.Spool]. Every row is validated before
// the transaction starts; an invalid one fails the batch with
// jam.ErrInvalid and moves nothing.
func (s *Store) SpoolMoveBatch(ctx context.Context, rows []store.QueueRow) ([]store.SpoolMoved, error) {
	valid := make([]store.QueueRow, len(rows))
	for i, r := range rows {
		v, err := store.ValidateSpoolMove(r.Seq, r)
		if err != nil {
			return nil, fmt.Errorf("spool move %d: %w", r.Seq, err)
		}
		valid[i] = v
	}
	out, err := s.spoolMoveAll(ctx, valid)
	if err != nil {
		return nil, fmt.Errorf("spool move: %w", err)
	}
	return out, nil
}

// spoolMoveAll moves validated rows in one READ COMMITTED transaction.
// It first locks the row of every peer the entries belong to
// (peerLockForMove, in key order), so no binding change interleaves
// between the owner a move reads and the row it inserts, and the count
// that bounds a peer's queue (Config.MaxQueuedPerPeer) is exact: moves of
// one peer through any handle run one after the other.
func (s *Store) spoolMoveAll(ctx context.Context, rows []store.QueueRow) ([]store.SpoolMoved, error) {
	out := make([]store.SpoolMoved, len(rows))
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		clear(out)
		// The peers of the entries, read from the spool (row.Peer may be
		// zero), locked in order.
		type peerOf struct {
			ws  jam.WorkspaceID
			key jam.PeerKey
		}
		var peers []peerOf
		for _, r := range rows {
			var p peerOf
			err := tx.QueryRow(ctx, spoolSelectSeqWS, r.Seq, r.WorkspaceID).Scan(&p.ws, &p.key.Profile, &p.key.Scope)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			peers = append(peers, p)
		}
		slices.SortFunc(peers, func(a, b peerOf) int {
			if c := compareStrings(string(a.ws), string(b.ws)); c != 0 {
				return c
			}
			if c := compareStrings(a.key.Profile, b.key.Profile); c != 0 {
				return c
			}
			return compareStrings(a.key.Scope, b.key.Scope)
		})
		peers = slices.Compact(peers)
		for _, p := range peers {
			if _, err := tx.Exec(ctx, peerLockForMove, p.ws, p.key.Profile, p.key.Scope); err != nil {
				return err
			}
		}
		for i, r := range rows {
			m, err := s.spoolMoveOne(ctx, tx, r.Seq, r)
			if err != nil {
				return fmt.Errorf("spool move %d: %w", r.Seq, err)
			}
			out[i] = m
		}
		return s.checkQueueCap(ctx, tx, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// spoolMoveOne moves one entry inside tx; see store.Spool.SpoolMove.
func (s *Store) spoolMoveOne(ctx context.Context, tx pgx.Tx, seq int64, row store.QueueRow) (store.SpoolMoved, error) {
	e, err := scanSpoolEntry(tx.QueryRow(ctx, spoolTakeSeqOfWS, seq, row.WorkspaceID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.SpoolMoved{Outcome: store.MoveMissing}, nil
	}
	if err != nil {
		return store.SpoolMoved{}, err
	}
	if err := store.ValidateSpoolMatch(e, row); err != nil {
		return store.SpoolMoved{}, err // the caller's rollback puts the entry back
	}
	moved := store.SpoolMoved{SpoolBytes: len(e.Sealed)}
	var queued, settled, retired bool
	var binding jam.BindingID
	if err := tx.QueryRow(ctx, spoolMoveProbe, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID, e.Room).Scan(&queued, &settled, &retired, &binding); err != nil {
		return store.SpoolMoved{}, err
	}
	switch {
	case queued:
		existing, err := scanQueueRow(tx.QueryRow(ctx, queueSelect, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID))
		if err != nil {
			return store.SpoolMoved{}, err
		}
		moved.Outcome, moved.Row = store.MoveAlreadyQueued, existing
		return moved, nil
	case settled:
		moved.Outcome = store.MoveSettled
		return moved, nil
	case retired:
		moved.Outcome = store.MoveRetired
		return moved, nil
	}
	out := store.QueueRow{
		Seq:             e.Seq,
		WorkspaceID:     e.WorkspaceID,
		Peer:            e.Peer,
		Room:            e.Room,
		MessageID:       e.MessageID,
		Binding:         binding,
		SenderID:        row.SenderID,
		AddressedToUser: row.AddressedToUser,
		Sealed:          row.Sealed,
		State:           store.QueueQueued,
		ReceivedAt:      e.ReceivedAt,
	}
	if _, err := tx.Exec(ctx, queueInsert, queueRowArgs(out)...); err != nil {
		return store.SpoolMoved{}, err
	}
	moved.Outcome, moved.Row = store.MoveQueued, out
	return moved, nil
}

// queueCountOfPeer counts a peer's queue rows, routed and unrouted,
// through the lane index's prefix.
const queueCountOfPeer = `SELECT COUNT(*) FROM queue WHERE workspace_id = $1 AND profile = $2 AND scope = $3`

// checkQueueCap counts, inside a move's transaction and under the peers'
// locks, the queue rows of every peer that the move queued rows for; a
// peer over the bound refuses the whole transaction with an error
// wrapping jam.ErrUnavailable, so its entries stay in the spool until the
// agent takes some.
func (s *Store) checkQueueCap(ctx context.Context, tx pgx.Tx, moved []store.SpoolMoved) error {
	type peerOf struct {
		ws  jam.WorkspaceID
		key jam.PeerKey
	}
	added := map[peerOf]int{}
	for _, m := range moved {
		if m.Outcome == store.MoveQueued {
			added[peerOf{m.Row.WorkspaceID, m.Row.Peer}]++
		}
	}
	for p, n := range added {
		var total int
		if err := tx.QueryRow(ctx, queueCountOfPeer, p.ws, p.key.Profile, p.key.Scope).Scan(&total); err != nil {
			return err
		}
		if total > s.maxQueued {
			return fmt.Errorf("%w: %s has %d messages queued, the most one agent's queue holds is %d; the next ones wait in the spool until it takes some",
				jam.ErrUnavailable, p.key, total-n, s.maxQueued)
		}
	}
	return nil
}

// SpoolDrop implements [store.Spool]: the entry is deleted and its
// message recorded as settled at at, in one transaction. A missing seq is
// jam.ErrNotFound.
func (s *Store) SpoolDrop(ctx context.Context, seq int64, at time.Time) error {
	if seq < 1 {
		return fmt.Errorf("spool drop %d: %w: seq is not positive", seq, jam.ErrInvalid)
	}
	if err := store.ValidateTime("time", at); err != nil {
		return fmt.Errorf("spool drop %d: %w", seq, err)
	}
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		e, err := scanSpoolEntry(tx.QueryRow(ctx, spoolTakeSeq, seq))
		if errors.Is(err, pgx.ErrNoRows) {
			return jam.ErrNotFound
		}
		if err != nil {
			return err
		}
		return insertSettled(ctx, tx, e.WorkspaceID, e.Peer, e.MessageID, at)
	})
	if err != nil {
		return fmt.Errorf("spool drop %d: %w", seq, err)
	}
	return nil
}

func scanSpoolEntry(row scanner) (store.SpoolEntry, error) {
	var e store.SpoolEntry
	var received int64
	err := row.Scan(&e.Seq, &e.WorkspaceID, &e.Peer.Profile, &e.Peer.Scope, &e.Room, &e.MessageID, &e.Sealed, &received)
	if err != nil {
		return store.SpoolEntry{}, err
	}
	if len(e.Sealed) == 0 {
		// The engine cannot even try to open it.
		return store.SpoolEntry{}, fmt.Errorf("%w: spool entry %d: sealed message is empty", store.ErrCorrupt, e.Seq)
	}
	e.ReceivedAt = fromMicros(received)
	return e, nil
}
