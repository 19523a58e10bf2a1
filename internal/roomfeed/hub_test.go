package roomfeed

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
	"github.com/jamhq/jam/internal/jam"
)

// humanAPI adapts the band client to HumanAPI, as the daemon does.
type humanAPI struct{ c *band.Client }

func (h humanAPI) History(ctx context.Context, room string, limit int) ([]protocol.Message, error) {
	page, err := h.c.ChatMessages(ctx, room, "", limit)
	return page.Messages, err
}

func (h humanAPI) Participants(ctx context.Context, room string) ([]protocol.Participant, error) {
	return h.c.ChatParticipants(ctx, room)
}

func (h humanAPI) Post(ctx context.Context, room, content string, mentions []protocol.Mention) (protocol.MessageSent, error) {
	return h.c.SendChatMessage(ctx, room, content, mentions)
}

// feedEvents hands a human socket's events to a feed, as the daemon does,
// and reports connection states.
func feedEvents(f *Feed, states chan<- band.ConnState) func(band.HumanEvent) {
	return func(e band.HumanEvent) {
		switch e.Kind {
		case band.HumanUpsert:
			f.Upsert(jam.RoomID(e.Room), *e.Message)
		case band.HumanDelete:
			f.Delete(jam.RoomID(e.Room), jam.PlatformMessageID(e.MessageID))
		case band.HumanRoomRemoved:
			f.RoomRemoved(jam.RoomID(e.Room))
		case band.HumanParticipants:
			var p protocol.Participant
			if e.Event == protocol.EventParticipantAdded && json.Unmarshal(e.Payload, &p) == nil {
				f.ParticipantAdded(jam.RoomID(e.Room), p)
			}
		case band.HumanState:
			if e.State == band.StateUp {
				f.Reconnected()
			}
			states <- e.State
		}
	}
}

// TestFeed_onTheHub drives a feed from a real hub and the person's real
// socket: a message and its delivery-status updates become sequenced
// mutations and rows, a refresh of the same room changes nothing, and an
// agent added to a watched room gets a local join row.
func TestFeed_onTheHub(t *testing.T) {
	t.Parallel()
	h, err := hub.New(hub.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, h.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, h.Stop(context.Background())) })
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	owner, err := band.NewClient(hc, h.URL(), band.APIKey(h.OwnerKey()))
	require.NoError(t, err)
	profile, err := owner.Profile(t.Context())
	require.NoError(t, err)
	ctx := t.Context()

	agentClient := func(name string) (*band.Client, protocol.AgentMe) {
		reg, err := owner.RegisterAgent(ctx, name, "test agent")
		require.NoError(t, err)
		c, err := band.NewClient(hc, h.URL(), band.APIKey(reg.Credentials.APIKey))
		require.NoError(t, err)
		me, err := c.AgentMe(ctx)
		require.NoError(t, err)
		return c, me
	}
	coder, coderMe := agentClient("coder")
	_, reviewerMe := agentClient("reviewer")
	chat, err := owner.CreateChat(ctx, "feed room")
	require.NoError(t, err)
	room := jam.RoomID(chat.ID)
	_, err = owner.AddChatParticipant(ctx, chat.ID, coderMe.ID, protocol.RoleMember)
	require.NoError(t, err)

	b := setup(t, func(c *Config) {
		c.UserID = jam.IdentityID(profile.ID)
		c.Human = humanAPI{owner}
	})
	f := b.feed
	states := make(chan band.ConnState, 16)
	hf, err := band.NewHumanFeed(band.HumanFeedConfig{Client: owner, Logger: slog.New(slog.DiscardHandler)}, profile.ID, feedEvents(f, states))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = hf.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	for st := range states {
		if st == band.StateUp {
			break
		}
	}
	require.Contains(t, hf.Watched(), string(room))

	// The first read of the room refreshes it: empty so far.
	v, err := f.Messages(ctx, room, 0)
	require.NoError(t, err)
	require.Empty(t, v.Rows)

	// The person posts; the echo arrives live and is sequenced.
	res, err := f.Send(ctx, SendParams{Room: room, Text: "@coder please build"})
	require.NoError(t, err)
	require.Equal(t, "@[["+coderMe.ID+"]] please build", res.Body)
	m := b.nextPub(t)
	require.Equal(t, MutationUpsert, m.Kind)
	require.Equal(t, res.ID, m.MessageID)
	require.Equal(t, res.Body, m.Message.Content, "the canonical body matches the echo")
	first := m.Seq

	// The agent works on it: each delivery-status change is a mutation.
	_, err = coder.AgentProcessing(ctx, string(room), string(res.ID))
	require.NoError(t, err)
	_, err = coder.AgentProcessed(ctx, string(room), string(res.ID))
	require.NoError(t, err)
	for {
		m = b.nextPub(t)
		require.Greater(t, m.Seq, first)
		if m.Message.Metadata.DeliveryStatus[coderMe.ID].Status == protocol.DeliveryProcessed {
			break
		}
	}
	v, err = f.Messages(ctx, room, 0)
	require.NoError(t, err)
	require.Len(t, v.Rows, 1)
	require.Equal(t, protocol.DeliveryProcessed, v.Rows[0].Message.Metadata.DeliveryStatus[coderMe.ID].Status)
	require.Equal(t, m.Seq, v.Seq)

	// Band's history holds the same row: a refresh changes nothing.
	require.NoError(t, f.Refresh(ctx, room))
	b.noPub(t)

	// An agent added to the watched room: the hub writes no membership
	// row, so after the grace a local one appears.
	b.clock.mu.Lock()
	b.clock.now = time.Now() // the hub stamps its messages with the wall clock
	b.clock.mu.Unlock()
	_, err = owner.AddChatParticipant(ctx, chat.ID, reviewerMe.ID, protocol.RoleMember)
	require.NoError(t, err)
	select {
	case <-b.clock.scheduled:
	case <-time.After(15 * time.Second):
		t.Fatal("participant_added never scheduled a join check")
	}
	b.clock.Advance(2 * time.Second)
	m = b.nextPub(t)
	require.Equal(t, MutationSystem, m.Kind)
	require.Equal(t, "reviewer joined", m.Message.Content)
	v, err = f.Messages(ctx, room, 0)
	require.NoError(t, err)
	require.Len(t, v.Rows, 2)
	require.True(t, v.Rows[1].Local)
	b.waitStored(t, room, v.Seq)
}
