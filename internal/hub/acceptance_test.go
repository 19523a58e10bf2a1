package hub_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/mention"
)

// TestAcceptance walks the whole agent protocol against a real hub, with a
// restart between every step to show nothing durable lives in memory.
func TestAcceptance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keyFile := b.ownerKeyFile()
	require.Equal(t, b.owner, keyFile)
	require.True(t, strings.HasPrefix(keyFile, protocol.UserKeyPrefix))

	a := b.register("Alpha")
	bb := b.register("Beta")
	require.True(t, strings.HasPrefix(a.Key, protocol.AgentKeyPrefix))
	require.Equal(t, "owner/alpha", a.Handle)
	room := b.room(a, bb)
	ownerID := b.ownerID()

	b.restart()
	require.Equal(t, keyFile, b.hub.OwnerKey(), "the owner key survives a restart")
	require.Equal(t, keyFile, b.ownerKeyFile())

	sockA := b.socket(a.Key, chatTopic(room))
	sockB := b.socket(bb.Key, chatTopic(room))

	sent := b.send(b.owner, "/api/v1/me", room, "@"+a.Handle+" hi", a.Handle)
	require.Equal(t, []protocol.Recipient{{ID: a.ID, Handle: a.Handle, Name: "Alpha"}}, sent.Recipients)

	got := sockA.expectMessage(chatTopic(room), protocol.EventMessageCreated)
	require.Equal(t, sent.ID, got.ID)
	require.True(t, strings.HasPrefix(got.Content, mention.Token(a.ID)), got.Content)
	require.Equal(t, mention.Token(a.ID)+" hi", got.Content)
	require.Equal(t, protocol.MessageText, got.MessageType)
	require.Equal(t, ownerID, got.SenderID)
	require.Equal(t, protocol.TypeUser, got.SenderType)
	require.Equal(t, []protocol.Mention{{ID: a.ID, Handle: a.Handle, Name: "Alpha"}}, got.Metadata.Mentions)

	// B was not mentioned: the next frame it sees is the sentinel that
	// mentions it, not the first message.
	sentinel := b.send(b.owner, "/api/v1/me", room, "sentinel", bb.Handle)
	gotB := sockB.expectMessage(chatTopic(room), protocol.EventMessageCreated)
	require.Equal(t, sentinel.ID, gotB.ID)
	require.Equal(t, mention.Token(bb.ID)+" sentinel", gotB.Content)

	b.restart()

	var next protocol.Data[protocol.Message]
	b.call("GET", "/api/v1/agent/chats/"+room+"/messages/next", a.Key, nil, 200, &next)
	require.Equal(t, sent.ID, next.Data.ID, "the queue survives a restart")

	var claimed protocol.Data[protocol.MessageStatus]
	b.call("POST", "/api/v1/agent/chats/"+room+"/messages/"+sent.ID+"/processing", a.Key, nil, 200, &claimed)
	require.Equal(t, protocol.MessageStatus{ID: sent.ID, Status: "processing", AttemptNumber: 1, Success: true}, claimed.Data)

	b.restart()

	reply := b.send(a.Key, "/api/v1/agent", room, "hello owner", "owner")
	require.Equal(t, ownerID, reply.Recipients[0].ID)
	var done protocol.Data[protocol.MessageStatus]
	b.call("POST", "/api/v1/agent/chats/"+room+"/messages/"+sent.ID+"/processed", a.Key, nil, 200, &done)
	require.Equal(t, protocol.MessageStatus{ID: sent.ID, Status: "processed", AttemptNumber: 1, Success: true}, done.Data)

	b.restart()

	queue := b.list("/api/v1/agent/chats/"+room+"/messages", a.Key)
	require.Empty(t, queue.Data, "A's queue is empty")
	b.call("GET", "/api/v1/agent/chats/"+room+"/messages/next", a.Key, nil, 204, nil)
	queueB := b.list("/api/v1/agent/chats/"+room+"/messages", bb.Key)
	require.Len(t, queueB.Data, 1, "B still has the sentinel")

	history := b.list("/api/v1/me/chats/"+room+"/messages", b.owner)
	require.Len(t, history.Data, 3)
	require.Equal(t, []string{reply.ID, sentinel.ID, sent.ID}, ids(history.Data), "newest first")
	first := history.Data[2]
	rec, ok := first.Metadata.DeliveryStatus[a.ID]
	require.True(t, ok, "delivery status for A: %+v", first.Metadata)
	require.Equal(t, protocol.DeliveryProcessed, rec.Status)
	require.Equal(t, 1, rec.CurrentAttempt)
	require.NotNil(t, rec.ProcessedAt)
	require.Len(t, rec.Attempts, 1)
	require.Equal(t, protocol.AttemptSuccess, rec.Attempts[0].Status)
	require.NotNil(t, rec.Attempts[0].CompletedAt)
	require.Equal(t, mention.Token(ownerID)+" hello owner", history.Data[0].Content)
	require.Equal(t, keyFile, b.hub.OwnerKey())
}

func ids(msgs []protocol.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}
