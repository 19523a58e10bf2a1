package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the events table.
const (
	eventColumns = `seq, workspace_id, kind, profile, scope, room_id, message_id, payload, created_at`
	// eventInsertHead and eventInsertRow build the statement that appends
	// a chunk of a batch: the row is repeated once per event (at most
	// eventInsertMax times). The store names each row's sequence itself
	// (eventSelectNext, in the same transaction on the one writer), because
	// a sealed payload is bound to its sequence; AUTOINCREMENT then moves
	// its high-water mark past them, so no sequence is ever handed out
	// twice.
	eventInsertHead = `INSERT INTO events (seq, workspace_id, kind, profile, scope, room_id, message_id, payload, created_at) VALUES `
	eventInsertRow  = `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// eventInsertMax bounds the events of one statement (9 parameters
	// each, far below SQLite's limit of 32766). It is a power of two.
	eventInsertMax = 256
	// eventSelectNext is the sequence after every one handed out: the
	// AUTOINCREMENT high-water mark, which survives pruning the newest
	// rows (SQLite-only: sqlite_sequence).
	eventSelectNext  = `SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), COALESCE((SELECT MAX(seq) FROM events), 0)) + 1`
	eventSelectAfter = `SELECT ` + eventColumns + ` FROM events WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	eventSelectLast  = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE workspace_id = ?`
	eventDeleteOld   = `DELETE FROM events WHERE created_at < ?`
	// Pruning by count keeps the newest events of each workspace, so a
	// busy workspace cannot push out a quiet one's history.
	eventWorkspaces = `SELECT DISTINCT workspace_id FROM events`
	// The subquery finds the workspace's newest event beyond the ones kept
	// (NULL, so nothing goes, when there are no more than that).
	eventDeleteBeyond = `DELETE FROM events WHERE workspace_id = ? AND seq <= (SELECT seq FROM events WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`
)

// emptyPayload is what an event without a payload stores.
const emptyPayload = store.EmptyEventPayload

// EventAppend implements [store.Events]. Every record is validated before
// the transaction starts. Like SpoolAppend, the batch goes in as few
// multi-row statements as its size allows, prepared once per power-of-two
// size and cached (eventInsertCache).
func (s *Store) EventAppend(ctx context.Context, events []store.EventRecord) ([]int64, error) {
	rows := make([]store.EventRecord, len(events))
	for i, e := range events {
		var err error
		if rows[i], err = e.Canonical(); err != nil {
			return nil, fmt.Errorf("event append: event %d (%s): %w", i, e.Kind, err)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var sizes []int
	var stmts []*sql.Stmt
	for left, size := len(rows), eventInsertMax; left > 0; left -= size {
		for size > left {
			size /= 2
		}
		// Prepared before the transaction: preparing on the pool inside it
		// would wait for the one writer connection the transaction holds.
		stmt, err := s.eventInserts.get(ctx, s.writer, size)
		if err != nil {
			return nil, fmt.Errorf("event append: %w", err)
		}
		sizes, stmts = append(sizes, size), append(stmts, stmt)
	}
	seqs := make([]int64, 0, len(rows))
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		seqs = seqs[:0]
		start := 0
		var next int64
		if err := tx.QueryRowContext(ctx, eventSelectNext).Scan(&next); err != nil {
			return err
		}
		for i, size := range sizes {
			if err := s.eventInsertChunk(ctx, tx.StmtContext(ctx, stmts[i]), rows[start:start+size], next); err != nil {
				return err
			}
			for range size {
				seqs = append(seqs, next)
				next++
			}
			start += size
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("event append: %w", err)
	}
	return seqs, nil
}

// eventInsertChunk inserts rows with stmt, numbered from first, each
// payload sealed to its workspace and sequence.
func (s *Store) eventInsertChunk(ctx context.Context, stmt *sql.Stmt, rows []store.EventRecord, first int64) error {
	args := make([]any, 0, 9*len(rows))
	for i, e := range rows {
		seq := first + int64(i)
		var payload any = emptyPayload // nothing to protect
		if string(e.Payload) != emptyPayload {
			payload = s.seal(string(e.Payload), eventAAD(e.WorkspaceID, seq))
		}
		args = append(args, seq, e.WorkspaceID, e.Kind, e.Peer.Profile, e.Peer.Scope, e.Room, e.MessageID, payload, e.CreatedAt.UnixMicro())
	}
	_, err := stmt.ExecContext(ctx, args...)
	return err
}

// EventList implements [store.Events].
func (s *Store) EventList(ctx context.Context, ws jam.WorkspaceID, after int64, limit int) ([]store.EventRecord, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("event list: %w", err)
	}
	if err := store.ValidateEventListLimit(limit); err != nil {
		return nil, fmt.Errorf("event list: %w", err)
	}
	out, err := queryAll(ctx, s.reader, s.scanEvent, eventSelectAfter, ws, after, limit)
	if err != nil {
		return nil, fmt.Errorf("event list: %w", err)
	}
	return out, nil
}

// EventLast implements [store.Events].
func (s *Store) EventLast(ctx context.Context, ws jam.WorkspaceID) (int64, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return 0, fmt.Errorf("event last: %w", err)
	}
	var seq int64
	if err := s.reader.QueryRowContext(ctx, eventSelectLast, ws).Scan(&seq); err != nil {
		return 0, fmt.Errorf("event last: %w", err)
	}
	return seq, nil
}

// EventPrune implements [store.Events]: every delete shares one
// transaction, and keepNewest counts per workspace.
func (s *Store) EventPrune(ctx context.Context, keepNewest int, before time.Time) (int, error) {
	if err := store.ValidateEventPrune(keepNewest, before); err != nil {
		return 0, fmt.Errorf("event prune: %w", err)
	}
	var n int64
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		n = 0
		res, err := tx.ExecContext(ctx, eventDeleteOld, before.UnixMicro())
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		wss, err := queryAll(ctx, tx, func(r scanner) (ws jam.WorkspaceID, err error) { return ws, r.Scan(&ws) }, eventWorkspaces)
		if err != nil {
			return err
		}
		for _, ws := range wss {
			res, err := tx.ExecContext(ctx, eventDeleteBeyond, ws, ws, keepNewest)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("event prune: %w", err)
	}
	return int(n), nil
}

func (s *Store) scanEvent(r scanner) (store.EventRecord, error) {
	var e store.EventRecord
	var payload any
	var at int64
	if err := r.Scan(&e.Seq, &e.WorkspaceID, &e.Kind, &e.Peer.Profile, &e.Peer.Scope, &e.Room, &e.MessageID, &payload, &at); err != nil {
		return e, err
	}
	text, err := s.open(payload, eventAAD(e.WorkspaceID, e.Seq))
	if err != nil {
		return e, fmt.Errorf("event %d: %w", e.Seq, err)
	}
	e.Payload = json.RawMessage(text)
	e.CreatedAt = fromMicros(at)
	return e, nil
}

// eventInsertCache holds the insert statement prepared on the writer for
// each power-of-two row count, for the reason spoolInsertCache gives: a
// multi-row statement costs as much to parse as several rows to insert.
type eventInsertCache struct {
	mu    sync.Mutex
	stmts map[int]*sql.Stmt // guarded by mu
}

// get returns the statement for n rows, preparing it on first use.
func (c *eventInsertCache) get(ctx context.Context, db *sql.DB, n int) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[n]; ok {
		return st, nil
	}
	var q strings.Builder
	q.Grow(len(eventInsertHead) + n*(len(eventInsertRow)+2))
	q.WriteString(eventInsertHead)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(eventInsertRow)
	}
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
func (c *eventInsertCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for n, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, n)
	}
	return first
}

var _ store.Events = (*Store)(nil)
