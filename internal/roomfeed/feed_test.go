package roomfeed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestFeed_sequencesAndPublication(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	f := b.feed

	f.Upsert(roomA, text(1, "a"))
	m := b.nextPub(t)
	require.Equal(t, MutationUpsert, m.Kind)
	require.Equal(t, int64(1), m.Seq)
	require.Equal(t, roomA, m.Room)
	require.Equal(t, b.acct, m.AccountID)
	require.Equal(t, string(roomA), m.Message.ChatRoomID, "the room is filled in")

	f.Upsert(roomA, text(1, "a"))
	f.Upsert(roomB, text(2, "b"))
	m = b.nextPub(t)
	require.Equal(t, roomB, m.Room, "the identical upsert was ignored")
	require.Equal(t, int64(1), m.Seq, "sequences are per room")

	f.Upsert(roomA, withDelivery(text(1, "a"), protocol.DeliveryProcessing))
	m = b.nextPub(t)
	require.Equal(t, int64(2), m.Seq)
	f.Delete(roomA, jam.PlatformMessageID(msgID(1)))
	m = b.nextPub(t)
	require.Equal(t, MutationDelete, m.Kind)
	require.Equal(t, int64(3), m.Seq)
	require.Nil(t, m.Message)
	b.noPub(t)
	b.waitStored(t, roomA, 3)
	require.Empty(t, b.stored(t, roomA))
}

// TestFeed_publishesBeforePersistence checks that each mutation reaches
// the publish callback before the store sees its write.
func TestFeed_publishesBeforePersistence(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, s)
	}
	b := setup(t, func(c *Config) {
		c.Publish = func(m Mutation) { record(fmt.Sprintf("publish %d", m.Seq)) }
	})
	b.st.BeforeApplyFunc = func(p store.RoomCacheApplyParams) { record(fmt.Sprintf("store %d", p.Seq)) }
	for n := 1; n <= 20; n++ {
		b.feed.Upsert(roomA, text(n, "m"))
	}
	b.waitStored(t, roomA, 20)
	mu.Lock()
	defer mu.Unlock()
	published := map[string]int{}
	for i, s := range log {
		var seq int
		if _, err := fmt.Sscanf(s, "publish %d", &seq); err == nil {
			published[fmt.Sprint(seq)] = i
			continue
		}
		_, err := fmt.Sscanf(s, "store %d", &seq)
		require.NoError(t, err)
		at, ok := published[fmt.Sprint(seq)]
		require.True(t, ok && at < i, "sequence %d stored before it was published: %v", seq, log)
	}
}

// TestFeed_fullQueueCoalesces holds the store while mutations arrive: the
// channel fills, later mutations coalesce into one dirty checkpoint per
// room, and the flush writes each dirty room's whole window, with the
// attention items the coalesced messages staged.
func TestFeed_fullQueueCoalesces(t *testing.T) {
	t.Parallel()
	const queue = 8
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	b := setup(t, func(c *Config) { c.QueueSize = queue; c.Window = 10 })
	b.st.BeforeApplyFunc = func(store.RoomCacheApplyParams) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
	}
	f := b.feed

	f.Upsert(roomA, text(1, "held")) // taken by the worker, which blocks
	<-entered
	for n := 2; n <= queue+1; n++ {
		f.Upsert(roomA, text(n, "queued"))
	}
	f.mu.Lock()
	require.Len(t, f.ops, queue, "the channel is full")
	require.Empty(t, f.dirty)
	f.mu.Unlock()

	// 200 more mutations in two rooms, one of them a mention of the person.
	for n := 100; n < 300; n++ {
		room := roomA
		if n%2 == 0 {
			room = roomB
		}
		m := text(n, fmt.Sprintf("burst %d", n))
		if n == 201 {
			m = mentionOwner(n)
		}
		f.Upsert(room, m)
	}
	f.mu.Lock()
	require.Len(t, f.dirty, 2, "one checkpoint per room, however many mutations")
	require.Len(t, f.dirty[roomA].attention, 1)
	seqA, seqB := f.rooms[roomA].seq, f.rooms[roomB].seq
	require.Len(t, f.ops, queue, "nothing more was queued")
	require.True(t, f.flushPending)
	f.mu.Unlock()
	require.Equal(t, int64(queue+1+100), seqA)
	require.Equal(t, int64(100), seqB)

	close(gate)
	b.clock.Advance(f.cfg.FlushInterval)
	b.waitStored(t, roomA, seqA)
	b.waitStored(t, roomB, seqB)

	// 1 held + 8 queued single writes for room A (the queued ones skipped
	// since the room turned dirty) and one checkpoint per room.
	for _, room := range []jam.RoomID{roomA, roomB} {
		f.mu.Lock()
		want := f.rooms[room].sorted()
		f.mu.Unlock()
		got := b.stored(t, room)
		require.Len(t, got, 10)
		for i, row := range got {
			w := want[len(want)-1-i]
			require.Equal(t, w.Message.ID, row.Message.ID)
			require.Equal(t, w.Seq, row.Seq)
			require.Equal(t, w.Message.Content, row.Message.Content)
		}
	}
	require.LessOrEqual(t, b.st.calls.Load(), int64(1+queue+2))
	att, err := b.st.AttentionList(t.Context(), b.ws, b.acct, 0)
	require.NoError(t, err)
	require.Len(t, att, 1)
	require.Equal(t, jam.PlatformMessageID(msgID(201)), att[0].MessageID)

	// Once flushed, the rooms are clean and writes queue again.
	f.Upsert(roomB, text(400, "after"))
	b.waitStored(t, roomB, seqB+1)
	f.mu.Lock()
	require.Empty(t, f.dirty)
	f.mu.Unlock()
}

