package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the quarantine table, and of the inspection of the spool and
// queue tables that finds rows to put there. A row is moved by its rowid
// (a spool entry's rowid is its seq), so that a row whose identity
// columns are garbage can still be named. The inspections read every
// column but the sealed content, of which only the type and length matter.
const (
	quarantineColumns = `id, workspace_id, source, seq, profile, scope, room_id, message_id, reason, row_json, sealed, quarantined_at`
	quarantineInsert  = `INSERT INTO quarantine (workspace_id, source, seq, profile, scope, room_id, message_id, reason, row_json, sealed, quarantined_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	quarantineSelect = `SELECT ` + quarantineColumns + ` FROM quarantine
WHERE workspace_id = ?1 OR workspace_id = '' ORDER BY id LIMIT ?2`

	inspectSpool = `SELECT seq, seq, workspace_id, profile, scope, room_id, message_id,
typeof(sealed), length(sealed), received_at FROM spool`
	inspectQueue = `SELECT rowid, seq, workspace_id, profile, scope, room_id, message_id,
typeof(sealed), length(sealed), received_at,
binding_id, sender_id, addressed_to_user, state, attempts, claimed_at, delivered_at FROM queue`
	inspectOrder = ` ORDER BY rowid`
	inspectRowid = ` WHERE rowid = ?`

	queueSelectRowid = `SELECT rowid FROM queue WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
)

// quarantineTable is a table records are quarantined from. Its name is
// only ever one of the constants below, never input.
type quarantineTable struct {
	name    string // the table, and the record's source
	inspect string // inspectSpool or inspectQueue
}

var (
	spoolTable = quarantineTable{name: store.QuarantineFromSpool, inspect: inspectSpool}
	queueTable = quarantineTable{name: store.QuarantineFromQueue, inspect: inspectQueue}
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
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		rec, err = quarantineRow(ctx, tx, spoolTable, seq, reason, at)
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
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		var rowid int64
		err := tx.QueryRowContext(ctx, queueSelectRowid, ws, key.Profile, key.Scope, msg).Scan(&rowid)
		if errors.Is(err, sql.ErrNoRows) {
			return jam.ErrNotFound
		}
		if err != nil {
			return err
		}
		rec, err = quarantineRow(ctx, tx, queueTable, rowid, reason, at)
		return err
	})
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("quarantine queued message %s: %w", msg, err)
	}
	return rec, nil
}

// QuarantineInvalid implements [store.Quarantine]. It inspects both tables
// on the read pool, so the writer is held only when something is found;
// each row found is inspected again inside the writer's transaction
// before it moves, so a row changed meanwhile is judged as it is now.
func (s *Store) QuarantineInvalid(ctx context.Context, at time.Time) ([]store.QuarantinedRecord, error) {
	if err := store.ValidateTime("time", at); err != nil {
		return nil, fmt.Errorf("quarantine invalid records: %w", err)
	}
	type found struct {
		table quarantineTable
		rowid int64
	}
	var todo []found
	for _, t := range []quarantineTable{spoolTable, queueTable} {
		bad, err := queryAll(ctx, s.reader, func(row scanner) (inspected, error) { return inspectRow(t, row) }, t.inspect+inspectOrder)
		if err != nil {
			return nil, fmt.Errorf("quarantine invalid records: inspect %s: %w", t.name, err)
		}
		for _, b := range bad {
			if b.problem != "" {
				todo = append(todo, found{t, b.rowid})
			}
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	var out []store.QuarantinedRecord
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		out = out[:0]
		for _, f := range todo {
			in, err := inspectRow(f.table, tx.QueryRowContext(ctx, f.table.inspect+inspectRowid, f.rowid))
			if errors.Is(err, sql.ErrNoRows) || (err == nil && in.problem == "") {
				continue // gone or mended since
			}
			if err != nil {
				return err
			}
			rec, err := quarantineRow(ctx, tx, f.table, f.rowid, store.CutQuarantineReason("invalid columns: "+in.problem), at)
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
	n := int64(-1) // SQLite-only: no limit
	if limit > 0 {
		n = int64(limit)
	}
	out, err := queryAll(ctx, s.reader, scanQuarantined, quarantineSelect, ws, n)
	if err != nil {
		return nil, fmt.Errorf("quarantine list: %w", err)
	}
	return out, nil
}

// quarantineRow moves one row of t, named by its rowid, to the quarantine
// inside tx: every column is read as stored, recorded, and the row
// deleted. A missing row is jam.ErrNotFound.
func quarantineRow(ctx context.Context, tx *sql.Tx, t quarantineTable, rowid int64, reason string, at time.Time) (store.QuarantinedRecord, error) {
	rows, err := tx.QueryContext(ctx, `SELECT * FROM `+t.name+inspectRowid, rowid)
	if err != nil {
		return store.QuarantinedRecord{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return store.QuarantinedRecord{}, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.QuarantinedRecord{}, err
		}
		return store.QuarantinedRecord{}, jam.ErrNotFound
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return store.QuarantinedRecord{}, err
	}
	if err := rows.Close(); err != nil {
		return store.QuarantinedRecord{}, err
	}
	byName := make(map[string]any, len(cols))
	for i, c := range cols {
		byName[c] = vals[i]
	}
	rowJSON, err := json.Marshal(byName)
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("encode row: %w", err)
	}
	rec := store.QuarantinedRecord{
		WorkspaceID:   jam.WorkspaceID(textOf(byName["workspace_id"])),
		Source:        t.name,
		Seq:           intOf(byName["seq"]),
		Peer:          jam.PeerKey{Profile: textOf(byName["profile"]), Scope: textOf(byName["scope"])},
		Room:          jam.RoomID(textOf(byName["room_id"])),
		MessageID:     jam.PlatformMessageID(textOf(byName["message_id"])),
		Reason:        reason,
		Row:           rowJSON,
		QuarantinedAt: fromMicros(at.UnixMicro()),
	}
	if b, ok := byName["sealed"].([]byte); ok {
		rec.Sealed = b
	}
	if _, err := jam.ParseID[jam.WorkspaceID](string(rec.WorkspaceID)); err != nil {
		rec.WorkspaceID = ""
	}
	sealed := rec.Sealed
	if sealed == nil {
		sealed = []byte{} // NOT NULL: an absent blob is recorded as empty
	}
	err = tx.QueryRowContext(ctx, quarantineInsert, rec.WorkspaceID, rec.Source, rec.Seq, rec.Peer.Profile, rec.Peer.Scope,
		rec.Room, rec.MessageID, rec.Reason, string(rowJSON), sealed, at.UnixMicro()).Scan(&rec.ID)
	if err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("record: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+t.name+inspectRowid, rowid); err != nil {
		return store.QuarantinedRecord{}, fmt.Errorf("delete: %w", err)
	}
	return rec, nil
}

// textOf renders a column value as text, whatever type it was stored as.
func textOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	default:
		return fmt.Sprint(v)
	}
}

