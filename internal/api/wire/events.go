package wire

import (
	"context"
	"encoding/json"
	"time"
)

// The client event stream, GET /v1/events: one Event per line (NDJSON), or
// per Server-Sent Event with the sequence as its id.
//
// A client that names no position (no ?after, no Last-Event-ID) gets a
// reset event first: its Seq is the last event before the stream began,
// and its Data a ResetData with the live-state snapshots. A client that
// names one (?after=SEQ) gets every event after SEQ replayed, then the
// live events, without a gap or a duplicate. A client that falls behind
// gets a stream_resync event whose Seq is the last event it was sent, and
// the stream ends; it resumes with ?after=SEQ. An event whose line would
// exceed MaxEventLine is replaced by a stream_resync event (reason
// line_too_long) whose Seq is that event's, so resuming after it skips
// it; the stream goes on.
const (
	// EventsLive, as EventsRequest.After, asks for no replay: the stream
	// starts at the present, with a reset event.
	EventsLive int64 = -1
	// MaxEventLine bounds one event's JSON line, without its newline.
	MaxEventLine = 1 << 20
)

// Event kinds with a meaning of their own in the stream; every other kind
// (message.queued, agent.state, …) is a daemon event.
const (
	EventKindReset        = "reset"
	EventKindStreamResync = "stream_resync"
)

// Reasons of a stream_resync event.
const (
	// ResyncLagged: the client read too slowly and the stream ended.
	ResyncLagged = "lagged"
	// ResyncLineTooLong: one event was too large to send and was skipped.
	ResyncLineTooLong = "line_too_long"
)

// Event is one line of GET /v1/events.
type Event struct {
	Seq  int64     `json:"seq"`
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Peer ("profile/scope"), Room and MessageID are left out when the
	// event does not name one.
	Peer      string `json:"peer,omitempty"`
	Room      string `json:"room,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Data holds the kind's details: a JSON object, or absent.
	Data json.RawMessage `json:"data,omitempty"`
}

// EventsRequest selects where a stream starts.
type EventsRequest struct {
	// After is the last sequence the client has seen; EventsLive for none.
	After int64
}

// ResetData is the Data of a reset event.
type ResetData struct {
	// Reason is "subscribe", or "unknown_position" when the client named a
	// position the daemon never handed out (its store was replaced, or
	// everything after it was pruned).
	Reason string `json:"reason"`
	After  int64  `json:"after,omitempty"`
	// Snapshots holds live state by provider name.
	Snapshots map[string]json.RawMessage `json:"snapshots"`
	// Errors names the providers whose state could not be taken.
	Errors map[string]string `json:"errors,omitempty"`
}

// ResyncData is the Data of a stream_resync event.
type ResyncData struct {
	Reason string `json:"reason"`
}

// EventStream is one subscription to the daemon's events, as the server's
// handler of GET /v1/events reads it from the backend. It lives here, with
// the shapes it carries, so that fakes of the backend (package apitest)
// need not import the server. It is read from one goroutine.
type EventStream interface {
	// TryNext returns the next event if one is ready, without waiting for
	// a new one (it may read the store). ok is false when none is ready.
	// The stream ends with io.EOF after a stream_resync, or with an error
	// wrapping jam.ErrStopping when the daemon stops.
	TryNext(ctx context.Context) (ev Event, ok bool, err error)
	// Ready is signalled when TryNext may have something new.
	Ready() <-chan struct{}
	// Close ends the subscription.
	Close()
}