// TestFeed_failedWriteRetriesAsCheckpoint makes the store fail one write:
// the room turns dirty and the next flush stores it, attention included.
func TestFeed_failedWriteRetriesAsCheckpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var once sync.Once
	b.st.BeforeApplyFunc = nil
	failing := &failingStore{gatedStore: b.st}
	failing.fail = func() bool { first := false; once.Do(func() { first = true }); return first }
	f := b.start(t, func(c *Config) { c.Store = failing })

	f.Upsert(roomA, mentionOwner(1))
	// The failed write reports on applied too; wait for the retry timer.
	r := <-b.st.applied
	require.Error(t, r.err)
	<-b.clock.scheduled
	b.clock.Advance(f.cfg.FlushInterval)
	b.waitStored(t, roomA, 1)
	att, err := b.st.AttentionList(t.Context(), b.ws, b.acct, 0)
	require.NoError(t, err)
	require.Len(t, att, 1)
}

// failingStore fails RoomCacheApply while fail says so.
type failingStore struct {
	*gatedStore
	fail func() bool
}

func (s *failingStore) RoomCacheApply(ctx context.Context, p store.RoomCacheApplyParams) error {
	if s.fail() {
		err := errors.New("disk on fire")
		s.applied <- applyResult{p: p, err: err}
		return err
	}
	return s.gatedStore.RoomCacheApply(ctx, p)
}

// TestFeed_reseedKeepsSequencesMonotonic restarts a feed on the same
// store: the projection comes back from the cache and the sequences
// continue upward.
func TestFeed_reseedKeepsSequencesMonotonic(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for n := 1; n <= 3; n++ {
		b.feed.Upsert(roomA, text(n, "m"))
	}
	require.NoError(t, b.feed.Stop(t.Context()), "stop writes what is queued")
	drain(b.pubs)

	// Band still has the three messages: the cold room's refresh finds
	// them identical to the cache.
	b.human.HistoryFunc = func(context.Context, string, int) ([]protocol.Message, error) {
		return []protocol.Message{text(3, "m"), text(2, "m"), text(1, "m")}, nil
	}
	b.feed = b.start(t, nil)
	v, err := b.feed.Messages(t.Context(), roomA, 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), v.Seq)
	require.Equal(t, []string{msgID(1), msgID(2), msgID(3)}, ids(v.Rows))
	require.Equal(t, []int64{1, 2, 3}, []int64{v.Rows[0].Seq, v.Rows[1].Seq, v.Rows[2].Seq})
	b.noPub(t)

	b.feed.Upsert(roomA, text(2, "m")) // identical to the cached row
	b.feed.Upsert(roomA, text(4, "m"))
	m := b.nextPub(t)
	require.Equal(t, int64(4), m.Seq, "the sequence continues after the restart")
	require.Equal(t, msgID(4), m.Message.ID)
	b.waitStored(t, roomA, 4)
}

func drain(ch chan Mutation) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestFeed_refreshSingleFlight starts concurrent refreshes of one room:
// they share one fetch.
func TestFeed_refreshSingleFlight(t *testing.T) {
	t.Parallel()
	const callers = 8
	release := make(chan struct{})
	fetching := make(chan struct{}, callers)
	b := setup(t, nil)
	b.human.HistoryFunc = func(ctx context.Context, _ string, _ int) ([]protocol.Message, error) {
		fetching <- struct{}{}
		<-release
		return []protocol.Message{text(2, "b"), text(1, "a")}, nil
	}
	joined := make(chan struct{}, callers)
	b.feed.flightHook = func() { joined <- struct{}{} }

	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() { errs <- b.feed.Refresh(t.Context(), roomA) })
	}
	<-fetching
	for range callers - 1 {
		<-joined
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), b.human.historyN.Load(), "one fetch for every caller")
	v, err := b.feed.Messages(t.Context(), roomA, 0)
	require.NoError(t, err)
	require.Equal(t, []string{msgID(1), msgID(2)}, ids(v.Rows))
	require.Equal(t, int64(1), b.human.historyN.Load(), "a refreshed room is read from the projection")
}

