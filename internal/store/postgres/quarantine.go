package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Quarantine = (*Store)(nil)

// SQL of the quarantine table, and of the inspection of the spool and
// queue tables that finds rows to put there. PostgreSQL's columns are
// typed, so a row can only be invalid in its domain (an id that does not
// parse, an empty sealed message, a state jam does not know), never in
// its type as in SQLite. A spool entry is named by its seq, a queue row
// by its primary key; each inspection reads every column but the sealed
// content, of which only the length matters.
const (
	quarantineColumns = `id, workspace_id, source, seq, profile, scope, room_id, message_id, reason, row_json, sealed, quarantined_at`
	quarantineInsert  = `INSERT INTO quarantine (workspace_id, source, seq, profile, scope, room_id, message_id, reason, row_json, sealed, quarantined_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`
	quarantineSelect = `SELECT ` + quarantineColumns + ` FROM quarantine
WHERE workspace_id = $1 OR workspace_id = '' ORDER BY id LIMIT $2`

	inspectColumns = `seq, workspace_id, profile, scope, room_id, message_id, length(sealed), received_at`
	inspectSpool   = `SELECT ` + inspectColumns + `, '', '', false, 'queued', 0, NULL::bigint, NULL::bigint FROM spool`
	inspectQueue   = `SELECT ` + inspectColumns + `, binding_id, sender_id, addressed_to_user, state, attempts, claimed_at, delivered_at FROM queue`
	inspectOrder   = ` ORDER BY seq`
	spoolWhereKey  = ` WHERE seq = $1`
	queueWhereKey  = ` WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4`
)

// quarantineTable is a table records are quarantined from. Its name is
// only ever one of the constants below, never input.
type quarantineTable struct {
	name    string // the table, and the record's source
	inspect string
	where   string // the row's key, spoolWhereKey or queueWhereKey
}

var (
	spoolTable = quarantineTable{name: store.QuarantineFromSpool, inspect: inspectSpool, where: spoolWhereKey}
	queueTable = quarantineTable{name: store.QuarantineFromQueue, inspect: inspectQueue, where: queueWhereKey}
)

// QuarantineSpool implements [store.Quarantine].
func (s *Store) QuarantineSpool(ctx context.Context, seq int64, reason string, at time.Time) (store.QuarantinedRecord, error) {
	reason, err := store.ValidateQuarantine(reason, at)
	if err == nil && seq < 1 {
		err = fmt.Errorf("%w: seq %d is not positive", jam.ErrInvalid, seq)
	}
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("quarantine spool entry %d: %w", seq, err)
	}
	var rec store.QuarantinedRecord
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		rec, err = quarantineRow(ctx, tx, spoolTable, []any{seq}, reason, at)
		return err
	})
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("quarantine spool entry %d: %w", seq, err)
	}
	return rec, nil
}

// QuarantineQueue implements [store.Quarantine].
func (s *Store) QuarantineQueue(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, reason string, at time.Time) (store.QuarantinedRecord, error) {
	reason, err := store.ValidateQuarantine(reason, at)
	if err == nil {
		msg, err = store.ValidateMessageKey(ws, key, msg)
	}
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("quarantine queued message %s: %w", msg, err)
	}
	var rec store.QuarantinedRecord
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		rec, err = quarantineRow(ctx, tx, queueTable, []any{ws, key.Profile, key.Scope, msg}, reason, at)
		return err
	})
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("quarantine queued message %s: %w", msg, err)
	}
	return rec, nil
}

