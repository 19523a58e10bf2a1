package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Events is the part of the seam that holds the durable event log behind
// the client event stream (package events). The log is append-only apart
// from retention; its sequence is the cursor clients resume from.
type Events interface {
	// EventAppend stores a batch of events in one transaction (one fsync)
	// and returns their sequences, which are assigned by the store, are
	// strictly increasing in batch order, are greater than every sequence
	// assigned before, and are never reused, even after pruning. Every
	// record is validated before the transaction starts: an invalid one
	// fails the batch with jam.ErrInvalid and nothing is written. Seq, if
	// set, is ignored. An empty batch writes nothing.
	EventAppend(ctx context.Context, events []EventRecord) ([]int64, error)
	// EventList returns the workspace's events with a sequence greater
	// than after, ascending, at most limit (1 to MaxEventListLimit).
	EventList(ctx context.Context, ws jam.WorkspaceID, after int64, limit int) ([]EventRecord, error)
	// EventLast returns the highest sequence of the workspace's events, or
	// 0 when it has none.
	EventLast(ctx context.Context, ws jam.WorkspaceID) (int64, error)
	// EventPrune deletes, in every workspace, each event created before
	// before and each event beyond the workspace's keepNewest newest (a
	// busy workspace never pushes out a quiet one's events), and returns
	// how many went. keepNewest must be positive.
	EventPrune(ctx context.Context, keepNewest int, before time.Time) (int, error)
}

// EventRecord is one stored event.
type EventRecord struct {
	// Seq is assigned by EventAppend.
	Seq         int64
	WorkspaceID jam.WorkspaceID
	// Kind names the event, such as "message.queued": 1 to MaxEventKindLen
	// bytes of lower-case letters, digits, '.', '_' and '-'.
	Kind string
	// Peer, Room and MessageID are zero when the event does not name one.
	Peer      jam.PeerKey
	Room      jam.RoomID
	MessageID jam.PlatformMessageID
	// Payload is a JSON object of at most MaxEventPayloadLen bytes; empty
	// is stored, and returned, as {}.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Limits of the event log, enforced by every dialect ([EventRecord.Canonical],
// [ValidateEventListLimit]).
const (
	MaxEventKindLen    = 64
	MaxEventPayloadLen = 256 << 10
	MaxEventListLimit  = 10000
)