// TestFeed_refreshFollowerLeadsWhenLeaderGivesUp: a follower whose leader's
// caller cancelled does not inherit the cancellation.
func TestFeed_refreshFollowerLeadsWhenLeaderGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	first := make(chan struct{})
	b.human.HistoryFunc = func(ctx context.Context, _ string, _ int) ([]protocol.Message, error) {
		if b.human.historyN.Load() == 1 {
			close(first)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []protocol.Message{text(1, "a")}, nil
	}
	joined := make(chan struct{}, 1)
	b.feed.flightHook = func() { joined <- struct{}{} }
	lctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var leaderErr, followerErr error
	wg.Go(func() { leaderErr = b.feed.Refresh(lctx, roomA) })
	<-first
	wg.Go(func() { followerErr = b.feed.Refresh(t.Context(), roomA) })
	<-joined
	cancel()
	wg.Wait()
	require.ErrorIs(t, leaderErr, context.Canceled)
	require.NoError(t, followerErr)
	require.Equal(t, int64(2), b.human.historyN.Load())
}

// TestFeed_refreshMergesLiveMutations: mutations that arrive while the
// page is fetched win over the page, and rows Band no longer has go.
func TestFeed_refreshMergesLiveMutations(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	f := b.feed
	f.Upsert(roomA, text(1, "deleted on band while we were away"))
	f.Upsert(roomA, text(2, "b"))
	b.human.HistoryFunc = func(context.Context, string, int) ([]protocol.Message, error) {
		// Live mutations during the fetch: an edit of 2, a new 5, and a
		// delete of 3, which the stale page still has.
		f.Upsert(roomA, text(2, "b edited live"))
		f.Upsert(roomA, text(5, "live"))
		f.Delete(roomA, jam.PlatformMessageID(msgID(3)))
		return []protocol.Message{text(4, "d"), text(3, "c"), text(2, "b")}, nil
	}
	require.NoError(t, f.Refresh(t.Context(), roomA))
	v, err := f.Messages(t.Context(), roomA, 0)
	require.NoError(t, err)
	require.Equal(t, []string{msgID(2), msgID(4), msgID(5)}, ids(v.Rows))
	require.Equal(t, "b edited live", v.Rows[0].Message.Content)
	// Sequences only grow, and the final one names the last change.
	last := int64(0)
	for range 7 { // 2 upserts, 3 live, delete of 1, upsert of 4
		m := b.nextPub(t)
		require.Greater(t, m.Seq, last)
		last = m.Seq
	}
	b.noPub(t)
	require.Equal(t, last, v.Seq)
}

// TestFeed_refreshRefetchesBelowTheJournalFloor: when more live mutations
// arrive during a fetch than the journal keeps, the capture cannot be
// merged and the page is fetched again.
func TestFeed_refreshRefetchesBelowTheJournalFloor(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.JournalSize = 2 })
	f := b.feed
	b.human.HistoryFunc = func(context.Context, string, int) ([]protocol.Message, error) {
		if b.human.historyN.Load() == 1 {
			for n := 10; n < 13; n++ {
				f.Upsert(roomA, text(n, "burst"))
			}
		}
		return []protocol.Message{text(12, "burst"), text(11, "burst"), text(10, "burst")}, nil
	}
	require.NoError(t, f.Refresh(t.Context(), roomA))
	require.Equal(t, int64(2), b.human.historyN.Load(), "the first capture predated the journal floor")

	// With no room to merge at all, the refresh gives up.
	b.human.HistoryFunc = func(context.Context, string, int) ([]protocol.Message, error) {
		for n := range 3 {
			f.Upsert(roomA, text(20+n, fmt.Sprint(b.human.historyN.Load())))
		}
		return nil, nil
	}
	require.ErrorIs(t, f.Refresh(t.Context(), roomA), jam.ErrUnavailable)
}

