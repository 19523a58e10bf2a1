package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// retirementCases covers [store.RoomRetirement] and local notice ids.
func retirementCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("RoomRetire_clearsTheRoomInOneStep", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room, kept := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, room, "main")
		b.putBinding(t, bnd)
		routed := b.queue(t, b.ws, b.peer.Key, room)
		require.Equal(t, bnd.ID, routed.Binding)
		keptRow := b.queue(t, b.ws, b.peer.Key, kept)
		spooled := b.spool(t, entry(b.ws, b.peer.Key, room), entry(b.ws, b.peer.Key, room))
		// The same room of another peer is not touched.
		otherPeer := b.putPeer(t, b.ws, b.acct, "b")
		otherRow := b.queue(t, b.ws, otherPeer.Key, room)

		res, err := b.st.RoomRetire(ctx, b.ws, b.peer.Key, room, epoch)
		require.NoError(t, err)
		require.Equal(t, store.RoomRetired{Spooled: 2, SpooledBytes: int64(2 * len(spooled[0].Sealed)), Queued: 1, Binding: bnd.ID}, res)

		_, err = b.st.QueueGet(ctx, b.ws, b.peer.Key, routed.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		_, err = b.st.BindingGet(ctx, b.ws, bnd.ID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		next, err := b.st.SpoolNext(ctx, b.ws, b.peer.Key, room, 10)
		require.NoError(t, err)
		require.Empty(t, next)
		for _, r := range []store.QueueRow{keptRow, otherRow} {
			_, err = b.st.QueueGet(ctx, b.ws, r.Peer, r.MessageID)
			require.NoError(t, err)
		}
		retired, err := b.st.RoomRetiredList(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.Equal(t, []jam.RoomID{room}, retired)

		// A late message of the retired room is dropped when it leaves the
		// spool, in a single move and in a batch alike.
		late := b.spool(t, entry(b.ws, b.peer.Key, room), entry(b.ws, b.peer.Key, room))
		row, err := b.st.SpoolMove(ctx, late[0].Seq, moveRow(late[0]))
		require.NoError(t, err)
		require.Zero(t, row, "dropped")
		r := moveRow(late[1])
		r.Seq = late[1].Seq
		got, err := b.st.SpoolMoveBatch(ctx, []store.QueueRow{r})
		require.NoError(t, err)
		require.Equal(t, store.MoveRetired, got[0].Outcome)
		require.Equal(t, len(late[1].Sealed), got[0].SpoolBytes)
		require.Empty(t, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Peer: b.peer.Key, Room: room}))

		// Retiring again is harmless; restoring lifts it once.
		_, err = b.st.RoomRetire(ctx, b.ws, b.peer.Key, room, epoch)
		require.NoError(t, err)
		ok, err := b.st.RoomRestore(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = b.st.RoomRestore(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.False(t, ok)
		again := b.queue(t, b.ws, b.peer.Key, room)
		require.Equal(t, room, again.Room, "a restored room queues again")

		_, err = b.st.RoomRetire(ctx, b.ws, b.peer.Key, "not-a-room", epoch)
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = b.st.RoomRetire(ctx, b.ws, b.peer.Key, room, time.Time{})
		require.ErrorIs(t, err, jam.ErrInvalid, "a zero time")
	})

	t.Run("Notice_idsQueueAndSettle", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		e := entry(b.ws, b.peer.Key, room)
		e.MessageID = jam.NoticeID(jam.New[jam.MessageID](b.minter))
		e = b.spool(t, e)[0]
		row, err := b.st.SpoolMove(ctx, e.Seq, moveRow(e))
		require.NoError(t, err)
		require.True(t, row.MessageID.IsNotice())
		got, err := b.st.QueueGet(ctx, b.ws, b.peer.Key, e.MessageID)
		require.NoError(t, err)
		require.Equal(t, row.MessageID, got.MessageID)
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, e.MessageID, epoch))
		res, err := b.st.SpoolAppend(ctx, []store.SpoolEntry{e})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, res.Appended, "a settled notice is never queued again")

		bad := entry(b.ws, b.peer.Key, room)
		bad.MessageID = jam.NoticePrefix + "nope"
		_, err = b.st.SpoolAppend(ctx, []store.SpoolEntry{bad})
		require.ErrorIs(t, err, jam.ErrInvalid)
	})
}