// intOf returns an integer column's value, or 0 if it is not an integer.
func intOf(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	return 0
}

// inspected is one row of an inspection: its rowid and, if it cannot be
// read as a record, what is wrong with it.
type inspected struct {
	rowid   int64
	problem string
}

// inspectRow reads one row of t's inspection and judges it. Every value
// is scanned as stored, so no row fails the scan; only the rowid must be
// an integer, which SQLite guarantees.
func inspectRow(t quarantineTable, row scanner) (inspected, error) {
	n := 10
	if t.name == store.QuarantineFromQueue {
		n = 17
	}
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := row.Scan(ptrs...); err != nil {
		return inspected{}, err
	}
	rowid, ok := vals[0].(int64)
	if !ok {
		return inspected{}, fmt.Errorf("rowid %v is not an integer", vals[0])
	}
	return inspected{rowid: rowid, problem: judgeRow(t, vals[1:])}, nil
}

// judgeRow returns what makes an inspected row unreadable as a record,
// or "" if nothing does. vals are the inspection's columns after rowid.
func judgeRow(t quarantineTable, vals []any) string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	text := func(name string, v any) (string, bool) {
		s, ok := v.(string)
		if !ok {
			bad("%s is %s, not text", name, typeName(v))
		}
		return s, ok
	}
	if seq, ok := vals[0].(int64); !ok || seq < 1 {
		bad("seq %v is not a positive integer", vals[0])
	}
	if s, ok := text("workspace_id", vals[1]); ok {
		if _, err := jam.ParseID[jam.WorkspaceID](s); err != nil {
			bad("workspace_id: %v", err)
		}
	}
	profile, pok := text("profile", vals[2])
	scope, sok := text("scope", vals[3])
	if pok && sok {
		if err := (jam.PeerKey{Profile: profile, Scope: scope}).Validate(); err != nil {
			bad("peer: %v", err)
		}
	}
	if s, ok := text("room_id", vals[4]); ok {
		if _, err := jam.ParseUUID[jam.RoomID](s); err != nil {
			bad("room_id: %v", err)
		}
	}
	if s, ok := text("message_id", vals[5]); ok {
		if _, err := jam.ParseMessageID(s); err != nil {
			bad("message_id: %v", err)
		}
	}
	if typ, _ := vals[6].(string); typ != "blob" {
		bad("sealed is %s, not a blob", typ)
	} else if n, _ := vals[7].(int64); n < 1 {
		bad("sealed is empty")
	}
	if at, ok := vals[8].(int64); !ok || at <= 0 {
		bad("received_at %v is not a positive integer", vals[8])
	}
	if t.name == store.QuarantineFromQueue {
		if s, ok := text("binding_id", vals[9]); ok && s != "" {
			if _, err := jam.ParseID[jam.BindingID](s); err != nil {
				bad("binding_id: %v", err)
			}
		}
		if s, ok := text("sender_id", vals[10]); ok && s != "" {
			if _, err := jam.ParseUUID[jam.IdentityID](s); err != nil {
				bad("sender_id: %v", err)
			}
		}
		switch v := vals[11].(type) {
		case bool:
		case int64:
			if v != 0 && v != 1 {
				bad("addressed_to_user %d is not a boolean", v)
			}
		default:
			bad("addressed_to_user is %s, not a boolean", typeName(v))
		}
		if s, ok := text("state", vals[12]); ok && s != store.QueueQueued && s != store.QueueClaimed && s != store.QueueDelivered {
			bad("state %q is unknown", s)
		}
		if n, ok := vals[13].(int64); !ok || n < 0 {
			bad("attempts %v is not a count", vals[13])
		}
		for i, name := range []string{"claimed_at", "delivered_at"} {
			if v := vals[14+i]; v != nil {
				if at, ok := v.(int64); !ok || at <= 0 {
					bad("%s %v is not a positive integer", name, v)
				}
			}
		}
	}
	return strings.Join(problems, "; ")
}

// typeName names the storage class of a scanned value.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case int64:
		return "an integer"
	case float64:
		return "a real"
	case string:
		return "text"
	case []byte:
		return "a blob"
	default:
		return fmt.Sprintf("%T", v)
	}
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

// corruptScan marks a failed scan of a spool or queue row as corrupt when
// the failure is a column that does not convert (database/sql reports
// those as "sql: Scan error on column …"); any other failure (no rows, a
// cancelled or failed query) passes through unchanged.
func corruptScan(table string, err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "sql: Scan error on column") {
		return fmt.Errorf("%w: %s row: %v", store.ErrCorrupt, table, err)
	}
	return err
}