// TestFeed_coldRoomServesCacheWhenBandFails: a failed refresh of a cached
// room serves the cache; of an uncached one, it fails.
func TestFeed_coldRoomServesCacheWhenBandFails(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.human.HistoryFunc = func(context.Context, string, int) ([]protocol.Message, error) {
		return nil, fmt.Errorf("band down: %w", jam.ErrUnavailable)
	}
	_, err := b.feed.Messages(t.Context(), roomA, 0)
	require.ErrorIs(t, err, jam.ErrUnavailable)
	b.feed.Upsert(roomA, text(1, "a"))
	v, err := b.feed.Messages(t.Context(), roomA, 0)
	require.NoError(t, err)
	require.Equal(t, []string{msgID(1)}, ids(v.Rows))
}

// TestFeed_attention checks which messages stage an attention item, and
// that it is written with the message.
func TestFeed_attention(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var withAttention []jam.PlatformMessageID
	var mu sync.Mutex
	b.st.BeforeApplyFunc = func(p store.RoomCacheApplyParams) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range p.Attention {
			require.Len(t, p.Upserts, 1)
			require.Equal(t, a.MessageID, p.Upserts[0].MessageID, "staged in the write of its message")
			withAttention = append(withAttention, a.MessageID)
		}
	}
	own := mentionOwner(2)
	own.SenderID = userID
	event := mentionOwner(3)
	event.MessageType = protocol.MessageThought
	for _, m := range []protocol.Message{
		mentionOwner(1),       // stages
		own,                   // the person's own message
		event,                 // not a text message
		text(4, "no mention"), // no token
		withDelivery(mentionOwner(1), "processing"), // an update of 1: already staged
	} {
		b.feed.Upsert(roomA, m)
	}
	b.waitStored(t, roomA, 5)
	mu.Lock()
	require.Equal(t, []jam.PlatformMessageID{jam.PlatformMessageID(msgID(1))}, withAttention)
	mu.Unlock()
	att, err := b.st.AttentionList(t.Context(), b.ws, b.acct, 0)
	require.NoError(t, err)
	require.Len(t, att, 1)
	require.Equal(t, jam.IdentityID(agentID), att[0].SenderID)
	require.Equal(t, roomA, att[0].Room)
}

func TestFeed_membershipGrace(t *testing.T) {
	t.Parallel()
	participant := protocol.Participant{ID: agentID, Type: protocol.TypeAgent, Name: "Coder"}
	platformRow := func(at time.Time) protocol.Message {
		ts := protocol.FormatTime(at)
		return protocol.Message{ID: msgID(77), Content: "Coder joined", MessageType: protocol.MessageSystem, SenderID: userID, SenderType: protocol.TypeUser,
			Metadata: protocol.MessageMetadata{Extra: []byte(`{"participant_id":"` + agentID + `"}`)}, InsertedAt: ts, UpdatedAt: ts}
	}

	t.Run("no platform row: a local row after the grace", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.feed.ParticipantAdded(roomA, participant)
		b.clock.Advance(time.Second)
		b.noPub(t)
		b.clock.Advance(time.Second)
		m := b.nextPub(t)
		require.Equal(t, MutationSystem, m.Kind)
		require.Zero(t, m.Seq)
		require.Equal(t, "Coder joined", m.Message.Content)
		require.Equal(t, protocol.MessageSystem, m.Message.MessageType)
		require.Equal(t, agentID, m.Message.SenderID)
		require.Equal(t, string(roomA), m.Message.ChatRoomID)

		v, err := b.feed.Messages(t.Context(), roomA, 0)
		require.NoError(t, err)
		require.Len(t, v.Rows, 1)
		require.True(t, v.Rows[0].Local)
		require.Equal(t, m.Message.ID, v.Rows[0].Message.ID)

		// The same join announced again is not a second row.
		b.feed.ParticipantAdded(roomA, participant)
		b.clock.Advance(2 * time.Second)
		b.noPub(t)

		// A platform row arriving later supersedes the local one.
		b.feed.Upsert(roomA, platformRow(b.clock.Now().Add(-3*time.Second)))
		b.nextPub(t)
		v, err = b.feed.Messages(t.Context(), roomA, 0)
		require.NoError(t, err)
		require.Len(t, v.Rows, 1)
		require.False(t, v.Rows[0].Local)
	})

	t.Run("platform row within the window: no local row", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.feed.ParticipantAdded(roomA, participant)
		b.feed.Upsert(roomA, platformRow(b.clock.Now().Add(time.Second)))
		b.nextPub(t)
		b.clock.Advance(2 * time.Second)
		b.noPub(t)
		sys, err := b.st.RoomSystemList(t.Context(), b.ws, b.acct, roomA, 0)
		require.NoError(t, err)
		require.Empty(t, sys)
	})

	t.Run("platform row outside the window does not count", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.feed.Upsert(roomA, platformRow(b.clock.Now().Add(-time.Minute)))
		b.nextPub(t)
		b.feed.ParticipantAdded(roomA, participant)
		b.clock.Advance(2 * time.Second)
		require.Equal(t, MutationSystem, b.nextPub(t).Kind)
	})

	t.Run("stop cancels pending joins", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.feed.ParticipantAdded(roomA, participant)
		require.Equal(t, 1, b.clock.pending())
		require.NoError(t, b.feed.Stop(t.Context()))
		require.Zero(t, b.clock.pending())
		b.clock.Advance(time.Minute)
		b.noPub(t)
	})
}

