package band_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

// hubBundle is a running hub with an owner client.
type hubBundle struct {
	hub   *hub.Hub
	http  *band.HTTP
	owner *band.Client
}

func startHub(t *testing.T) *hubBundle {
	t.Helper()
	h, err := hub.New(hub.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, h.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, h.Stop(context.Background())) })
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	owner, err := band.NewClient(hc, h.URL(), band.APIKey(h.OwnerKey()))
	require.NoError(t, err)
	return &hubBundle{hub: h, http: hc, owner: owner}
}

// agent registers an agent and returns its client and profile.
func (b *hubBundle) agent(t *testing.T, name string) (*band.Client, protocol.AgentMe) {
	t.Helper()
	reg, err := b.owner.RegisterAgent(t.Context(), name, "test agent "+name)
	require.NoError(t, err)
	c, err := band.NewClient(b.http, b.hub.URL(), band.APIKey(reg.Credentials.APIKey))
	require.NoError(t, err)
	me, err := c.AgentMe(t.Context())
	require.NoError(t, err)
	return c, me
}

// room creates a room with the given participants.
func (b *hubBundle) room(t *testing.T, ids ...string) string {
	t.Helper()
	r, err := b.owner.CreateChat(t.Context(), "test room")
	require.NoError(t, err)
	for _, id := range ids {
		_, err := b.owner.AddChatParticipant(t.Context(), r.ID, id, protocol.RoleMember)
		require.NoError(t, err)
	}
	return r.ID
}

func (b *hubBundle) say(t *testing.T, room, text string, to protocol.AgentMe) string {
	t.Helper()
	sent, err := b.owner.SendChatMessage(t.Context(), room, text, []protocol.Mention{{ID: to.ID}})
	require.NoError(t, err)
	return sent.ID
}

// events collects a feed's events.
type events struct {
	ch chan band.AgentEvent
}

func (e *events) add(ev band.AgentEvent) { e.ch <- ev }

func (e *events) next(t *testing.T, kind band.AgentEventKind) band.AgentEvent {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event", kind)
		}
	}
}

func runFeed(t *testing.T, c *band.Client, me protocol.AgentMe) (*events, <-chan error) {
	t.Helper()
	ev := &events{ch: make(chan band.AgentEvent, 256)}
	f, err := band.NewAgentFeed(band.AgentFeedConfig{Client: c, Logger: slog.New(slog.DiscardHandler),
		Socket: band.SocketConfig{BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Jitter: time.Millisecond}}, me.ID, ev.add)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- f.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ev, done
}

func TestAgentFeed_catchUpBeforeUpThenLive(t *testing.T) {
	t.Parallel()
	b := startHub(t)
	c, me := b.agent(t, "coder")
	room := b.room(t, me.ID)
	early := []string{b.say(t, room, "@coder first", me), b.say(t, room, "@coder second", me)}

	ev, _ := runFeed(t, c, me)
	var caught []string
	for {
		e := <-ev.ch
		if e.Kind == band.AgentState && e.State == band.StateUp {
			break
		}
		if e.Kind == band.AgentMessage {
			require.True(t, e.CatchUp, "messages before Up come from the catch-up")
			require.Equal(t, room, e.Room)
			caught = append(caught, e.Message.ID)
		}
	}
	require.Equal(t, early, caught, "catch-up replays the unprocessed queue oldest first, before Up")

	live := b.say(t, room, "@coder third", me)
	e := ev.next(t, band.AgentMessage)
	require.Equal(t, live, e.Message.ID)
	require.False(t, e.CatchUp)
	require.True(t, strings.HasPrefix(e.Message.Content, "@[["+me.ID+"]]"), "content carries the mention token: %q", e.Message.Content)
}

