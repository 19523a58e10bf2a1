package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"

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
	// probes, each a primary-key lookup), or already spooled in its lane:
	// the unique index spool_lane_message (migration 0017) refuses the
	// row, and OR IGNORE skips it instead of failing the batch. Both are
	// decided by the database inside the write, so a message appended
	// through two handles at once goes in once. The store's set of spooled
	// messages (spoolSet) only saves the work for messages it knows are
	// spooled; repeats within one batch are removed before the statement.
	// Rows go in in batch order (ORDER BY b.n) and, inside the IMMEDIATE
	// transaction, take consecutive sequences, so when every entry went in
	// (the usual case) the last inserted rowid and the count name them all;
	// only when some were skipped are the new rows read back
	// (spoolSelectRange) to tell which, and each skipped entry is checked
	// to be a duplicate (spoolDupProbe, which compares the text columns,
	// so a lane key collision fails the batch rather than losing an
	// entry). (RETURNING would name them directly, but buffering its rows
	// cost 10-20% of an append's CPU when measured.) OR IGNORE also tells
	// SQLite the statement cannot fail halfway, so it keeps no statement
	// journal (a copy of every page the statement changes; 5-15% of an
	// append's CPU); a row skipped for any other reason would fail the
	// duplicate check, and the batch with it, so nothing is ever
	// acknowledged unwritten. One statement for the batch keeps the
	// per-entry cost to the B-tree work alone. PostgreSQL: ON CONFLICT
	// (lane_key, message_id) DO NOTHING, then the same read-back.
	spoolInsertHead = `WITH batch (n, workspace_id, profile, scope, room_id, message_id, sealed, received_at, lane_key) AS (VALUES `
	spoolInsertRow  = `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
	spoolInsertTail = `)
INSERT OR IGNORE INTO spool (workspace_id, profile, scope, room_id, message_id, sealed, received_at, lane_key)
SELECT b.workspace_id, b.profile, b.scope, b.room_id, b.message_id, b.sealed, b.received_at, b.lane_key FROM batch b
WHERE NOT EXISTS (SELECT 1 FROM queue q WHERE q.workspace_id = b.workspace_id AND q.profile = b.profile
                  AND q.scope = b.scope AND q.message_id = b.message_id)
  AND NOT EXISTS (SELECT 1 FROM settled s WHERE s.workspace_id = b.workspace_id AND s.profile = b.profile
                  AND s.scope = b.scope AND s.message_id = b.message_id)
ORDER BY b.n`
	spoolSelectRange = `SELECT seq, workspace_id, profile, scope, message_id FROM spool WHERE seq > ? AND seq <= ? ORDER BY seq`
	// spoolSpooledProbe tells whether a message is in the spool, by the
	// unique index of its lane and message.
	spoolSpooledProbe = `SELECT EXISTS (SELECT 1 FROM spool INDEXED BY spool_lane_message
WHERE lane_key = ?5 AND message_id = ?4 AND workspace_id = ?1 AND profile = ?2 AND scope = ?3)`
	// spoolDupProbe tells whether an entry SpoolAppend skipped is a
	// duplicate: queued, settled or spooled already for its peer.
	spoolDupProbe = `SELECT
  EXISTS (SELECT 1 FROM queue WHERE workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND message_id = ?4)
  OR EXISTS (SELECT 1 FROM settled WHERE workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND message_id = ?4)
  OR EXISTS (SELECT 1 FROM spool INDEXED BY spool_lane_message WHERE lane_key = ?5 AND message_id = ?4
             AND workspace_id = ?1 AND profile = ?2 AND scope = ?3)`
	spoolSelectIdentities = `SELECT seq, workspace_id, profile, scope, message_id FROM spool`
	// spoolInsertMax bounds the entries of one statement (9 parameters
	// each, far below SQLite's limit of 32766). A statement is prepared for
	// each row count up to it, so a batch of up to spoolInsertMax entries
	// is one statement; larger batches take several.
	spoolInsertMax = 64
	// spoolSelectLane reads one lane through spool_lane: the index holds
	// lane_key and the rowid (seq), so it yields the lane in seq order.
	spoolSelectLane = `SELECT ` + spoolColumns + ` FROM spool
