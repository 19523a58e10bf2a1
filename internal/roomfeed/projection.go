package roomfeed

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
)

// MutationKind says what a Mutation does.
type MutationKind string

// Mutation kinds.
const (
	// MutationUpsert: a message was created or changed (content, delivery
	// status); Message is the whole new row.
	MutationUpsert MutationKind = "upsert"
	// MutationDelete: a message was deleted.
	MutationDelete MutationKind = "delete"
	// MutationSystem: jam synthesized a local system row (a membership
	// change Band announced without a durable row). It carries no room
	// sequence: a client inserts it by id, and drops it when a platform
	// row about the same participant arrives.
	MutationSystem MutationKind = "system"
)

// Mutation is one accepted change of a room, in the order the room's
// sequence gives. Message is shared and must not be modified.
type Mutation struct {
	WorkspaceID jam.WorkspaceID
	AccountID   jam.AccountID
	Profile     string
	Room        jam.RoomID
	// Seq is the room sequence; 0 for MutationSystem.
	Seq       int64
	Kind      MutationKind
	MessageID jam.PlatformMessageID
	// Message is the row of an upsert or a system row; nil for a delete.
	Message *protocol.Message
}

// Row is one projected message of a room.
type Row struct {
	// Message is the message in Band's shape, including its per-agent
	// delivery status (Metadata.DeliveryStatus). Shared; do not modify.
	Message *protocol.Message
	// Seq is the room sequence of the mutation that last changed the row;
	// 0 for a local system row.
	Seq int64
	// Local marks a system row jam synthesized.
	Local bool
	// At is the message's platform time (inserted_at).
	At time.Time
}

// before orders rows by (At, id): the window keeps the newest.
func (r Row) before(o Row) bool {
	if !r.At.Equal(o.At) {
		return r.At.Before(o.At)
	}
	return r.Message.ID < o.Message.ID
}

// roomState is the projection of one room.
type roomState struct {
	seq  int64
	rows map[jam.PlatformMessageID]Row
	// floor is the highest sequence of this room the journal has evicted:
	// a snapshot captured below it cannot be merged.
	floor int64
	// cold is set until the room is reconciled with Band in this process
	// (and again after the socket reconnects): the human socket has no
	// catch-up, so a cold room may have missed messages.
	cold bool
}

func newRoomState() *roomState {
	return &roomState{rows: map[jam.PlatformMessageID]Row{}, cold: true}
}

// oldest returns the oldest retained row.
func (r *roomState) oldest() (Row, bool) {
	var out Row
	found := false
	for _, row := range r.rows {
		if !found || row.before(out) {
			out, found = row, true
		}
	}
	return out, found
}

// sorted returns the retained rows oldest first.
func (r *roomState) sorted() []Row {
	out := make([]Row, 0, len(r.rows))
	for _, row := range r.rows {
		out = append(out, row)
	}
	sortRows(out)
	return out
}

func sortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
}

// applyUpsert applies an upsert of m at platform time at. It reports
// whether the upsert was accepted: an upsert identical to the projected
// row is ignored, and so is one of a message older than every retained
// row while the window is full (it would be trimmed at once). isNew says
// the message was not projected before. evicted is the row the window
// dropped to make room, if any.
func (r *roomState) applyUpsert(m *protocol.Message, at time.Time, window int) (row Row, isNew bool, evicted *Row, ok bool) {
	id := jam.PlatformMessageID(m.ID)
	row = Row{Message: m, At: at}
	old, had := r.rows[id]
	if had && sameMessage(old.Message, m) {
		return Row{}, false, nil, false
	}
	if !had && len(r.rows) >= window {
		oldest, _ := r.oldest()
		if row.before(oldest) {
			return Row{}, false, nil, false
		}
		delete(r.rows, jam.PlatformMessageID(oldest.Message.ID))
		evicted = &oldest
	}
	r.seq++
	row.Seq = r.seq
	r.rows[id] = row
	return row, !had, evicted, true
}

// applyDelete applies a delete; deletes are always accepted, even of a
// message outside the window, so a snapshot fetched before the delete
// cannot bring the message back.
func (r *roomState) applyDelete(id jam.PlatformMessageID) int64 {
	delete(r.rows, id)
	r.seq++
	return r.seq
}

// sameMessage reports whether two rows are identical in every field Band
// sends, by their canonical JSON.
func sameMessage(a, b *protocol.Message) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// parseTime reads a Band timestamp; an unreadable one sorts as fallback.
func parseTime(s string, fallback time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return fallback.UTC()
}

// journalEntry is one accepted mutation of an account.
type journalEntry struct {
	room jam.RoomID
	mut  Mutation
}

// journal keeps the last N accepted mutations of an account, across its
// rooms, for merging a snapshot with what arrived while it was fetched.
// One journal per account (not per room) bounds memory by the account's
// traffic rather than by its number of rooms; a busy room can push a quiet
// room's entries out, which the floor detects.
type journal struct {
	ring []journalEntry
	next int // index of the next write
	full bool
}

func newJournal(n int) *journal { return &journal{ring: make([]journalEntry, n)} }

// add appends an entry and returns the one it evicted, if any.
func (j *journal) add(e journalEntry) (journalEntry, bool) {
	old, evicted := j.ring[j.next], j.full
	j.ring[j.next] = e
	j.next = (j.next + 1) % len(j.ring)
	if j.next == 0 {
		j.full = true
	}
	return old, evicted
}

// since returns the room's mutations with a sequence above seq, in order.
func (j *journal) since(room jam.RoomID, seq int64) []Mutation {
	var out []Mutation
	n, start := j.next, 0
	if j.full {
		n, start = len(j.ring), j.next
	}
	for i := range n {
		e := j.ring[(start+i)%len(j.ring)]
		if e.room == room && e.mut.Seq > seq {
			out = append(out, e.mut)
		}
	}
	return out
}

// merge applies live mutations (in sequence order) to a snapshot of a
// room's newest messages and returns the result newest first. A live
// upsert replaces the snapshot's version of its message or adds it; a live
// delete removes it. Both the snapshot and the result are in Band's order
// (newest first by inserted_at, then id).
func merge(snapshot []protocol.Message, live []Mutation) []protocol.Message {
	byID := make(map[string]protocol.Message, len(snapshot)+len(live))
	for _, m := range snapshot {
		byID[strings.ToLower(m.ID)] = m
	}
	for _, mu := range live {
		id := strings.ToLower(string(mu.MessageID))
		switch mu.Kind {
		case MutationUpsert:
			byID[id] = *mu.Message
		case MutationDelete:
			delete(byID, id)
		}
	}
	rows := make([]Row, 0, len(byID))
	for _, m := range byID {
		rows = append(rows, Row{Message: &m, At: parseTime(m.InsertedAt, time.Time{})})
	}
	sortRows(rows)
	out := make([]protocol.Message, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = *r.Message
	}
	return out
}