func TestAgentFeed_joinsRoomsAddedLater(t *testing.T) {
	t.Parallel()
	b := startHub(t)
	c, me := b.agent(t, "coder")
	ev, _ := runFeed(t, c, me)
	ev.next(t, band.AgentState) // connecting
	for e := ev.next(t, band.AgentState); e.State != band.StateUp; e = ev.next(t, band.AgentState) {
	}
	room := b.room(t, me.ID)
	added := ev.next(t, band.AgentRoomAdded)
	require.Equal(t, room, added.Room)
	id := b.say(t, room, "@coder hello", me)
	msg := ev.next(t, band.AgentMessage)
	require.Equal(t, id, msg.Message.ID)
}

func TestAgentFeed_supersededByNewerSocket(t *testing.T) {
	t.Parallel()
	b := startHub(t)
	c, me := b.agent(t, "coder")
	b.room(t, me.ID)
	first, firstDone := runFeed(t, c, me)
	for e := first.next(t, band.AgentState); e.State != band.StateUp; e = first.next(t, band.AgentState) {
	}
	second, _ := runFeed(t, c, me)
	for e := second.next(t, band.AgentState); e.State != band.StateUp; e = second.next(t, band.AgentState) {
	}
	select {
	case err := <-firstDone:
		require.ErrorIs(t, err, band.ErrSuperseded)
	case <-time.After(15 * time.Second):
		t.Fatal("the older socket was not superseded")
	}
}

func TestClient_processingLifecycleOnHub(t *testing.T) {
	t.Parallel()
	b := startHub(t)
	c, me := b.agent(t, "coder")
	room := b.room(t, me.ID)
	id := b.say(t, room, "@coder work", me)

	m, ok, err := c.AgentNext(t.Context(), room)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, id, m.ID)
	st, err := c.AgentProcessing(t.Context(), room, id)
	require.NoError(t, err)
	require.Equal(t, 1, st.AttemptNumber)
	st, err = c.AgentProcessing(t.Context(), room, id)
	require.NoError(t, err)
	require.Equal(t, 2, st.AttemptNumber, "every claim opens a new attempt")

	profile, err := b.owner.Profile(t.Context())
	require.NoError(t, err)
	_, err = c.AgentSend(t.Context(), room, "done", []protocol.Mention{{ID: profile.ID}})
	require.NoError(t, err)
	_, err = c.AgentProcessed(t.Context(), room, id)
	require.NoError(t, err)
	_, ok, err = c.AgentNext(t.Context(), room)
	require.NoError(t, err)
	require.False(t, ok, "a processed message leaves the queue")
	pending, err := c.AgentPending(t.Context(), room)
	require.NoError(t, err)
	require.Empty(t, pending)

	_, err = c.AgentProcessed(t.Context(), room, id)
	var be *band.Error
	require.ErrorAs(t, err, &be)
	require.Equal(t, 422, be.Status, "settling without an active attempt is refused")
	require.False(t, band.Retryable(err))
}

func TestHumanFeed_seesMessagesAndDeliveryUpdates(t *testing.T) {
	t.Parallel()
	b := startHub(t)
	c, me := b.agent(t, "coder")
	room := b.room(t, me.ID)
	profile, err := b.owner.Profile(t.Context())
	require.NoError(t, err)

	ch := make(chan band.HumanEvent, 256)
	f, err := band.NewHumanFeed(band.HumanFeedConfig{Client: b.owner, Logger: slog.New(slog.DiscardHandler)}, profile.ID, func(e band.HumanEvent) { ch <- e })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	next := func(kind band.HumanEventKind) band.HumanEvent {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case e := <-ch:
				if e.Kind == kind {
					return e
				}
			case <-deadline:
				t.Fatalf("no %s event", kind)
			}
		}
	}
	for e := next(band.HumanState); e.State != band.StateUp; e = next(band.HumanState) {
	}
	require.Contains(t, f.Watched(), room)

	id := b.say(t, room, "@coder go", me)
	up := next(band.HumanUpsert)
	require.Equal(t, id, up.Message.ID)
	_, err = c.AgentProcessing(t.Context(), room, id)
	require.NoError(t, err)
	for {
		up = next(band.HumanUpsert)
		if up.Message.ID == id && up.Message.Metadata.DeliveryStatus[me.ID].Status == protocol.DeliveryProcessing {
			break
		}
	}
}
