package daemon_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// byID indexes a room's messages.
func byID(msgs wire.RoomMessages) map[string]wire.RoomMessage {
	out := map[string]wire.RoomMessage{}
	for _, m := range msgs.Messages {
		out[m.ID] = m
	}
	return out
}

// TestRoomFeed_sequencedAcrossRestart: the owner posts in a room on the
// embedded hub; GET /v1/rooms/{room}/messages shows the message with a
// room sequence and the agent's delivery state, and the event stream
// carries the mutation as a room.message event; the person posts through
// the API; after a restart the cached sequences are kept and new messages
// get higher ones.
func TestRoomFeed_sequencedAcrossRestart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "feed", Agents: []string{"coder"}})
	require.NoError(t, err)
	first, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" first", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	before, err := c.RoomMessages(ctx, room.ID, apiclient.RoomMessagesQuery{})
	require.NoError(t, err)
	require.Equal(t, "local", before.Account)
	m1, ok := byID(before)[first.ID]
	require.True(t, ok, "the owner's message is shown: %+v", before)
	require.Positive(t, m1.Seq)
	require.LessOrEqual(t, m1.Seq, before.Seq)
	require.Equal(t, "@"+agent.Handle+" first", m1.Text, "the token is rendered as the handle")
	require.Equal(t, []string{agent.AgentID}, m1.Mentions)
	require.Len(t, m1.Delivery, 1)
	require.Equal(t, agent.AgentID, m1.Delivery[0].AgentID)
	require.Equal(t, agent.Handle, m1.Delivery[0].Handle)
	require.Contains(t, []string{wire.DeliveryQueued, wire.DeliveryProcessing, wire.DeliveryProcessed}, m1.Delivery[0].Status)

	// Every accepted mutation reaches the event stream.
	awaitRoomMessage(t, c, room.ID, first.ID, m1.Seq)

	ps, err := c.RoomParticipants(ctx, room.ID, "")
	require.NoError(t, err)
	require.Len(t, ps, 2)

	// The person posts through the daemon, mentioning by handle.
	posted, err := c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@coder second"})
	require.NoError(t, err)
	require.Equal(t, "@[["+agent.AgentID+"]] second", posted.Body)
	require.Equal(t, []string{agent.AgentID}, posted.Mentions)

	_, err = c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "nobody here"})
	var ae *apiclient.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, wire.CodeInvalidArgument, ae.Code)

	err, _ = r.stop()
	require.NoError(t, err)

	r2 := start(t, cfg)
	st2 := r2.waitReady(t)
	owner2 := ownerClient(t, st2) // the hub listens on a new port
	third, err := owner2.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" third", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	// The hub's acceptance is not the daemon's: the message reaches the
	// room cache through the daemon's socket, so wait for its event.
	awaitRoomMessage(t, r2.client, room.ID, third.ID, 0)
	after, err := r2.client.RoomMessages(ctx, room.ID, apiclient.RoomMessagesQuery{})
	require.NoError(t, err)
	got := byID(after)
	require.Len(t, after.Messages, 3)
	require.GreaterOrEqual(t, got[first.ID].Seq, m1.Seq, "a cached sequence never goes down")
	require.Contains(t, got, posted.ID)
	require.Greater(t, got[third.ID].Seq, before.Seq, "sequences continue upward after the restart")
	require.Greater(t, after.Seq, before.Seq)
	for i := 1; i < len(after.Messages); i++ {
		require.Less(t, after.Messages[i-1].InsertedAt, after.Messages[i].InsertedAt, "oldest first")
	}

	last, err := r2.client.RoomMessages(ctx, room.ID, apiclient.RoomMessagesQuery{Limit: 1})
	require.NoError(t, err)
	require.Len(t, last.Messages, 1)
	require.Equal(t, third.ID, last.Messages[0].ID)
}

// awaitRoomMessage reads the daemon's event stream until the room.message
// upsert of msgID arrives (with sequence seq, when seq is positive) and
// returns that sequence.
func awaitRoomMessage(t *testing.T, c *apiclient.Client, roomID, msgID string, seq int64) int64 {
	t.Helper()
	sctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	stream, err := c.Events(sctx, wire.EventsRequest{After: 0})
	require.NoError(t, err)
	defer stream.Close()
	for {
		ev, err := stream.Next()
		require.NoError(t, err, "no room.message event for message %s", msgID)
		if ev.Kind != "room.message" || ev.MessageID != msgID {
			continue
		}
		var data struct {
			Account string           `json:"account"`
			Seq     int64            `json:"seq"`
			Kind    string           `json:"kind"`
			Message wire.RoomMessage `json:"message"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &data))
		require.Equal(t, roomID, ev.Room)
		require.Equal(t, "local", data.Account)
		require.Equal(t, "upsert", data.Kind)
		require.Equal(t, msgID, data.Message.ID)
		if seq <= 0 || data.Seq == seq {
			return data.Seq
		}
	}
}
