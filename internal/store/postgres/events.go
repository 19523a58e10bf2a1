package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Events = (*Store)(nil)

// SQL of the events table.
const (
	eventColumns = `seq, workspace_id, kind, profile, scope, room_id, message_id, payload, created_at`
	// eventLockWorkspaces serializes the appends of each workspace of a
	// batch (a transaction-level advisory lock per workspace, taken in
	// order so two appends never deadlock), before any sequence is drawn.
	// Sequences come from the identity column's sequence, which hands out
	// a value at nextval and not at commit: without the lock, an append
	// holding 7 could commit after one holding 8, and a client that read
	// 8 and resumed with ?after=8 would never see 7. Under the lock a
	// workspace's sequences become visible in the order they were drawn;
	// a rolled-back append leaves numbers unused, never ones filled in
	// later. Appends of different workspaces do not wait for each other.
	eventLockWorkspaces = `SELECT pg_advisory_xact_lock(hashtextextended('jam.events/' || w, 0)) FROM unnest($1::text[]) AS w ORDER BY w`
	// eventNextSeqs draws $1 sequences: the store names each row's
	// sequence itself, because a sealed payload is bound to it.
	eventNextSeqs = `SELECT nextval(pg_get_serial_sequence('events', 'seq')) FROM generate_series(1, $1)`
	// eventInsert writes a whole batch in one statement, the columns
	// passed as arrays, with the sequences drawn above.
	eventInsert = `INSERT INTO events (` + eventColumns + `) OVERRIDING SYSTEM VALUE
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bytea[], $9::bigint[])`
	eventSelectAfter = `SELECT ` + eventColumns + ` FROM events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	eventSelectLast  = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE workspace_id = $1`
	eventDeleteOld   = `DELETE FROM events WHERE created_at < $1`
	// Pruning by count keeps the newest events of each workspace, so a
	// busy workspace cannot push out a quiet one's history.
	eventWorkspaces   = `SELECT DISTINCT workspace_id FROM events`
	eventDeleteBeyond = `DELETE FROM events WHERE workspace_id = $1 AND seq <= (SELECT seq FROM events WHERE workspace_id = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)`
)

// EventAppend implements [store.Events]: every record is validated
// before the transaction; the batch is one READ COMMITTED transaction of
// four statements (lock, draw, insert, notify) whatever its size.
func (s *Store) EventAppend(ctx context.Context, events []store.EventRecord) ([]int64, error) {
	rows := make([]store.EventRecord, len(events))
	wsSet := map[string]bool{}
	for i, e := range events {
		var err error
		if rows[i], err = e.Canonical(); err != nil {
			return nil, fmt.Errorf("event append: event %d (%s): %w", i, e.Kind, err)
		}
		wsSet[string(rows[i].WorkspaceID)] = true
	}
	if len(rows) == 0 {
		return nil, nil
	}
	wss := make([]string, 0, len(wsSet))
	for ws := range wsSet {
		wss = append(wss, ws)
	}
	slices.Sort(wss)
	var seqs []int64
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, eventLockWorkspaces, wss); err != nil {
			return err
		}
		r, err := tx.Query(ctx, eventNextSeqs, len(rows))
		if err != nil {
			return err
		}
		seqs, err = pgx.CollectRows(r, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		slices.Sort(seqs)
		n := len(rows)
		var (
			wsCol, kinds, profiles, scopes, rooms, msgs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			payloads                                    = make([][]byte, n)
			created                                     = make([]int64, n)
		)
		for i, e := range rows {
			wsCol[i], kinds[i], profiles[i], scopes[i] = string(e.WorkspaceID), e.Kind, e.Peer.Profile, e.Peer.Scope
			rooms[i], msgs[i], created[i] = string(e.Room), string(e.MessageID), micros(e.CreatedAt)
			payloads[i] = s.eventPayload(e, seqs[i])
		}
		if _, err := tx.Exec(ctx, eventInsert, seqs, wsCol, kinds, profiles, scopes, rooms, msgs, payloads, created); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, eventsNotify, wss) // delivered at commit; see listen.go
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("event append: %w", err)
	}
	return seqs, nil
}

// eventPayload is the stored form of e's payload at seq: sealed to its
// workspace and sequence, or the empty object as it is (nothing to
// protect; a sealed value never equals it, since it starts with its
// format byte).
func (s *Store) eventPayload(e store.EventRecord, seq int64) []byte {
	if string(e.Payload) == store.EmptyEventPayload {
		return []byte(store.EmptyEventPayload)
	}
	return s.seal(string(e.Payload), eventAAD(e.WorkspaceID, seq))
}

// EventList implements [store.Events].
func (s *Store) EventList(ctx context.Context, ws jam.WorkspaceID, after int64, limit int) ([]store.EventRecord, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("event list: %w", err)
	}
	if limit < 1 || limit > store.MaxEventListLimit {
		return nil, fmt.Errorf("event list: %w: limit %d is outside 1 to %d", jam.ErrInvalid, limit, store.MaxEventListLimit)
	}
	out, err := queryAll(ctx, s.pool, s.scanEvent, eventSelectAfter, ws, after, limit)
	if err != nil {
		return nil, fmt.Errorf("event list: %w", mapErr(err))
	}
	return out, nil
}

// EventLast implements [store.Events].
func (s *Store) EventLast(ctx context.Context, ws jam.WorkspaceID) (int64, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return 0, fmt.Errorf("event last: %w", err)
	}
	var seq int64
	if err := s.pool.QueryRow(ctx, eventSelectLast, ws).Scan(&seq); err != nil {
		return 0, fmt.Errorf("event last: %w", mapErr(err))
	}
	return seq, nil
}

// EventPrune implements [store.Events]: every delete shares one
// transaction, and keepNewest counts per workspace. Pruning never lowers
// the identity sequence, so no sequence is handed out twice.
func (s *Store) EventPrune(ctx context.Context, keepNewest int, before time.Time) (int, error) {
	if keepNewest < 1 {
		return 0, fmt.Errorf("event prune: %w: keep %d must be positive", jam.ErrInvalid, keepNewest)
	}
	if before.IsZero() {
		return 0, fmt.Errorf("event prune: %w: zero time", jam.ErrInvalid)
	}
	var n int64
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var err error
		if n, err = rowsAffected(ctx, tx, eventDeleteOld, micros(before)); err != nil {
			return err
		}
		wss, err := queryAll(ctx, tx, func(r scanner) (ws jam.WorkspaceID, err error) { return ws, r.Scan(&ws) }, eventWorkspaces)
		if err != nil {
			return err
		}
		for _, ws := range wss {
			k, err := rowsAffected(ctx, tx, eventDeleteBeyond, ws, keepNewest)
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
	var payload []byte
	var at int64
	if err := r.Scan(&e.Seq, &e.WorkspaceID, &e.Kind, &e.Peer.Profile, &e.Peer.Scope, &e.Room, &e.MessageID, &payload, &at); err != nil {
		return e, err
	}
	text := store.EmptyEventPayload
	if string(payload) != store.EmptyEventPayload {
		var err error
		if text, err = s.open(payload, eventAAD(e.WorkspaceID, e.Seq)); err != nil {
			return e, fmt.Errorf("event %d: %w", e.Seq, err)
		}
	}
	e.Payload = json.RawMessage(text)
	e.CreatedAt = fromMicros(at)
	return e, nil
}
