package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// evBundle is the fixture of the event log cases: a store with two
// workspaces. Events need no peers or rooms to exist.
type evBundle struct {
	st    store.Store
	ws    jam.WorkspaceID
	other jam.WorkspaceID
}

func setupEvents(t *testing.T, open func(t *testing.T) store.Store) *evBundle {
	t.Helper()
	b := &evBundle{st: open(t)}
	m := jam.NewMinter(nil, nil)
	for i, ws := range []*jam.WorkspaceID{&b.ws, &b.other} {
		w, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{
			ID: jam.New[jam.WorkspaceID](m), Name: fmt.Sprintf("ev%d", i), At: epoch,
		})
		require.NoError(t, err)
		*ws = w.ID
	}
	return b
}

// event returns a valid record of ws named kind.
func event(ws jam.WorkspaceID, kind string) store.EventRecord {
	return store.EventRecord{WorkspaceID: ws, Kind: kind, CreatedAt: epoch}
}

func (b *evBundle) append(t *testing.T, events ...store.EventRecord) []int64 {
	t.Helper()
	seqs, err := b.st.EventAppend(t.Context(), events)
	require.NoError(t, err)
	require.Len(t, seqs, len(events))
	return seqs
}

// kinds lists the kinds of every event of ws after after.
func (b *evBundle) kinds(t *testing.T, ws jam.WorkspaceID, after int64) []string {
	t.Helper()
	list, err := b.st.EventList(t.Context(), ws, after, store.MaxEventListLimit)
	require.NoError(t, err)
	out := []string{}
	for _, e := range list {
		out = append(out, e.Kind)
	}
	return out
}

