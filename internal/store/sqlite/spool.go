package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the spool table.
const (
	spoolColumns = `seq, workspace_id, profile, scope, room_id, message_id, sealed, received_at`
	// spoolInsertHead and spoolInsertTail enclose the statement that
	// appends a batch of entries; spoolInsertRow is repeated once per entry
	// between them (at most spoolInsertMax times). An entry is skipped if its
	// message is already queued or settled for its peer (the NOT EXISTS
	// probes, each a primary-key lookup), or already spooled — which
	// includes an earlier duplicate in the same batch, since the rows are
	// inserted in order (ON CONFLICT on the unique key). RETURNING names
	// the rows that went in; its order is unspecified, so rows are matched
	// back to entries by key. One statement for the batch keeps the
	// per-entry cost to the B-tree work alone.
	spoolInsertHead = `WITH batch (n, workspace_id, profile, scope, room_id, message_id, sealed, received_at) AS (VALUES `
	spoolInsertRow  = `(?, ?, ?, ?, ?, ?, ?, ?)`
	spoolInsertTail = `)
INSERT INTO spool (workspace_id, profile, scope, room_id, message_id, sealed, received_at)
SELECT b.workspace_id, b.profile, b.scope, b.room_id, b.message_id, b.sealed, b.received_at FROM batch b
WHERE NOT EXISTS (SELECT 1 FROM queue q WHERE q.workspace_id = b.workspace_id AND q.profile = b.profile
                  AND q.scope = b.scope AND q.message_id = b.message_id)
  AND NOT EXISTS (SELECT 1 FROM settled s WHERE s.workspace_id = b.workspace_id AND s.profile = b.profile
                  AND s.scope = b.scope AND s.message_id = b.message_id)
ORDER BY b.n
ON CONFLICT (workspace_id, profile, scope, message_id) DO NOTHING
RETURNING seq, workspace_id, profile, scope, message_id`
	// spoolInsertMax bounds the entries of one statement (8 parameters
	// each, far below SQLite's limit of 32766). It is a power of two.
	spoolInsertMax  = 256
	spoolSelectLane = `SELECT ` + spoolColumns + ` FROM spool
WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ? ORDER BY seq LIMIT ?`
	spoolSelectLanes = `SELECT workspace_id, profile, scope, room_id FROM spool
GROUP BY workspace_id, profile, scope, room_id ORDER BY MIN(seq)`
	// length() of a BLOB is its size in bytes in SQLite, and length() of a
	// bytea is too in PostgreSQL.
	spoolSelectUsage = `SELECT workspace_id, profile, scope, COUNT(*), COALESCE(SUM(length(sealed)), 0) FROM spool
GROUP BY workspace_id, profile, scope ORDER BY workspace_id, profile, scope`
	spoolSelectSeq     = `SELECT ` + spoolColumns + ` FROM spool WHERE seq = ?`
	spoolSelectSeqOfWS = `SELECT ` + spoolColumns + ` FROM spool WHERE seq = ? AND workspace_id = ?`
	spoolDeleteSeq     = `DELETE FROM spool WHERE seq = ?`
	// A move takes the entry out of the spool and reads it in one
	// statement; a mismatch found afterwards rolls the transaction back.
	spoolTakeSeqOfWS = `DELETE FROM spool WHERE seq = ? AND workspace_id = ? RETURNING ` + spoolColumns
	// spoolMoveProbe answers, for one entry, every question the move asks
	// before inserting: is the message queued, is it settled, is its room
	// retired for the peer, and which binding owns the room ('' if none).
	spoolMoveProbe = `SELECT
  EXISTS (SELECT 1 FROM queue WHERE workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND message_id = ?4),
  EXISTS (SELECT 1 FROM settled WHERE workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND message_id = ?4),
  EXISTS (SELECT 1 FROM retired_rooms WHERE workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND room_id = ?5),
  COALESCE((SELECT id FROM bindings WHERE workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND room_id = ?5), '')`
)

