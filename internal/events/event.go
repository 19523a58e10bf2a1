package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Live, passed to [Broker.Subscribe] as after, starts a subscription at the
// present with a reset event instead of replaying history.
const Live int64 = -1

// Kinds the broker itself emits. Every other kind is the publisher's
// ("message.queued", "agent.state", …).
const (
	// KindReset starts a subscription made without a position: its Seq is
	// the last event before the subscription, and its Data the live-state
	// snapshots (ResetData).
	KindReset = "reset"
	// KindStreamResync ends a subscription that fell behind: its Seq is the
	// last event the subscriber was given, to resume after (ResyncData).
	KindStreamResync = "stream_resync"
)

// Reasons of a reset or resync event.
const (
	// ReasonSubscribe: a subscription made without a position.
	ReasonSubscribe = "subscribe"
	// ReasonUnknownPosition: a subscription asked to resume after a
	// sequence this broker never assigned (a store that was replaced, say),
	// so it starts over with a reset.
	ReasonUnknownPosition = "unknown_position"
	// ReasonLagged: the subscriber's buffer filled up.
	ReasonLagged = "lagged"
)

// Event is one notification. Published events are immutable once
// committed, and one *Event is shared by every subscriber: never modify
// an event received from a subscription.
type Event struct {
	// Seq is assigned by the store when the event is committed; it orders
	// the events of one workspace and is what clients resume after.
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	// At is when the event was published; zero means now.
	At time.Time `json:"at"`
	// Peer, Room and MessageID are zero when the event does not name one.
	Peer      jam.PeerKey           `json:"peer,omitzero"`
	Room      jam.RoomID            `json:"room,omitempty"`
	MessageID jam.PlatformMessageID `json:"message_id,omitempty"`
	// Data is a JSON object with the kind's details, or empty.
	Data json.RawMessage `json:"data,omitempty"`
}

// ResetData is the Data of a reset event.
type ResetData struct {
	Reason string `json:"reason"`
	// After is the position the subscriber asked for, with
	// ReasonUnknownPosition.
	After int64 `json:"after,omitempty"`
	// Snapshots holds each registered provider's live state, by name.
	Snapshots map[string]json.RawMessage `json:"snapshots"`
	// Errors holds the providers that failed, by name; the stream goes on
	// without their state.
	Errors map[string]string `json:"errors,omitempty"`
}

// ResyncData is the Data of a stream_resync event.
type ResyncData struct {
	Reason string `json:"reason"`
}

// validate checks a published event against the store's rules, so that
// one bad event can never fail the group commit of its batch-mates, and
// returns it in canonical form.
func validate(e Event) (Event, error) {
	if e.Kind == "" || len(e.Kind) > store.MaxEventKindLen {
		return e, fmt.Errorf("%w: event kind %q must be 1 to %d bytes", jam.ErrInvalid, e.Kind, store.MaxEventKindLen)
	}
	for i := 0; i < len(e.Kind); i++ {
		c := e.Kind[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return e, fmt.Errorf("%w: event kind %q: character %q is not allowed", jam.ErrInvalid, e.Kind, c)
		}
	}
	if e.Kind == KindReset || e.Kind == KindStreamResync {
		return e, fmt.Errorf("%w: event kind %q is the broker's own", jam.ErrInvalid, e.Kind)
	}
	if !e.Peer.IsZero() {
		if err := e.Peer.Validate(); err != nil {
			return e, err
		}
	}
	var err error
	if e.Room != "" {
		if e.Room, err = jam.ParseUUID[jam.RoomID](string(e.Room)); err != nil {
			return e, err
		}
	}
	if e.MessageID != "" {
		if e.MessageID, err = jam.ParseMessageID(string(e.MessageID)); err != nil {
			return e, err
		}
	}
	// Times and empty data take the form replay gives them back in, so a
	// live event and its replay are identical.
	e.At = e.At.UTC().Truncate(time.Microsecond)
	if d := bytes.TrimSpace(e.Data); len(d) == 0 || bytes.Equal(d, []byte("{}")) {
		e.Data = nil
		return e, nil
	}
	if len(e.Data) > store.MaxEventPayloadLen {
		return e, fmt.Errorf("%w: event data is %d bytes, over %d", jam.ErrInvalid, len(e.Data), store.MaxEventPayloadLen)
	}
	if !json.Valid(e.Data) || !utf8.Valid(e.Data) || bytes.TrimLeft(e.Data, " \t\r\n")[0] != '{' {
		return e, fmt.Errorf("%w: event data is not a JSON object", jam.ErrInvalid)
	}
	return e, nil
}

// record is the stored form of e in workspace ws.
func record(ws jam.WorkspaceID, e *Event) store.EventRecord {
	return store.EventRecord{WorkspaceID: ws, Kind: e.Kind, Peer: e.Peer, Room: e.Room, MessageID: e.MessageID, Payload: e.Data, CreatedAt: e.At}
}

// fromRecord is the event of a stored record.
func fromRecord(r store.EventRecord) *Event {
	e := &Event{Seq: r.Seq, Kind: r.Kind, At: r.CreatedAt, Peer: r.Peer, Room: r.Room, MessageID: r.MessageID}
	if s := bytes.TrimSpace(r.Payload); len(s) > 0 && !bytes.Equal(s, []byte("{}")) {
		e.Data = r.Payload
	}
	return e
}

// mustJSON encodes one of the package's own data shapes, which cannot
// fail to encode.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("events: encode %T: %v", v, err))
	}
	return raw
}