WHERE lane_key = jam_spool_key(?1, ?2, ?3, ?4) AND workspace_id = ?1 AND profile = ?2 AND scope = ?3 AND room_id = ?4
ORDER BY seq LIMIT ?5`
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
// jam.ErrInvalid and writes nothing. Seq, if set, is ignored. Of several
// entries of one batch for the same message and peer, only the first can
// be appended.
func (s *Store) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	rows := make([]spoolRow, 0, len(entries))
	seen := make(map[spoolIdentity]bool, len(entries))
	for i, e := range entries {
		e, err := e.Canonical()
		if err != nil {
			return store.SpoolAppendResult{}, fmt.Errorf("spool append: entry %d (%s): %w", i, e.MessageID, err)
		}
		id := spoolIdentity{e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID}
		if seen[id] {
			continue // a repeat of an earlier entry: reported as not appended
		}
		seen[id] = true
		rows = append(rows, spoolRow{index: i, id: id, entry: e,
			laneKey: spoolKey(string(e.WorkspaceID), e.Peer.Profile, e.Peer.Scope, string(e.Room))})
	}
	res := store.SpoolAppendResult{Appended: make([]bool, len(entries)), Seqs: make([]int64, len(entries))}
	if len(rows) == 0 {
		return res, nil
	}
	// Appends of this store are serialised on the set, from the check to
	// the update after the commit, so the set stays a true record of what
	// this store appended. Appends of another handle on the database are
	// not: the unique index decides between them.
	s.spooled.mu.Lock()
	defer s.spooled.mu.Unlock()
	rows, err := s.spooled.dropSpooledLocked(ctx, s.reader, rows)
	if err != nil {
		return store.SpoolAppendResult{}, fmt.Errorf("spool append: %w", err)
	}
	if len(rows) == 0 {
		return res, nil
	}
	// The statements are prepared before the transaction: preparing on the
	// pool inside it would wait for the one writer connection the
	// transaction holds.
	var stmts []*sql.Stmt
	for start := 0; start < len(rows); start += spoolInsertMax {
		stmt, err := s.spoolInserts.get(ctx, s.writer, min(spoolInsertMax, len(rows)-start))
		if err != nil {
			return store.SpoolAppendResult{}, fmt.Errorf("spool append: %w", err)
		}
		stmts = append(stmts, stmt)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		for i, stmt := range stmts {
			chunk := rows[i*spoolInsertMax : min((i+1)*spoolInsertMax, len(rows))]
			if err := spoolInsertChunk(ctx, tx, tx.StmtContext(ctx, stmt), chunk, res); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.SpoolAppendResult{}, fmt.Errorf("spool append: %w", err)
	}
	for _, r := range rows {
		if res.Appended[r.index] {
			s.spooled.ids[r.id] = res.Seqs[r.index]
		}
	}
	return res, nil
}

// spoolIdentity identifies a message for deduplication.
type spoolIdentity struct {
	ws      jam.WorkspaceID
	profile string
	scope   string
	msg     jam.PlatformMessageID
}

// spoolRow is one entry of a batch on its way into the statement: its
// place in the caller's batch, its identity and its lane key.
type spoolRow struct {
	index   int
	id      spoolIdentity
	entry   store.SpoolEntry
	laneKey int64
}

// spoolSet is a cache of the messages in the spool table, with the
// sequence of each, so that SpoolAppend skips a message it knows is
// spooled without running the insert. It decides nothing: a message found
// in the set is checked against the table (spoolSpooledProbe) and dropped
// from the batch only if the table has it; one not found goes to the
// insert, where the unique index spool_lane_message refuses it if it is
// spooled after all (appended through another handle on the database,
// which this set never sees).
//
// The set may hold less than the table (another handle's rows) and more
// (an entry leaves it after the row's deletion commits, in forget, and a
// deletion that does not report what it removed, such as RoomRetire,
// leaves its entries behind). Rows this store appends are added after
// the commit, while holding mu from the check to the update. The set is
// loaded from the table on first use.
type spoolSet struct {
	mu     sync.Mutex
	loaded bool                    // guarded by mu
	ids    map[spoolIdentity]int64 // guarded by mu: the sequence of each
}

// dropSpooledLocked returns rows without those whose message is in the
// spool. mu must be held.
func (c *spoolSet) dropSpooledLocked(ctx context.Context, db *sql.DB, rows []spoolRow) ([]spoolRow, error) {
	if !c.loaded {
		all, err := queryAll(ctx, db, func(row scanner) (spoolGone, error) {
			var g spoolGone
			err := row.Scan(&g.seq, &g.id.ws, &g.id.profile, &g.id.scope, &g.id.msg)
			return g, err
		}, spoolSelectIdentities)
		if err != nil {
			return nil, fmt.Errorf("load spooled messages: %w", err)
		}
		c.ids = make(map[spoolIdentity]int64, len(all))
		for _, g := range all {
			c.ids[g.id] = g.seq
		}
		c.loaded = true
	}
	out := rows[:0:0]
	for _, r := range rows {
		if _, maybe := c.ids[r.id]; maybe {
			var spooled bool
			e := r.entry
			if err := db.QueryRowContext(ctx, spoolSpooledProbe, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID, r.laneKey).Scan(&spooled); err != nil {
				return nil, err
			}
			if spooled {
				continue
			}
			delete(c.ids, r.id) // gone since; it may come back below
		}
		out = append(out, r)
	}
	return out, nil
}

// forget removes the spool rows of gone, whose deletion has committed,
// from the set: each by identity, if it still names the same row.
func (c *spoolSet) forget(gone []spoolGone) {
	if len(gone) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range gone {
		if seq, ok := c.ids[g.id]; ok && seq == g.seq {
			delete(c.ids, g.id)
		}
	}
}

// spoolGone names a spool row (one a transaction deleted, or one loaded).
type spoolGone struct {
	id  spoolIdentity
	seq int64
}

func goneEntry(e store.SpoolEntry) spoolGone {
	return spoolGone{spoolIdentity{e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID}, e.Seq}
}

// spoolKey is the 64-bit FNV-1a hash of the parts, each followed by a NUL
// byte (no part contains one: validateText refuses it). The spool indexes
// the key of each row's lane (workspace, profile, scope, room) instead of
// the lane's text columns: an index entry is then about 13 bytes instead
// of about 90, so a page holds seven times as many and a group commit
// splits and writes far fewer of them. Equal keys are a hint, never a
// match: every lookup also compares the text columns, so a collision costs
// one extra row read. The same function is registered with SQLite as
// jam_spool_key, for the migration that keyed existing rows and for
// queries that look a lane up by its parts.
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

// The registration is global to the driver, so it happens once, before
// any connection of this package opens: SQLite looks functions up when a
// statement is prepared, and migration 0007 calls this one.
func init() {
	msqlite.MustRegisterDeterministicScalarFunction("jam_spool_key", 4, func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		var parts [4]string
		for i, a := range args {
			switch v := a.(type) {
			case string:
				parts[i] = v
			case []byte:
				parts[i] = string(v)
			default:
				return nil, fmt.Errorf("jam_spool_key: argument %d is %T, not text", i+1, a)
			}
		}
		return spoolKey(parts[0], parts[1], parts[2], parts[3]), nil
	})
}

// spoolInsertCache holds the batch insert statement prepared on the writer
// for each row count up to spoolInsertMax: parsing a statement of dozens
// of rows costs as much as inserting several of them, and one statement
// per commit (instead of one per power-of-two part of the batch) saves the
// fixed cost of the others.
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
// len(chunk) rows, inside tx, and records in res which entries went in.
// The rows of chunk name distinct messages.
func spoolInsertChunk(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, chunk []spoolRow, res store.SpoolAppendResult) error {
	args := make([]any, 0, 9*len(chunk))
	for i, r := range chunk {
		e := r.entry
		args = append(args, i, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.Room, e.MessageID, e.Sealed, e.ReceivedAt.UnixMicro(), r.laneKey)
	}
	out, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return err
	}
	n, err := out.RowsAffected()
	if err != nil || n == 0 {
		return err // none went in: all were duplicates
	}
	last, err := out.LastInsertId()
	if err != nil {
		return err
	}
	if int(n) == len(chunk) {
		for i, r := range chunk {
			res.Appended[r.index], res.Seqs[r.index] = true, last-int64(len(chunk)-1-i)
		}
		return nil
	}
	// Some were skipped: the n new rows are the sequences (last-n, last].
	if err := spoolReadBack(ctx, tx, chunk, last-n, last, res); err != nil {
		return err
	}
	for _, r := range chunk {
		if res.Appended[r.index] {
			continue
		}
		e := r.entry
		var dup bool
		if err := tx.QueryRowContext(ctx, spoolDupProbe, e.WorkspaceID, e.Peer.Profile, e.Peer.Scope, e.MessageID, r.laneKey).Scan(&dup); err != nil {
			return err
		}
		if !dup {
			return fmt.Errorf("spool append skipped message %s, which is not a duplicate", e.MessageID)
		}
	}
	return nil
}

// spoolReadBack records in res the entries of chunk that went in as the
// rows with sequences in (after, last].
func spoolReadBack(ctx context.Context, tx *sql.Tx, chunk []spoolRow, after, last int64, res store.SpoolAppendResult) error {
	pending := make(map[spoolIdentity]int, len(chunk))
	for _, r := range chunk {
		pending[spoolIdentity{r.entry.WorkspaceID, r.entry.Peer.Profile, r.entry.Peer.Scope, r.entry.MessageID}] = r.index
	}
	rows, err := tx.QueryContext(ctx, spoolSelectRange, after, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	found := int64(0)
	for rows.Next() {
		var seq int64
		var k spoolIdentity
		if err := rows.Scan(&seq, &k.ws, &k.profile, &k.scope, &k.msg); err != nil {
			return err
		}
		i, ok := pending[k]
		if !ok {
			return fmt.Errorf("spool append found message %s at sequence %d, which was not in the batch", k.msg, seq)
		}
		res.Appended[i], res.Seqs[i] = true, seq
		delete(pending, k)
		found++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if found != last-after {
		return fmt.Errorf("spool append inserted %d rows but found %d", last-after, found)
	}
	return nil
}

// SpoolNext implements [store.Messaging].
func (s *Store) SpoolNext(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, limit int) ([]store.SpoolEntry, error) {
	room, err := store.ValidateLane(ws, key, room)
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
	row, err := store.ValidateSpoolMove(seq, row)
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	if err := s.stmts.prepare(ctx, s.writer, spoolMoveQueries...); err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	var out store.SpoolMoved
	var gone []spoolGone
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		out, err = s.spoolMoveOne(ctx, tx, seq, row, &gone)
		if err == nil && out.Outcome == store.MoveMissing {
			return jam.ErrNotFound
		}
		if err == nil {
			err = s.queueCap.queued(ctx, tx, []store.SpoolMoved{out})
		}
		return err
	})
	if err != nil {
		return store.QueueRow{}, fmt.Errorf("spool move %d: %w", seq, err)
	}
	s.spooled.forget(gone)
	return out.Row, nil
}

// SpoolMoveBatch implements [store.Messaging]. Every row is validated
// before the transaction starts; an invalid one fails the batch with
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
	if err := s.stmts.prepare(ctx, s.writer, spoolMoveQueries...); err != nil {
		return nil, fmt.Errorf("spool move: %w", err)
	}
	out := make([]store.SpoolMoved, len(rows))
	gone := make([]spoolGone, 0, len(rows))
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		for i, r := range valid {
			m, err := s.spoolMoveOne(ctx, tx, r.Seq, r, &gone)
			if err != nil {
				return fmt.Errorf("spool move %d: %w", r.Seq, err)
			}
			out[i] = m
		}
		return s.queueCap.queued(ctx, tx, out)
	})
	if err != nil {
		return nil, err
	}
	s.spooled.forget(gone)
	return out, nil
}

// spoolMoveQueries are the statements spoolMoveOne runs prepared.
var spoolMoveQueries = []string{spoolTakeSeqOfWS, spoolMoveProbe, queueInsert}

// spoolMoveOne moves one entry inside tx; see SpoolMove. It runs three
// prepared statements per entry: take the entry, probe, insert. It adds
// the entry it took to gone, for the caller to forget once tx commits.
func (s *Store) spoolMoveOne(ctx context.Context, tx *sql.Tx, seq int64, row store.QueueRow, gone *[]spoolGone) (store.SpoolMoved, error) {
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
	if err := store.ValidateSpoolMatch(e, row); err != nil {
		return store.SpoolMoved{}, err // the caller's rollback puts the entry back
	}
	*gone = append(*gone, goneEntry(e))
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

// SpoolDrop implements [store.Messaging]: the entry is deleted and its
// message recorded as settled at at, in one transaction. A missing seq is
// jam.ErrNotFound.
func (s *Store) SpoolDrop(ctx context.Context, seq int64, at time.Time) error {
	if seq < 1 {
		return fmt.Errorf("spool drop %d: %w: seq is not positive", seq, jam.ErrInvalid)
	}
	if err := store.ValidateTime("time", at); err != nil {
		return fmt.Errorf("spool drop %d: %w", seq, err)
	}
	var gone spoolGone
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
		gone = goneEntry(e)
		return insertSettled(ctx, tx, e.WorkspaceID, e.Peer, e.MessageID, at)
	})
	if err != nil {
		return fmt.Errorf("spool drop %d: %w", seq, err)
	}
	s.spooled.forget([]spoolGone{gone})
	return nil
}

func scanSpoolEntry(row scanner) (store.SpoolEntry, error) {
	var e store.SpoolEntry
	var received int64
	err := row.Scan(&e.Seq, &e.WorkspaceID, &e.Peer.Profile, &e.Peer.Scope, &e.Room, &e.MessageID, &e.Sealed, &received)
	if err != nil {
		return store.SpoolEntry{}, corruptScan("spool", err)
	}
	if len(e.Sealed) == 0 {
		// The engine cannot even try to open it; see quarantine.go.
		return store.SpoolEntry{}, fmt.Errorf("%w: spool entry %d: sealed message is empty", store.ErrCorrupt, e.Seq)
	}
	e.ReceivedAt = fromMicros(received)
	return e, nil
}