// SpoolAppend implements [store.Messaging]. Every entry is validated before
// the transaction starts, so an invalid entry fails the batch with
// jam.ErrInvalid and writes nothing. Seq, if set, is ignored.
func (s *Store) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	rows := make([]store.SpoolEntry, len(entries))
	for i, e := range entries {
		var err error
		if rows[i], err = validateSpoolEntry(e); err != nil {
			return store.SpoolAppendResult{}, fmt.Errorf("spool append: entry %d (%s): %w", i, e.MessageID, err)
		}
	}
	res := store.SpoolAppendResult{Appended: make([]bool, len(rows)), Seqs: make([]int64, len(rows))}
	if len(rows) == 0 {
		return res, nil
	}
	// Chunks of power-of-two sizes, largest first, so that at most
	// log2(spoolInsertMax)+1 statements are ever prepared and each is
	// parsed once (see spoolInsertCache). They are prepared before the
	// transaction: preparing on the pool inside it would wait for the one
	// writer connection the transaction holds.
	var sizes []int
	var stmts []*sql.Stmt
	for left, size := len(rows), spoolInsertMax; left > 0; left -= size {
		for size > left {
			size /= 2
		}
		stmt, err := s.spoolInserts.get(ctx, s.writer, size)
		if err != nil {
			return store.SpoolAppendResult{}, fmt.Errorf("spool append: %w", err)
		}
		sizes, stmts = append(sizes, size), append(stmts, stmt)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		start := 0
		for i, size := range sizes {
			stmt := tx.StmtContext(ctx, stmts[i])
			if err := spoolInsertChunk(ctx, stmt, rows[start:start+size], res.Appended[start:], res.Seqs[start:]); err != nil {
				return err
			}
			start += size
		}
		return nil
	})
	if err != nil {
		return store.SpoolAppendResult{}, fmt.Errorf("spool append: %w", err)
	}
	return res, nil
}

// spoolKey identifies a message for deduplication.
type spoolKey struct {
	ws      jam.WorkspaceID
	profile string
	scope   string
	msg     jam.PlatformMessageID
}

// spoolInsertCache holds the batch insert statement prepared on the writer
// for each power-of-two row count: parsing a statement of dozens of rows
// costs as much as inserting several of them (measured ~0.3 ms per group
// commit), and the writer runs a few per commit.
type spoolInsertCache struct {
	mu    sync.Mutex
	stmts map[int]*sql.Stmt // guarded by mu
}

// get returns the statement for n rows, preparing it on first use.
func (c *spoolInsertCache) get(ctx context.Context, db *sql.DB, n int) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[n]; ok {
		return st, nil
	}
	var q strings.Builder
	q.Grow(len(spoolInsertHead) + n*(len(spoolInsertRow)+2) + len(spoolInsertTail))
	q.WriteString(spoolInsertHead)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(spoolInsertRow)
	}
	q.WriteString(spoolInsertTail)
	st, err := db.PrepareContext(ctx, q.String())
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = map[int]*sql.Stmt{}
	}
	c.stmts[n] = st
	return st, nil
}

// close closes every cached statement.
func (c *spoolInsertCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for n, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, n)
	}
	return errors.Join(errs...)
}

// spoolInsertChunk appends chunk with stmt, the batch insert for
// len(chunk) rows, and records which entries went in.
func spoolInsertChunk(ctx context.Context, stmt *sql.Stmt, chunk []store.SpoolEntry, appended []bool, seqs []int64) error {
	args := make([]any, 0, 8*len(chunk))
	pending := make(map[spoolKey][]int, len(chunk))
	for i, e := range chunk {
		args = append(args, i, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.Room, e.MessageID, e.Sealed, e.ReceivedAt.UnixMicro())
		k := spoolKey{e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID}
		pending[k] = append(pending[k], i)
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var k spoolKey
		if err := rows.Scan(&seq, &k.ws, &k.profile, &k.scope, &k.msg); err != nil {
			return err
		}
		// The first of several equal entries is the one inserted.
		idx := pending[k]
		if len(idx) == 0 {
			return fmt.Errorf("spool append returned message %s that was not in the batch", k.msg)
		}
		appended[idx[0]], seqs[idx[0]] = true, seq
		pending[k] = idx[1:]
	}
	return rows.Err()
}

// validateSpoolEntry checks e and returns it with its UUIDs canonical.
func validateSpoolEntry(e store.SpoolEntry) (store.SpoolEntry, error) {
	if err := validateScope(e.WorkspaceID, e.Peer); err != nil {
		return e, err
	}
	var err error
	if e.Room, err = parseUUID(e.Room); err != nil {
		return e, err
	}
	if e.MessageID, err = parseMessageID(e.MessageID); err != nil {
		return e, err
	}
	if err := validateSealed("sealed message", e.Sealed); err != nil {
		return e, err
	}
	return e, validateTime("received at", e.ReceivedAt)
}

