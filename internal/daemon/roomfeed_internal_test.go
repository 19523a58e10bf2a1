package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/roomfeed"
)

const (
	testRoom  = "0190a1b2-0000-4000-8000-00000000aa01"
	testMsg   = "0190a1b2-0000-4000-8000-000000000001"
	testAgent = "0190a1b2-0000-4000-8000-0000000000a0"
)

func TestWireRoomMessage(t *testing.T) {
	t.Parallel()
	boom, superseded := "boom", protocol.AttemptSuperseded+" by attempt 2"
	m := &protocol.Message{ID: testMsg, Content: "@[[" + testAgent + "]] and @[[0190a1b2-0000-4000-8000-0000000000b0]] go", MessageType: protocol.MessageText,
		SenderID: "0190a1b2-0000-4000-8000-0000000000b0", SenderType: protocol.TypeUser, InsertedAt: "t",
		Metadata: protocol.MessageMetadata{
			Mentions: []protocol.Mention{{ID: testAgent, Handle: "owner/coder"}},
			DeliveryStatus: map[string]protocol.DeliveryRecord{
				testAgent: {Status: protocol.DeliveryDelivered, CurrentAttempt: 0},
				"0190a1b2-0000-4000-8000-0000000000a1": {Status: protocol.DeliveryFailed, CurrentAttempt: 2,
					Attempts: []protocol.Attempt{{AttemptNumber: 1, Status: protocol.AttemptFailed, Error: &boom}, {AttemptNumber: 2, Status: protocol.AttemptFailed, Error: &boom}}},
				// One delivery, answered: claimed, then claimed again to
				// settle. One try.
				"0190a1b2-0000-4000-8000-0000000000a2": {Status: protocol.DeliveryProcessed, CurrentAttempt: 2,
					Attempts: []protocol.Attempt{{AttemptNumber: 1, Status: protocol.AttemptFailed, Error: &superseded}, {AttemptNumber: 2, Status: protocol.AttemptSuccess}}},
			},
		}}
	got := wireRoomMessage(roomfeed.Row{Message: m, Seq: 4}, "0190a1b2-0000-4000-8000-0000000000b0", "owner")
	require.Equal(t, "@owner/coder and @owner go", got.Text)
	require.Equal(t, int64(4), got.Seq)
	require.Equal(t, []string{testAgent}, got.Mentions)
	require.Equal(t, []wire.AgentDelivery{
		{AgentID: testAgent, Handle: "owner/coder", Status: wire.DeliveryQueued},
		{AgentID: "0190a1b2-0000-4000-8000-0000000000a1", Status: wire.DeliveryFailed, Attempt: 2, Error: "boom"},
		{AgentID: "0190a1b2-0000-4000-8000-0000000000a2", Status: wire.DeliveryProcessed, Attempt: 1},
	}, got.Delivery)
}

func TestBrokerPublisher(t *testing.T) {
	t.Parallel()
	var got []events.Event
	full := false
	pub := brokerPublisher(slog.New(slog.DiscardHandler), func(ctx context.Context, ev events.Event) error {
		require.Error(t, ctx.Err(), "the feed's publish must never wait")
		if full {
			return errors.New("buffer full")
		}
		got = append(got, ev)
		return nil
	})
	m := &protocol.Message{ID: testMsg, Content: "hi", MessageType: protocol.MessageText}
	pub(roomfeed.Mutation{Profile: "local", Room: testRoom, Seq: 3, Kind: roomfeed.MutationUpsert, MessageID: testMsg, Message: m})
	pub(roomfeed.Mutation{Profile: "local", Room: testRoom, Seq: 4, Kind: roomfeed.MutationDelete, MessageID: testMsg})
	full = true
	pub(roomfeed.Mutation{Profile: "local", Room: testRoom, Seq: 5, Kind: roomfeed.MutationDelete, MessageID: testMsg})
	require.Len(t, got, 2)
	require.Equal(t, "room.message", got[0].Kind)
	require.Equal(t, jam.RoomID(testRoom), got[0].Room)
	require.Equal(t, jam.PlatformMessageID(testMsg), got[0].MessageID)
	var data roomMutationData
	require.NoError(t, json.Unmarshal(got[0].Data, &data))
	require.Equal(t, "local", data.Account)
	require.Equal(t, int64(3), data.Seq)
	require.Equal(t, "upsert", data.Kind)
	require.Equal(t, "hi", data.Message.Content)
	require.NoError(t, json.Unmarshal(got[1].Data, &data))
	require.Equal(t, "delete", data.Kind)
}
