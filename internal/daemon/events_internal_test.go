package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
)

// TestWireEvent pins the adapter between the broker and the control API:
// the broker's own kinds and positions are the wire's, and every field
// carries over.
func TestWireEvent(t *testing.T) {
	t.Parallel()
	require.Equal(t, wire.EventsLive, events.Live)
	require.Equal(t, wire.EventKindReset, events.KindReset)
	require.Equal(t, wire.EventKindStreamResync, events.KindStreamResync)
	require.Equal(t, wire.ResyncLagged, events.ReasonLagged)

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	got := wireEvent(&events.Event{
		Seq: 9, Kind: "message.queued", At: at, Peer: jam.PeerKey{Profile: "local", Scope: "coder"},
		Room: "6f9619ff-8b86-4011-b42d-00c04fc964ff", MessageID: "0b5d4c1e-2f3a-4b6c-8d7e-9f0a1b2c3d4e", Data: json.RawMessage(`{"binding":"b"}`),
	})
	require.Equal(t, wire.Event{
		Seq: 9, Kind: "message.queued", At: at, Peer: "local/coder",
		Room: "6f9619ff-8b86-4011-b42d-00c04fc964ff", MessageID: "0b5d4c1e-2f3a-4b6c-8d7e-9f0a1b2c3d4e", Data: json.RawMessage(`{"binding":"b"}`),
	}, got)
	require.Empty(t, wireEvent(&events.Event{Seq: 1, Kind: "x"}).Peer, "no peer, no field")
}

func TestEngineEventKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind engine.EventKind
		want string
	}{
		{engine.EventQueued, "message.queued"},
		{engine.EventDelivered, "message.delivered"},
		{engine.EventSettled, "message.settled"},
		{engine.EventDeliveryFailed, "message.delivery_failed"},
		{engine.EventLaneFailed, "lane.failed"},
		{engine.EventRoomRetired, "room.retired"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, eventKindOf(tt.kind), tt.kind)
	}
}
