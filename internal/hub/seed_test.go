package hub_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
)

// TestHub_SeedMessages: seeded messages are what a post stores, pending in
// each mentioned agent's queue in order, and claimable like any other.
func TestHub_SeedMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, other := b.register("Alpha"), b.register("Beta")
	r1, r2 := b.room(a, other), b.room(a)
	owner := b.ownerID()

	seeds := []hub.SeedMessage{
		{Room: r1, Sender: owner, Content: "@" + a.Handle + " one", Mentions: []string{a.ID}},
		{Room: r2, Sender: owner, Content: "two", Mentions: []string{a.ID}},
		{Room: r1, Sender: owner, Content: "three for both", Mentions: []string{a.ID, other.ID}},
		{Room: r1, Sender: other.ID, Content: "four from an agent", Mentions: []string{a.ID}},
	}
	got, err := b.hub.SeedMessages(t.Context(), seeds)
	require.NoError(t, err)
	require.Len(t, got, len(seeds))

	queue := func(room, key string) []protocol.Message {
		return b.list("/api/v1/agent/chats/"+room+"/messages?status=pending", key).Data
	}
	ids := func(ms []protocol.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	q1 := queue(r1, a.Key)
	require.Equal(t, []string{got[0].ID, got[2].ID, got[3].ID}, ids(q1), "oldest first")
	require.Equal(t, []string{got[1].ID}, ids(queue(r2, a.Key)))
	require.Equal(t, []string{got[2].ID}, ids(queue(r1, other.Key)))
	for i, m := range q1 {
		want := got[[]int{0, 2, 3}[i]]
		require.Equal(t, want.Content, m.Content)
		require.Equal(t, want.SenderID, m.SenderID)
		require.Equal(t, want.SenderType, m.SenderType)
		require.Equal(t, want.Metadata.Mentions, m.Metadata.Mentions)
		require.Equal(t, protocol.DeliveryDelivered, want.Metadata.DeliveryStatus[a.ID].Status)
	}
	require.Equal(t, mention.Token(a.ID)+" one", got[0].Content, "mentions are normalised as a post's are")
	require.Equal(t, protocol.TypeAgent, got[3].SenderType)

	var st protocol.Data[protocol.MessageStatus]
	b.call("POST", "/api/v1/agent/chats/"+r2+"/messages/"+got[1].ID+"/processing", a.Key, nil, 200, &st)
	require.Equal(t, 1, st.Data.AttemptNumber)
	require.Empty(t, queue(r2, a.Key), "a claimed message is no longer pending")

	bad := []struct {
		name string
		seed hub.SeedMessage
	}{
		{"unknown room", hub.SeedMessage{Room: "00000000-0000-4000-8000-000000000000", Sender: owner, Content: "x", Mentions: []string{a.ID}}},
		{"sender not in the room", hub.SeedMessage{Room: r2, Sender: other.ID, Content: "x", Mentions: []string{a.ID}}},
		{"mention not in the room", hub.SeedMessage{Room: r2, Sender: owner, Content: "x", Mentions: []string{other.ID}}},
		{"mention of a person", hub.SeedMessage{Room: r1, Sender: a.ID, Content: "x", Mentions: []string{owner}}},
		{"mention of the sender", hub.SeedMessage{Room: r1, Sender: a.ID, Content: "x", Mentions: []string{a.ID}}},
		{"blank content", hub.SeedMessage{Room: r1, Sender: owner, Content: " \u200b ", Mentions: []string{a.ID}}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.hub.SeedMessages(t.Context(), []hub.SeedMessage{tc.seed})
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
}

func TestHub_SeedMessages_notRunning(t *testing.T) {
	t.Parallel()
	h, err := hub.New(hub.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	_, err = h.SeedMessages(t.Context(), []hub.SeedMessage{{Room: "r", Sender: "s", Content: "x"}})
	require.ErrorIs(t, err, jam.ErrUnavailable)
}