// eventCases covers [store.Events].
func eventCases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("EventAppend_roundTrip", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		room := newUUID[jam.RoomID]()
		msg := newUUID[jam.PlatformMessageID]()
		full := store.EventRecord{
			WorkspaceID: b.ws, Kind: "message.queued", Peer: jam.PeerKey{Profile: "p", Scope: "a"},
			Room: jam.RoomID(strings.ToUpper(string(room))), MessageID: jam.PlatformMessageID(strings.ToUpper(string(msg))),
			Payload: json.RawMessage(`{"binding":"bind_x","n":1}`), CreatedAt: epoch,
		}
		bare := event(b.ws, "agent.state")
		bare.CreatedAt = epoch.Add(time.Second)
		seqs := b.append(t, full, bare)
		require.Greater(t, seqs[0], int64(0))
		require.Greater(t, seqs[1], seqs[0])

		list, err := b.st.EventList(t.Context(), b.ws, 0, 10)
		require.NoError(t, err)
		require.Len(t, list, 2)
		got := list[0]
		require.Equal(t, seqs[0], got.Seq)
		require.Equal(t, b.ws, got.WorkspaceID)
		require.Equal(t, "message.queued", got.Kind)
		require.Equal(t, full.Peer, got.Peer)
		require.Equal(t, room, got.Room, "UUIDs come back canonical")
		require.Equal(t, msg, got.MessageID)
		require.JSONEq(t, string(full.Payload), string(got.Payload))
		requireTime(t, epoch, got.CreatedAt)

		got = list[1]
		require.Equal(t, seqs[1], got.Seq)
		require.True(t, got.Peer.IsZero())
		require.Empty(t, got.Room)
		require.Empty(t, got.MessageID)
		require.JSONEq(t, `{}`, string(got.Payload), "an empty payload is stored as {}")
		requireTime(t, epoch.Add(time.Second), got.CreatedAt)
	})

	t.Run("EventAppend_orderAndMonotonic", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		// Sizes that are and are not powers of two, and one over a
		// dialect's likely chunk size, so chunked inserts keep order.
		var want []string
		var last int64
		for _, n := range []int{1, 3, 64, 300, 517} {
			batch := make([]store.EventRecord, n)
			for i := range batch {
				kind := fmt.Sprintf("k%d.%d", n, i)
				batch[i] = event(b.ws, kind)
				want = append(want, kind)
			}
			seqs := b.append(t, batch...)
			for _, s := range seqs {
				require.Greater(t, s, last, "sequences strictly increase across and within batches")
				last = s
			}
		}
		require.Equal(t, want, b.kinds(t, b.ws, 0))
		got, err := b.st.EventLast(t.Context(), b.ws)
		require.NoError(t, err)
		require.Equal(t, last, got)
	})

	t.Run("EventAppend_empty", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		seqs, err := b.st.EventAppend(t.Context(), nil)
		require.NoError(t, err)
		require.Empty(t, seqs)
	})

	t.Run("EventList_afterLimitAndWorkspace", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		s1 := b.append(t, event(b.ws, "a"), event(b.other, "x"), event(b.ws, "b"))
		s2 := b.append(t, event(b.ws, "c"), event(b.other, "y"))

		require.Equal(t, []string{"a", "b", "c"}, b.kinds(t, b.ws, 0))
		require.Equal(t, []string{"x", "y"}, b.kinds(t, b.other, 0))
		require.Equal(t, []string{"b", "c"}, b.kinds(t, b.ws, s1[0]))
		require.Equal(t, []string{"b", "c"}, b.kinds(t, b.ws, s1[1]), "after a sequence of another workspace")
		require.Equal(t, []string{"c"}, b.kinds(t, b.ws, s1[2]))
		require.Empty(t, b.kinds(t, b.ws, s2[0]))
		require.Empty(t, b.kinds(t, b.ws, s2[1]+1000))

		page, err := b.st.EventList(t.Context(), b.ws, 0, 2)
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, s1[0], page[0].Seq)
		require.Equal(t, s1[2], page[1].Seq)

		last, err := b.st.EventLast(t.Context(), b.ws)
		require.NoError(t, err)
		require.Equal(t, s2[0], last)
		last, err = b.st.EventLast(t.Context(), b.other)
		require.NoError(t, err)
		require.Equal(t, s2[1], last)
	})

	t.Run("EventLast_empty", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		last, err := b.st.EventLast(t.Context(), b.ws)
		require.NoError(t, err)
		require.Zero(t, last)
	})

	t.Run("EventPrune_keepNewestAndAge", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		var batch []store.EventRecord
		for i := range 10 {
			e := event(b.ws, fmt.Sprintf("e%d", i))
			if i%2 == 1 {
				e.WorkspaceID = b.other
			}
			e.CreatedAt = epoch.Add(time.Duration(i) * time.Hour)
			batch = append(batch, e)
		}
		b.append(t, batch...)

		// Nothing is old enough and all fit: nothing goes.
		n, err := b.st.EventPrune(t.Context(), 100, epoch)
		require.NoError(t, err)
		require.Zero(t, n)

		// Older than 2h: e0, e1 go.
		n, err = b.st.EventPrune(t.Context(), 100, epoch.Add(2*time.Hour))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{"e2", "e4", "e6", "e8"}, b.kinds(t, b.ws, 0))

		// Keep the 3 newest of each workspace: e2 and e3 go.
		n, err = b.st.EventPrune(t.Context(), 3, epoch)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{"e4", "e6", "e8"}, b.kinds(t, b.ws, 0))
		require.Equal(t, []string{"e5", "e7", "e9"}, b.kinds(t, b.other, 0))

		// A busy workspace does not push out a quiet one's events.
		var busy []store.EventRecord
		for i := range 10 {
			e := event(b.ws, fmt.Sprintf("b%d", i))
			e.CreatedAt = epoch.Add(time.Duration(10+i) * time.Hour)
			busy = append(busy, e)
		}
		b.append(t, busy...)
		n, err = b.st.EventPrune(t.Context(), 3, epoch)
		require.NoError(t, err)
		require.Equal(t, 10, n)
		require.Equal(t, []string{"b7", "b8", "b9"}, b.kinds(t, b.ws, 0))
		require.Equal(t, []string{"e5", "e7", "e9"}, b.kinds(t, b.other, 0), "the other workspace keeps its newest 3")
	})

	t.Run("EventPrune_sequencesNeverReused", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		first := b.append(t, event(b.ws, "a"), event(b.ws, "b"))
		n, err := b.st.EventPrune(t.Context(), 1, epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, 2, n, "everything older than before goes, whatever keepNewest says")
		last, err := b.st.EventLast(t.Context(), b.ws)
		require.NoError(t, err)
		require.Zero(t, last)

		again := b.append(t, event(b.ws, "c"))
		require.Greater(t, again[0], first[1], "a pruned sequence is never handed out again")
	})

	t.Run("EventAppend_concurrent", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		const writers, each = 8, 20
		seen := make(chan []int64, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				batch := make([]store.EventRecord, each)
				for i := range batch {
					batch[i] = event(b.ws, fmt.Sprintf("w%d.%d", w, i))
				}
				seqs, err := b.st.EventAppend(context.WithoutCancel(t.Context()), batch)
				if err == nil {
					seen <- seqs
				} else {
					seen <- nil
					t.Error(err)
				}
			})
		}
		wg.Wait()
		close(seen)
		all := map[int64]bool{}
		for seqs := range seen {
			for _, s := range seqs {
				require.False(t, all[s], "sequence %d handed out twice", s)
				all[s] = true
			}
		}
		require.Len(t, all, writers*each)
		require.Len(t, b.kinds(t, b.ws, 0), writers*each)
	})

	t.Run("Events_invalid", func(t *testing.T) {
		t.Parallel()
		b := setupEvents(t, open)
		mod := func(f func(e *store.EventRecord)) store.EventRecord {
			e := event(b.ws, "ok")
			f(&e)
			return e
		}
		tests := []struct {
			name string
			e    store.EventRecord
		}{
			{"no workspace", mod(func(e *store.EventRecord) { e.WorkspaceID = "" })},
			{"malformed workspace", mod(func(e *store.EventRecord) { e.WorkspaceID = "ws_nope" })},
			{"empty kind", mod(func(e *store.EventRecord) { e.Kind = "" })},
			{"long kind", mod(func(e *store.EventRecord) { e.Kind = strings.Repeat("k", store.MaxEventKindLen+1) })},
			{"upper-case kind", mod(func(e *store.EventRecord) { e.Kind = "Message" })},
			{"kind with space", mod(func(e *store.EventRecord) { e.Kind = "a b" })},
			{"half a peer", mod(func(e *store.EventRecord) { e.Peer = jam.PeerKey{Profile: "p"} })},
			{"bad peer", mod(func(e *store.EventRecord) { e.Peer = jam.PeerKey{Profile: "p", Scope: "../x"} })},
			{"bad room", mod(func(e *store.EventRecord) { e.Room = "room-1" })},
			{"bad message", mod(func(e *store.EventRecord) { e.MessageID = "msg-1" })},
			{"payload not JSON", mod(func(e *store.EventRecord) { e.Payload = json.RawMessage(`{"a":`) })},
			{"payload not an object", mod(func(e *store.EventRecord) { e.Payload = json.RawMessage(`[1]`) })},
			{"payload invalid UTF-8", mod(func(e *store.EventRecord) { e.Payload = json.RawMessage("{\"a\":\"\xff\"}") })},
			{"payload too large", mod(func(e *store.EventRecord) {
				e.Payload = json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxEventPayloadLen) + `"}`)
			})},
			{"zero time", mod(func(e *store.EventRecord) { e.CreatedAt = time.Time{} })},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				// The invalid record fails its whole batch.
				_, err := b.st.EventAppend(t.Context(), []store.EventRecord{event(b.ws, "good"), tt.e})
				require.ErrorIs(t, err, jam.ErrInvalid)
			})
		}
		t.Run("nothing written", func(t *testing.T) {
			t.Parallel()
			// Runs alongside the cases above: none of them may write.
			last, err := b.st.EventLast(t.Context(), b.ws)
			require.NoError(t, err)
			require.Zero(t, last)
		})
		calls := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"list bad workspace", func(ctx context.Context) error { _, err := b.st.EventList(ctx, "", 0, 1); return err }},
			{"list zero limit", func(ctx context.Context) error { _, err := b.st.EventList(ctx, b.ws, 0, 0); return err }},
			{"list huge limit", func(ctx context.Context) error {
				_, err := b.st.EventList(ctx, b.ws, 0, store.MaxEventListLimit+1)
				return err
			}},
			{"last bad workspace", func(ctx context.Context) error { _, err := b.st.EventLast(ctx, "ws_nope"); return err }},
			{"prune keep zero", func(ctx context.Context) error { _, err := b.st.EventPrune(ctx, 0, epoch); return err }},
			{"prune zero time", func(ctx context.Context) error { _, err := b.st.EventPrune(ctx, 1, time.Time{}); return err }},
		}
		for _, tt := range calls {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.ErrorIs(t, tt.call(t.Context()), jam.ErrInvalid)
			})
		}
	})
}
