package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// spoolCases covers [store.Spool].
func spoolCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("SpoolAppend_dedupe", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		spooled := b.spool(t, entry(b.ws, b.peer.Key, room))[0]
		queued := b.queue(t, b.ws, b.peer.Key, room)
		settled := b.queue(t, b.ws, b.peer.Key, room)
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, settled.MessageID, epoch))
		for id, want := range map[jam.PlatformMessageID]bool{settled.MessageID: true, queued.MessageID: false, spooled.MessageID: false} {
			got, err := b.st.MessageSettled(ctx, b.ws, b.peer.Key, id)
			require.NoError(t, err)
			require.Equal(t, want, got, "MessageSettled %s", id)
		}
		got, err := b.st.MessageSettled(ctx, b.other, b.peer.Key, settled.MessageID)
		require.NoError(t, err)
		require.False(t, got, "settled in one workspace only")

		fresh := entry(b.ws, b.peer.Key, room)
		again := func(id jam.PlatformMessageID) store.SpoolEntry {
			e := entry(b.ws, b.peer.Key, room)
			e.MessageID = id
			return e
		}
		otherPeer := b.putPeer(t, b.ws, b.acct, "b")
		samePeerElsewhere := fresh
		samePeerElsewhere.Peer = otherPeer.Key
		otherWS := fresh
		otherWS.WorkspaceID = b.other
		upper := again(jam.PlatformMessageID(strings.ToUpper(string(fresh.MessageID))))

		batch := []store.SpoolEntry{
			again(spooled.MessageID), // already spooled
			fresh,                    // new
			again(queued.MessageID),  // already queued
			fresh,                    // duplicate within the batch
			again(settled.MessageID), // already settled
			samePeerElsewhere,        // the same id for another peer is new
			otherWS,                  // and in another workspace
			upper,                    // upper case is the same message
		}
		res, err := b.st.SpoolAppend(ctx, batch)
		require.NoError(t, err)
		require.Equal(t, []bool{false, true, false, false, false, true, true, false}, res.Appended)
		require.Len(t, res.Seqs, len(batch))
		require.Greater(t, res.Seqs[1], spooled.Seq)
		require.Greater(t, res.Seqs[5], res.Seqs[1])
		require.Greater(t, res.Seqs[6], res.Seqs[5])

		next, err := b.st.SpoolNext(ctx, b.ws, b.peer.Key, room, 10)
		require.NoError(t, err)
		require.Len(t, next, 2)
		require.Equal(t, spooled.MessageID, next[0].MessageID)
		require.Equal(t, fresh.MessageID, next[1].MessageID)
		require.Equal(t, res.Seqs[1], next[1].Seq)

		empty, err := b.st.SpoolAppend(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, empty.Appended)
	})

	t.Run("SpoolAppend_largeBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room := newUUID[jam.RoomID]()
		batch := make([]store.SpoolEntry, 700)
		for i := range batch {
			batch[i] = entry(b.ws, b.peer.Key, room)
		}
		batch[650].MessageID = batch[3].MessageID // a duplicate far apart
		res, err := b.st.SpoolAppend(t.Context(), batch)
		require.NoError(t, err)
		for i := range batch {
			require.Equal(t, i != 650, res.Appended[i], "entry %d", i)
			if i > 0 && i != 650 && i != 651 {
				require.Greater(t, res.Seqs[i], res.Seqs[i-1], "seqs follow the batch order")
			}
		}
		next, err := b.st.SpoolNext(t.Context(), b.ws, b.peer.Key, room, 1000)
		require.NoError(t, err)
		require.Len(t, next, 699)
		require.Equal(t, batch[0].MessageID, next[0].MessageID)
		require.Equal(t, batch[699].MessageID, next[698].MessageID)
	})

	t.Run("SpoolAppend_invalidEntryWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		good := entry(b.ws, b.peer.Key, newUUID[jam.RoomID]())
		bad := good
		bad.MessageID, bad.Sealed = newUUID[jam.PlatformMessageID](), nil
		_, err := b.st.SpoolAppend(t.Context(), []store.SpoolEntry{good, bad})
		require.ErrorIs(t, err, jam.ErrInvalid)
		usage, err := b.st.SpoolUsage(t.Context())
		require.NoError(t, err)
		require.Empty(t, usage)
	})

	t.Run("Spool_lanesOrderAndUsage", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		roomA, roomB := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		other := b.putPeer(t, b.ws, b.acct, "b")
		mk := func(key jam.PeerKey, room jam.RoomID, size int) store.SpoolEntry {
			e := entry(b.ws, key, room)
			e.Sealed = make([]byte, size)
			e.ReceivedAt = epoch.Add(time.Duration(size) * time.Second)
			return e
		}
		// Interleaved across lanes, in several batches.
		all := b.spool(t, mk(b.peer.Key, roomB, 10), mk(b.peer.Key, roomA, 20))
		all = append(all, b.spool(t, mk(other.Key, roomA, 5), mk(b.peer.Key, roomB, 30))...)
		all = append(all, b.spool(t, mk(b.peer.Key, roomA, 40))...)

		lane, err := b.st.SpoolNext(ctx, b.ws, b.peer.Key, roomA, 10)
		require.NoError(t, err)
		require.Len(t, lane, 2)
		requireSpoolEntry(t, all[1], lane[0])
		requireSpoolEntry(t, all[4], lane[1])
		lane, err = b.st.SpoolNext(ctx, b.ws, b.peer.Key, roomB, 1)
		require.NoError(t, err)
		require.Len(t, lane, 1, "limit")
		requireSpoolEntry(t, all[0], lane[0])
		lane, err = b.st.SpoolNext(ctx, b.other, b.peer.Key, roomA, 10)
		require.NoError(t, err)
		require.Empty(t, lane, "another workspace's lane")

		lanes, err := b.st.SpoolLanes(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []store.Lane{
			{WorkspaceID: b.ws, Peer: b.peer.Key, Room: roomA},
			{WorkspaceID: b.ws, Peer: b.peer.Key, Room: roomB},
			{WorkspaceID: b.ws, Peer: other.Key, Room: roomA},
		}, lanes)

		usage, err := b.st.SpoolUsage(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []store.SpoolUsage{
			{WorkspaceID: b.ws, Peer: b.peer.Key, Entries: 4, Bytes: 100},
			{WorkspaceID: b.ws, Peer: other.Key, Entries: 1, Bytes: 5},
		}, usage)

		// Moving and dropping entries returns their usage.
		_, err = b.st.SpoolMove(ctx, all[0].Seq, moveRow(all[0]))
		require.NoError(t, err)
		require.NoError(t, b.st.SpoolDrop(ctx, all[2].Seq, epoch))
		usage, err = b.st.SpoolUsage(ctx)
		require.NoError(t, err)
		require.Equal(t, []store.SpoolUsage{{WorkspaceID: b.ws, Peer: b.peer.Key, Entries: 3, Bytes: 90}}, usage)
	})

	t.Run("SpoolMove_routesInsideTheMove", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()

		e := b.spool(t, entry(b.ws, b.peer.Key, room))[0]
		row := moveRow(e)
		row.Binding = jam.New[jam.BindingID](b.minter) // ignored
		row.ReceivedAt = epoch.Add(time.Hour)          // the entry's arrival wins
		got, err := b.st.SpoolMove(ctx, e.Seq, row)
		require.NoError(t, err)
		require.Empty(t, got.Binding, "no binding owns the room: unrouted")
		require.Equal(t, e.Seq, got.Seq)
		require.Equal(t, store.QueueQueued, got.State)
		require.Zero(t, got.Attempts)
		requireTime(t, e.ReceivedAt, got.ReceivedAt)
		require.Equal(t, row.Sealed, got.Sealed)
		require.Equal(t, row.SenderID, got.SenderID)
		stored, err := b.st.QueueGet(ctx, b.ws, b.peer.Key, e.MessageID)
		require.NoError(t, err)
		requireQueueRow(t, got, stored)

		bnd := b.binding(b.ws, b.peer.Key, room, "main")
		b.putBinding(t, bnd)
		e2 := b.spool(t, entry(b.ws, b.peer.Key, room))[0]
		row2 := moveRow(e2)
		row2.Binding = ""
		row2.AddressedToUser = true
		got, err = b.st.SpoolMove(ctx, e2.Seq, row2)
		require.NoError(t, err)
		require.Equal(t, bnd.ID, got.Binding, "the room's owner at the time of the move")
		require.True(t, got.AddressedToUser)

		// Identity fields may be left zero: they come from the entry.
		e3 := b.spool(t, entry(b.ws, b.peer.Key, room))[0]
		got, err = b.st.SpoolMove(ctx, e3.Seq, store.QueueRow{WorkspaceID: b.ws, Sealed: []byte("x")})
		require.NoError(t, err)
		require.Equal(t, e3.MessageID, got.MessageID)
		require.Equal(t, room, got.Room)
		require.Equal(t, b.peer.Key, got.Peer)
		require.Empty(t, got.SenderID)
	})

	t.Run("SpoolMove_idempotentAndAtomic", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		e := b.spool(t, entry(b.ws, b.peer.Key, room))[0]

		// A move that fails leaves the entry where it was and queues nothing.
		wrong := moveRow(e)
		wrong.Room = newUUID[jam.RoomID]()
		_, err := b.st.SpoolMove(ctx, e.Seq, wrong)
		require.ErrorIs(t, err, jam.ErrInvalid)
		otherWS := moveRow(e)
		otherWS.WorkspaceID = b.other
		_, err = b.st.SpoolMove(ctx, e.Seq, otherWS)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's entry")
		_, err = b.st.QueueGet(ctx, b.ws, b.peer.Key, e.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		next, err := b.st.SpoolNext(ctx, b.ws, b.peer.Key, room, 10)
		require.NoError(t, err)
		require.Len(t, next, 1)

		first, err := b.st.SpoolMove(ctx, e.Seq, moveRow(e))
		require.NoError(t, err)
		next, err = b.st.SpoolNext(ctx, b.ws, b.peer.Key, room, 10)
		require.NoError(t, err)
		require.Empty(t, next, "the entry left the spool")

		// A second move of the same seq finds nothing and changes nothing.
		again := moveRow(e)
		again.Sealed = []byte("other")
		_, err = b.st.SpoolMove(ctx, e.Seq, again)
		require.ErrorIs(t, err, jam.ErrNotFound)
		got, err := b.st.QueueGet(ctx, b.ws, b.peer.Key, e.MessageID)
		require.NoError(t, err)
		requireQueueRow(t, first, got)
	})

	t.Run("Spool_sequencesNeverGoBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		var last int64
		for range 3 {
			// Empty the spool between appends: a reused sequence would
			// order a new message before an older queued one.
			row := b.queue(t, b.ws, b.peer.Key, room)
			require.Greater(t, row.Seq, last)
			last = row.Seq
		}
		usage, err := b.st.SpoolUsage(ctx)
		require.NoError(t, err)
		require.Empty(t, usage)
	})

	t.Run("SpoolDrop_settles", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		e := b.spool(t, entry(b.ws, b.peer.Key, room))[0]
		require.NoError(t, b.st.SpoolDrop(ctx, e.Seq, epoch))
		require.ErrorIs(t, b.st.SpoolDrop(ctx, e.Seq, epoch), jam.ErrNotFound)

		res, err := b.st.SpoolAppend(ctx, []store.SpoolEntry{e})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, res.Appended, "a dropped message is settled")
		_, err = b.st.SpoolMove(ctx, e.Seq, moveRow(e))
		require.ErrorIs(t, err, jam.ErrNotFound)
		// Settling it again is idempotent.
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, e.MessageID, epoch))
	})

	t.Run("Spool_concurrentAppends", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room := newUUID[jam.RoomID]()
		const writers, each = 8, 20
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				for range each {
					res, err := b.st.SpoolAppend(t.Context(), []store.SpoolEntry{entry(b.ws, b.peer.Key, room)})
					if err == nil && !res.Appended[0] {
						err = fmt.Errorf("a fresh message was skipped")
					}
					if err != nil {
						errs[w] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for w, err := range errs {
			require.NoError(t, err, "writer %d", w)
		}
		next, err := b.st.SpoolNext(t.Context(), b.ws, b.peer.Key, room, writers*each+1)
		require.NoError(t, err)
		require.Len(t, next, writers*each)
	})

	t.Run("SpoolMoveBatch_outcomes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room, other := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, room, "main")
		b.putBinding(t, bnd)

		queued := b.queue(t, b.ws, b.peer.Key, room)
		es := b.spool(t, entry(b.ws, b.peer.Key, room), entry(b.ws, b.peer.Key, other))
		// es[0] is named twice: its second move finds nothing. (A settled
		// or already queued message is never spooled — SpoolAppend skips
		// it — so those outcomes are covered through SpoolMove above.)
		rows := []store.QueueRow{moveRow(es[0]), moveRow(es[1]), moveRow(es[0])}
		rows[0].Seq, rows[1].Seq, rows[2].Seq = es[0].Seq, es[1].Seq, es[0].Seq
		got, err := b.st.SpoolMoveBatch(ctx, rows)
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Equal(t, store.MoveQueued, got[0].Outcome)
		require.Equal(t, bnd.ID, got[0].Row.Binding)
		require.Equal(t, len(es[0].Sealed), got[0].SpoolBytes)
		require.Equal(t, store.MoveQueued, got[1].Outcome)
		require.Empty(t, got[1].Row.Binding, "no binding owns the other room")
		require.Equal(t, store.MoveMissing, got[2].Outcome, "moved earlier in the same batch")
		require.Zero(t, got[2].SpoolBytes)
		require.Equal(t, []jam.PlatformMessageID{queued.MessageID, es[0].MessageID}, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: bnd.ID}))

		// An invalid row fails the whole batch and moves nothing.
		e := b.spool(t, entry(b.ws, b.peer.Key, room))[0]
		good := moveRow(e)
		good.Seq = e.Seq
		_, err = b.st.SpoolMoveBatch(ctx, []store.QueueRow{good, {Seq: 0, WorkspaceID: b.ws, Sealed: []byte("x")}})
		require.ErrorIs(t, err, jam.ErrInvalid)
		next, err := b.st.SpoolNext(ctx, b.ws, b.peer.Key, room, 10)
		require.NoError(t, err)
		require.Len(t, next, 1)
	})
	messagingInvalid(t, setup, "Spool_invalidParams", "spool ", "move ", "drop ")
}