// SpoolNext implements [store.Messaging].
func (s *Store) SpoolNext(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, limit int) ([]store.SpoolEntry, error) {
	room, err := validateLane(ws, key, room)
	if err != nil {
		return nil, fmt.Errorf("spool next %s %s: %w", key, room, err)
	}
	if limit < 1 {
		return nil, fmt.Errorf("spool next %s %s: %w: limit %d is not positive", key, room, jam.ErrInvalid, limit)
	}
	out, err := queryAll(ctx, s.reader, scanSpoolEntry, spoolSelectLane, ws, key.Profile, key.Scope, room, limit)
	if err != nil {
		return nil, fmt.Errorf("spool next %s %s: %w", key, room, err)
	}
	return out, nil
}

// validateLane checks a (workspace, peer, room) and returns the room
// canonical.
func validateLane(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (jam.RoomID, error) {
	if err := validateScope(ws, key); err != nil {
		return room, err
	}
	return parseUUID(room)
}

// SpoolLanes implements [store.Messaging]: the lane whose oldest entry is
// oldest comes first.
func (s *Store) SpoolLanes(ctx context.Context) ([]store.Lane, error) {
	out, err := queryAll(ctx, s.reader, func(row scanner) (store.Lane, error) {
		var l store.Lane
		err := row.Scan(&l.WorkspaceID, &l.Peer.Profile, &l.Peer.Scope, &l.Room)
		return l, err
	}, spoolSelectLanes)
	if err != nil {
		return nil, fmt.Errorf("spool lanes: %w", err)
	}
	return out, nil
}

// SpoolUsage implements [store.Messaging]. Bytes count the sealed messages.
func (s *Store) SpoolUsage(ctx context.Context) ([]store.SpoolUsage, error) {
	out, err := queryAll(ctx, s.reader, func(row scanner) (store.SpoolUsage, error) {
		var u store.SpoolUsage
		err := row.Scan(&u.WorkspaceID, &u.Peer.Profile, &u.Peer.Scope, &u.Entries, &u.Bytes)
		return u, err
	}, spoolSelectUsage)
	if err != nil {
		return nil, fmt.Errorf("spool usage: %w", err)
	}
	return out, nil
}

// SpoolMove implements [store.Messaging]. In one transaction it reads the
// entry (seq in row.WorkspaceID; jam.ErrNotFound if it is gone, e.g.
// already moved), deletes it, reads the binding that owns (peer, room)
// and inserts the queue row there, or in the unrouted bucket ("") if no
// binding owns the room. row.Binding and row.Seq are ignored.
//
// The identity and arrival of the row (Seq, Peer, Room, MessageID,
// ReceivedAt) come from the spool entry; row's Peer, Room and MessageID
// may be left zero, and must match the entry when set (jam.ErrInvalid).
// The row supplies SenderID (optional), AddressedToUser and Sealed; it
// starts queued, with no attempts.
//
// If the message is already queued for the peer, the entry is deleted and
// the existing row returned unchanged (its Seq differs from seq); if it is
// already settled, or its room is retired for the peer, the entry is
// deleted and a zero QueueRow returned.
func (s *Store) SpoolMove(ctx context.Context, seq int64, row store.QueueRow) (store.QueueRow, error) {
	row, err := validateSpoolMove(seq, row)
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	if err := s.stmts.prepare(ctx, s.writer, spoolMoveQueries...); err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	var out store.SpoolMoved
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		out, err = s.spoolMoveOne(ctx, tx, seq, row)
		if err == nil && out.Outcome == store.MoveMissing {
			return jam.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	return out.Row, nil
}

// SpoolMoveBatch implements [store.Messaging]. Every row is validated
// before the transaction starts; an invalid one fails the batch with
// jam.ErrInvalid and moves nothing.
func (s *Store) SpoolMoveBatch(ctx context.Context, rows []store.QueueRow) ([]store.SpoolMoved, error) {
	valid := make([]store.QueueRow, len(rows))
	for i, r := range rows {
		v, err := validateSpoolMove(r.Seq, r)
		if err != nil {
			return nil, fmt.Errorf("spool move %d: %w", r.Seq, err)
		}
		valid[i] = v
	}
	if err := s.stmts.prepare(ctx, s.writer, spoolMoveQueries...); err != nil {
		return nil, fmt.Errorf("spool move: %w", err)
	}
	out := make([]store.SpoolMoved, len(rows))
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		for i, r := range valid {
			m, err := s.spoolMoveOne(ctx, tx, r.Seq, r)
			if err != nil {
				return fmt.Errorf("spool move %d: %w", r.Seq, err)
			}
			out[i] = m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// spoolMoveQueries are the statements spoolMoveOne runs prepared.
var spoolMoveQueries = []string{spoolTakeSeqOfWS, spoolMoveProbe, queueInsert}

// spoolMoveOne moves one entry inside tx; see SpoolMove. It runs three
// prepared statements per entry: take the entry, probe, insert.
func (s *Store) spoolMoveOne(ctx context.Context, tx *sql.Tx, seq int64, row store.QueueRow) (store.SpoolMoved, error) {
	take, err := s.stmts.inTx(ctx, tx, spoolTakeSeqOfWS)
	if err != nil {
		return store.SpoolMoved{}, err
	}
	e, err := scanSpoolEntry(take.QueryRowContext(ctx, seq, row.WorkspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.SpoolMoved{Outcome: store.MoveMissing}, nil
	}
	if err != nil {
		return store.SpoolMoved{}, err
	}
	if err := matchSpoolEntry(e, row); err != nil {
		return store.SpoolMoved{}, err // the caller's rollback puts the entry back
	}
	moved := store.SpoolMoved{SpoolBytes: len(e.Sealed)}
	probe, err := s.stmts.inTx(ctx, tx, spoolMoveProbe)
	if err != nil {
		return store.SpoolMoved{}, err
	}
	var queued, settled, retired bool
	var binding jam.BindingID
	if err := probe.QueryRowContext(ctx, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID, e.Room).Scan(&queued, &settled, &retired, &binding); err != nil {
		return store.SpoolMoved{}, err
	}
	switch {
	case queued:
		existing, err := scanQueueRow(tx.QueryRowContext(ctx, queueSelect, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID))
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
	insert, err := s.stmts.inTx(ctx, tx, queueInsert)
	if err != nil {
		return store.SpoolMoved{}, err
	}
	if _, err := insert.ExecContext(ctx, queueRowArgs(out)...); err != nil {
		return store.SpoolMoved{}, err
	}
	moved.Outcome, moved.Row = store.MoveQueued, out
	return moved, nil
}

// validateSpoolMove checks the inputs of SpoolMove and returns row with
// its UUIDs canonical.
func validateSpoolMove(seq int64, row store.QueueRow) (store.QueueRow, error) {
	if seq < 1 {
		return row, fmt.Errorf("%w: seq %d is not positive", jam.ErrInvalid, seq)
	}
	if err := validateWorkspaceID(row.WorkspaceID); err != nil {
		return row, err
	}
	if !row.Peer.IsZero() {
		if err := row.Peer.Validate(); err != nil {
			return row, err
		}
	}
	var err error
	if row.Room != "" {
		if row.Room, err = parseUUID(row.Room); err != nil {
			return row, err
		}
	}
	if row.MessageID != "" {
		if row.MessageID, err = parseMessageID(row.MessageID); err != nil {
			return row, err
		}
	}
	if row.SenderID != "" {
		if row.SenderID, err = parseUUID(row.SenderID); err != nil {
			return row, err
		}
	}
	if err := validateSealed("sealed message", row.Sealed); err != nil {
		return row, err
	}
	if row.State != "" && row.State != store.QueueQueued {
		return row, fmt.Errorf("%w: a moved row starts %q, not %q", jam.ErrInvalid, store.QueueQueued, row.State)
	}
	return row, nil
}

// matchSpoolEntry checks that the set identity fields of row describe e.
func matchSpoolEntry(e store.SpoolEntry, row store.QueueRow) error {
	switch {
	case !row.Peer.IsZero() && row.Peer != e.Peer:
		return fmt.Errorf("%w: row is for peer %s, entry %d for %s", jam.ErrInvalid, row.Peer, e.Seq, e.Peer)
	case row.Room != "" && row.Room != e.Room:
		return fmt.Errorf("%w: row is for room %s, entry %d for %s", jam.ErrInvalid, row.Room, e.Seq, e.Room)
	case row.MessageID != "" && row.MessageID != e.MessageID:
		return fmt.Errorf("%w: row is message %s, entry %d is %s", jam.ErrInvalid, row.MessageID, e.Seq, e.MessageID)
	}
	return nil
}

// SpoolDrop implements [store.Messaging]: the entry is deleted and its
// message recorded as settled at at, in one transaction. A missing seq is
// jam.ErrNotFound.
func (s *Store) SpoolDrop(ctx context.Context, seq int64, at time.Time) error {
	if seq < 1 {
		return fmt.Errorf("spool drop %d: %w: seq is not positive", seq, jam.ErrInvalid)
	}
	if err := validateTime("time", at); err != nil {
		return fmt.Errorf("spool drop %d: %w", seq, err)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		e, err := scanSpoolEntry(tx.QueryRowContext(ctx, spoolSelectSeq, seq))
		if errors.Is(err, sql.ErrNoRows) {
			return jam.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, spoolDeleteSeq, seq); err != nil {
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
	e.ReceivedAt = fromMicros(received)
	return e, nil
}