// QuarantineInvalid implements [store.Quarantine]. It inspects both
// tables outside a transaction; each row found is inspected again inside
// the transaction that moves it (read FOR UPDATE), so a row changed
// meanwhile is judged as it is now.
func (s *Store) QuarantineInvalid(ctx context.Context, at time.Time) ([]store.QuarantinedRecord, error) {
	if err := store.ValidateTime("time", at); err != nil {
		return nil, fmt.Errorf("quarantine invalid records: %w", err)
	}
	type found struct {
		table quarantineTable
		key   []any
	}
	var todo []found
	for _, t := range []quarantineTable{spoolTable, queueTable} {
		rows, err := queryAll(ctx, s.pool, scanInspected, t.inspect+inspectOrder)
		if err != nil {
			return nil, fmt.Errorf("quarantine invalid records: inspect %s: %w", t.name, mapErr(err))
		}
		for _, r := range rows {
			if judgeRow(r) != "" {
				todo = append(todo, found{t, r.key(t)})
			}
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	var out []store.QuarantinedRecord
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		out = out[:0]
		for _, f := range todo {
			in, err := scanInspected(tx.QueryRow(ctx, f.table.inspect+f.table.where+` FOR UPDATE`, f.key...))
			if errors.Is(err, pgx.ErrNoRows) {
				continue // gone since
			}
			if err != nil {
				return err
			}
			problem := judgeRow(in)
			if problem == "" {
				continue // mended since
			}
			rec, err := quarantineRow(ctx, tx, f.table, f.key, store.CutQuarantineReason("invalid columns: "+problem), at)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quarantine invalid records: %w", err)
	}
	return out, nil
}

// QuarantineList implements [store.Quarantine].
func (s *Store) QuarantineList(ctx context.Context, ws jam.WorkspaceID, limit int) ([]store.QuarantinedRecord, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("quarantine list: %w", err)
	}
	if limit < 0 {
		return nil, fmt.Errorf("quarantine list: %w: limit %d is negative", jam.ErrInvalid, limit)
	}
	var n *int64 // NULL: no limit
	if limit > 0 {
		l := int64(limit)
		n = &l
	}
	out, err := queryAll(ctx, s.pool, scanQuarantined, quarantineSelect, ws, n)
	if err != nil {
		return nil, fmt.Errorf("quarantine list: %w", mapErr(err))
	}
	return out, nil
}

// quarantineRow moves one row of t, named by key, to the quarantine
// inside tx: every column is read as stored, recorded (bytea in base64,
// as encoding/json writes []byte), and the row deleted. A missing row is
// jam.ErrNotFound.
func quarantineRow(ctx context.Context, tx pgx.Tx, t quarantineTable, key []any, reason string, at time.Time) (store.QuarantinedRecord, error) {
	rows, err := tx.Query(ctx, `DELETE FROM `+t.name+t.where+` RETURNING *`, key...)
	if err != nil {
		return store.QuarantinedRecord{}, err
	}
	byName := map[string]any{}
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return store.QuarantinedRecord{}, err
		}
		for i, f := range rows.FieldDescriptions() {
			byName[f.Name] = vals[i]
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.QuarantinedRecord{}, err
	}
	if n == 0 {
		return store.QuarantinedRecord{}, jam.ErrNotFound
	}
	rowJSON, err := json.Marshal(byName)
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("encode row: %w", err)
	}
	text := func(k string) string { v, _ := byName[k].(string); return v }
	rec := store.QuarantinedRecord{
		WorkspaceID:   jam.WorkspaceID(text("workspace_id")),
		Source:        t.name,
		Peer:          jam.PeerKey{Profile: text("profile"), Scope: text("scope")},
		Room:          jam.RoomID(text("room_id")),
		MessageID:     jam.PlatformMessageID(text("message_id")),
		Reason:        reason,
		Row:           rowJSON,
		QuarantinedAt: fromMicros(micros(at)),
	}
	rec.Seq, _ = byName["seq"].(int64)
	rec.Sealed, _ = byName["sealed"].([]byte)
	if _, err := jam.ParseID[jam.WorkspaceID](string(rec.WorkspaceID)); err != nil {
		rec.WorkspaceID = ""
	}
	sealed := rec.Sealed
	if sealed == nil {
		sealed = []byte{}
	}
	err = tx.QueryRow(ctx, quarantineInsert, rec.WorkspaceID, rec.Source, rec.Seq, rec.Peer.Profile, rec.Peer.Scope,
		rec.Room, rec.MessageID, rec.Reason, string(rowJSON), sealed, micros(at)).Scan(&rec.ID)
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("record: %w", err)
	}
	return rec, nil
}

// inspected is one row of an inspection.
type inspected struct {
	seq                           int64
	ws, profile, scope, room, msg string
	sealedLen, receivedAt         int64
	binding, sender               string
	addressed                     bool
	state                         string
	attempts                      int64
	claimedAt, deliveredAt        *int64
}

// key names the inspected row in t, as t.where takes it.
func (in inspected) key(t quarantineTable) []any {
	if t.name == store.QuarantineFromSpool {
		return []any{in.seq}
	}
	return []any{in.ws, in.profile, in.scope, in.msg}
}

func scanInspected(row scanner) (inspected, error) {
	var in inspected
	err := row.Scan(&in.seq, &in.ws, &in.profile, &in.scope, &in.room, &in.msg, &in.sealedLen, &in.receivedAt,
		&in.binding, &in.sender, &in.addressed, &in.state, &in.attempts, &in.claimedAt, &in.deliveredAt)
	return in, err
}

// judgeRow returns what makes an inspected row unreadable as a record,
// or "" if nothing does: the domain checks of the SQLite dialect's.
func judgeRow(in inspected) string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if in.seq < 1 {
		bad("seq %d is not a positive integer", in.seq)
	}
	if _, err := jam.ParseID[jam.WorkspaceID](in.ws); err != nil {
		bad("workspace_id: %v", err)
	}
	if err := (jam.PeerKey{Profile: in.profile, Scope: in.scope}).Validate(); err != nil {
		bad("peer: %v", err)
	}
	if _, err := jam.ParseUUID[jam.RoomID](in.room); err != nil {
		bad("room_id: %v", err)
	}
	if _, err := jam.ParseMessageID(in.msg); err != nil {
		bad("message_id: %v", err)
	}
	if in.sealedLen < 1 {
		bad("sealed is empty")
	}
	if in.receivedAt <= 0 {
		bad("received_at %d is not a positive integer", in.receivedAt)
	}
	if in.binding != "" {
		if _, err := jam.ParseID[jam.BindingID](in.binding); err != nil {
			bad("binding_id: %v", err)
		}
	}
	if in.sender != "" {
		if _, err := jam.ParseUUID[jam.IdentityID](in.sender); err != nil {
			bad("sender_id: %v", err)
		}
	}
	if in.state != store.QueueQueued && in.state != store.QueueClaimed && in.state != store.QueueDelivered {
		bad("state %q is unknown", in.state)
	}
	if in.attempts < 0 {
		bad("attempts %d is not a count", in.attempts)
	}
	for _, c := range []struct {
		name string
		v    *int64
	}{{"claimed_at", in.claimedAt}, {"delivered_at", in.deliveredAt}} {
		if c.v != nil && *c.v <= 0 {
			bad("%s %d is not a positive integer", c.name, *c.v)
		}
	}
	return strings.Join(problems, "; ")
}

func scanQuarantined(row scanner) (store.QuarantinedRecord, error) {
	var r store.QuarantinedRecord
	var at int64
	var rowJSON string
	err := row.Scan(&r.ID, &r.WorkspaceID, &r.Source, &r.Seq, &r.Peer.Profile, &r.Peer.Scope, &r.Room, &r.MessageID,
		&r.Reason, &rowJSON, &r.Sealed, &at)
	if err != nil {
		return store.QuarantinedRecord{}, err
	}
	r.Row, r.QuarantinedAt = []byte(rowJSON), fromMicros(at)
	return r, nil
}