func TestFeed_roomRemovedRetiresKeepingTheSequence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	f := b.feed
	f.Upsert(roomA, text(1, "a"))
	f.Upsert(roomB, text(2, "b"))
	b.waitStored(t, roomA, 1)
	b.waitStored(t, roomB, 1)
	f.Retain([]jam.RoomID{roomB})
	f.Upsert(roomA, text(3, "back"))
	b.waitStored(t, roomA, 2)
	require.Equal(t, []string{msgID(3)}, ids(b.stored(t, roomA)))
	require.Equal(t, []string{msgID(2)}, ids(b.stored(t, roomB)))
}

func TestFeed_send(t *testing.T) {
	t.Parallel()
	coder, owner, other := "owner/coder", "owner", "owner/reviewer"
	roster := []protocol.Participant{
		{ID: agentID, Type: protocol.TypeAgent, Name: "Coder", Handle: &coder},
		{ID: userID, Type: protocol.TypeUser, Name: "Owner", Handle: &owner},
		{ID: "0190a1b2-0000-4000-8000-0000000000a1", Type: protocol.TypeAgent, Name: "Reviewer", Handle: &other},
	}
	cases := []struct {
		name      string
		params    SendParams
		wantBody  string
		wantIDs   []string
		wantWarn  int
		wantErrIs error
	}{
		{name: "handle in text", params: SendParams{Text: "@owner/coder please"}, wantBody: "@[[" + agentID + "]] please", wantIDs: []string{agentID}},
		{name: "slug in text", params: SendParams{Text: "hi @coder"}, wantBody: "hi @[[" + agentID + "]]", wantIDs: []string{agentID}},
		{name: "explicit id prepends a token", params: SendParams{Text: "look", Mentions: []string{agentID}}, wantBody: "@[[" + agentID + "]] look", wantIDs: []string{agentID}},
		{name: "explicit handle and text handle count once", params: SendParams{Text: "@coder go", Mentions: []string{"@owner/coder"}}, wantBody: "@[[" + agentID + "]] go", wantIDs: []string{agentID}},
		{name: "unknown handle stays text", params: SendParams{Text: "@nobody @reviewer"}, wantBody: "@nobody @[[0190a1b2-0000-4000-8000-0000000000a1]]", wantIDs: []string{"0190a1b2-0000-4000-8000-0000000000a1"}, wantWarn: 1},
		{name: "self only is refused", params: SendParams{Text: "@owner note to self"}, wantErrIs: jam.ErrInvalid},
		{name: "unknown explicit mention is refused", params: SendParams{Text: "x", Mentions: []string{"zed"}}, wantErrIs: jam.ErrInvalid},
		{name: "empty text", params: SendParams{Text: " "}, wantErrIs: jam.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			b.human.Roster = roster
			tc.params.Room = roomA
			res, err := b.feed.Send(t.Context(), tc.params)
			if tc.wantErrIs != nil {
				require.ErrorIs(t, err, tc.wantErrIs)
				require.Empty(t, b.human.posted)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantBody, res.Body)
			var got []string
			for _, m := range res.Mentions {
				got = append(got, m.ID)
			}
			require.Equal(t, tc.wantIDs, got)
			require.Len(t, res.Warnings, tc.wantWarn)
			require.Equal(t, jam.PlatformMessageID(msgID(9001)), res.ID)
			require.Len(t, b.human.posted, 1)
			require.Equal(t, tc.params.Text, b.human.posted[0].Message.Content)
		})
	}
}

func TestFeed_stopIsIdempotentAndRefusesInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.NoError(t, b.feed.Stop(t.Context()))
	require.NoError(t, b.feed.Stop(t.Context()))
	b.feed.Upsert(roomA, text(1, "late"))
	b.noPub(t)
	require.Error(t, b.feed.Start(t.Context()))

	f, err := New(b.feed.cfg)
	require.NoError(t, err)
	require.NoError(t, f.Stop(t.Context()), "stop before start")
}
