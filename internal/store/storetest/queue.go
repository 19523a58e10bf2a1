package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// queueCases covers [store.Queue].
func queueCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Queue_markAndSettle", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		row := b.queue(t, b.ws, b.peer.Key, room)
		require.True(t, row.ClaimedAt.IsZero())
		mark := func(state string, at time.Time) error {
			return b.st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: b.ws, Peer: b.peer.Key, MessageID: row.MessageID, State: state, At: at})
		}

		require.NoError(t, mark(store.QueueClaimed, epoch.Add(time.Second)))
		got, err := b.st.QueueGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.NoError(t, err)
		require.Equal(t, store.QueueClaimed, got.State)
		requireTime(t, epoch.Add(time.Second), got.ClaimedAt)
		require.True(t, got.DeliveredAt.IsZero())
		require.Zero(t, got.Attempts)

		require.NoError(t, mark(store.QueueDelivered, epoch.Add(2*time.Second)))
		require.NoError(t, mark(store.QueueClaimed, epoch.Add(3*time.Second))) // redelivery
		require.NoError(t, mark(store.QueueDelivered, epoch.Add(4*time.Second)))
		got, err = b.st.QueueGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.NoError(t, err)
		require.Equal(t, store.QueueDelivered, got.State)
		require.Equal(t, 2, got.Attempts)
		requireTime(t, epoch.Add(3*time.Second), got.ClaimedAt)
		requireTime(t, epoch.Add(4*time.Second), got.DeliveredAt)

		require.ErrorIs(t, b.st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: b.other, Peer: b.peer.Key,
			MessageID: row.MessageID, State: store.QueueClaimed, At: epoch}), jam.ErrNotFound)
		require.ErrorIs(t, b.st.QueueSettle(ctx, b.other, b.peer.Key, row.MessageID, epoch), jam.ErrNotFound)

		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, row.MessageID, epoch))
		_, err = b.st.QueueGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, row.MessageID, epoch), "settling twice is idempotent")
		require.ErrorIs(t, mark(store.QueueClaimed, epoch), jam.ErrNotFound)
		require.ErrorIs(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, newUUID[jam.PlatformMessageID](), epoch), jam.ErrNotFound)

		// A replay of the settled message is not spooled again.
		replay := entry(b.ws, b.peer.Key, room)
		replay.MessageID = row.MessageID
		res, err := b.st.SpoolAppend(ctx, []store.SpoolEntry{replay})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, res.Appended)
	})

	t.Run("QueueList_selections", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		roomA, roomB := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		other := b.putPeer(t, b.ws, b.acct, "b")
		bnd := b.binding(b.ws, b.peer.Key, roomA, "main")
		b.putBinding(t, bnd)

		a1 := b.queue(t, b.ws, b.peer.Key, roomA)
		b1 := b.queue(t, b.ws, b.peer.Key, roomB)
		o1 := b.queue(t, b.ws, other.Key, roomA)
		a2 := b.queue(t, b.ws, b.peer.Key, roomA)
		b2 := b.queue(t, b.ws, b.peer.Key, roomB)
		otherAcct, err := b.st.AccountGet(ctx, b.other, "p")
		require.NoError(t, err)
		b.putPeer(t, b.other, otherAcct, "a")
		b.queue(t, b.other, b.peer.Key, roomA) // another workspace's row
		// The inbox's rows: routed and delivered. a1 is only claimed.
		mark := func(r store.QueueRow, state string) {
			require.NoError(t, b.st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: b.ws, Peer: r.Peer, MessageID: r.MessageID, State: state, At: time.Now()}))
		}
		mark(a1, store.QueueClaimed)
		mark(a2, store.QueueDelivered)

		ws := b.ws
		tests := []struct {
			name string
			p    store.QueueListParams
			want []store.QueueRow
		}{
			{"binding", store.QueueListParams{WorkspaceID: ws, Binding: bnd.ID}, []store.QueueRow{a1, a2}},
			{"binding limit", store.QueueListParams{WorkspaceID: ws, Binding: bnd.ID, Limit: 1}, []store.QueueRow{a1}},
			{"binding and peer", store.QueueListParams{WorkspaceID: ws, Binding: bnd.ID, Peer: other.Key}, nil},
			{"unrouted", store.QueueListParams{WorkspaceID: ws, Unrouted: true}, []store.QueueRow{b1, o1, b2}},
			{"unrouted of a peer", store.QueueListParams{WorkspaceID: ws, Unrouted: true, Peer: b.peer.Key}, []store.QueueRow{b1, b2}},
			{"unrouted of a room", store.QueueListParams{WorkspaceID: ws, Unrouted: true, Room: roomA}, []store.QueueRow{o1}},
			{"peer", store.QueueListParams{WorkspaceID: ws, Peer: b.peer.Key}, []store.QueueRow{a1, b1, a2, b2}},
			{"peer and room", store.QueueListParams{WorkspaceID: ws, Peer: b.peer.Key, Room: roomB}, []store.QueueRow{b1, b2}},
			{"peer limit", store.QueueListParams{WorkspaceID: ws, Peer: b.peer.Key, Limit: 3}, []store.QueueRow{a1, b1, a2}},
			{"workspace", store.QueueListParams{WorkspaceID: ws}, []store.QueueRow{a1, b1, o1, a2, b2}},
			{"workspace room", store.QueueListParams{WorkspaceID: ws, Room: roomA}, []store.QueueRow{a1, o1, a2}},
			{"other workspace binding", store.QueueListParams{WorkspaceID: b.other, Binding: bnd.ID}, nil},
			{"delivered of a peer", store.QueueListParams{WorkspaceID: ws, Peer: b.peer.Key, Delivered: true}, []store.QueueRow{a2}},
			{"delivered of a binding", store.QueueListParams{WorkspaceID: ws, Binding: bnd.ID, Delivered: true}, []store.QueueRow{a2}},
			{"delivered of a workspace", store.QueueListParams{WorkspaceID: ws, Delivered: true, Limit: 5}, []store.QueueRow{a2}},
			{"delivered of another room", store.QueueListParams{WorkspaceID: ws, Delivered: true, Room: roomB}, nil},
			{"peer after", store.QueueListParams{WorkspaceID: ws, Peer: b.peer.Key, After: b1.Seq, Limit: 1}, []store.QueueRow{a2}},
			{"workspace after the last", store.QueueListParams{WorkspaceID: ws, After: b2.Seq}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.Equal(t, ids(tt.want...), b.list(t, tt.p))
			})
		}
	})

	t.Run("QueueRooms", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		roomA, roomB := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		if roomA > roomB {
			roomA, roomB = roomB, roomA
		}
		other := b.putPeer(t, b.ws, b.acct, "b")
		b.putBinding(t, b.binding(b.ws, b.peer.Key, roomA, "main"))
		a1 := b.queue(t, b.ws, b.peer.Key, roomA) // routed
		b.queue(t, b.ws, b.peer.Key, roomA)
		b1 := b.queue(t, b.ws, b.peer.Key, roomB) // unrouted
		b.queue(t, b.ws, other.Key, newUUID[jam.RoomID]())
		got, err := b.st.QueueRooms(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, roomA, got[0].Room)
		require.True(t, got[0].FirstReceived.Equal(a1.ReceivedAt.Truncate(time.Microsecond)), "%v != %v", got[0].FirstReceived, a1.ReceivedAt)
		require.Equal(t, roomB, got[1].Room)
		require.True(t, got[1].FirstReceived.Equal(b1.ReceivedAt.Truncate(time.Microsecond)))
		none, err := b.st.QueueRooms(ctx, b.other, b.peer.Key)
		require.NoError(t, err)
		require.Empty(t, none, "another workspace's peer of the same key has none")
		_, err = b.st.QueueRooms(ctx, b.ws, jam.PeerKey{})
		require.ErrorIs(t, err, jam.ErrInvalid)
	})

	t.Run("QueuePruneUnrouted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		other := b.putPeer(t, b.ws, b.acct, "b")
		at := func(key jam.PeerKey, received time.Time) store.QueueRow {
			e := entry(b.ws, key, room)
			e.ReceivedAt = received
			e = b.spool(t, e)[0]
			row, err := b.st.SpoolMove(ctx, e.Seq, moveRow(e))
			require.NoError(t, err)
			return row
		}
		old := at(b.peer.Key, epoch)
		mine := []store.QueueRow{at(b.peer.Key, epoch.Add(time.Hour)), at(b.peer.Key, epoch.Add(2*time.Hour)), at(b.peer.Key, epoch.Add(3*time.Hour))}
		theirs := at(other.Key, epoch.Add(time.Hour))
		// Routed rows are never pruned, however old.
		routedRoom := newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, routedRoom, "main")
		b.putBinding(t, bnd)
		e := entry(b.ws, b.peer.Key, routedRoom)
		e = b.spool(t, e)[0]
		routed, err := b.st.SpoolMove(ctx, e.Seq, moveRow(e))
		require.NoError(t, err)

		n, err := b.st.QueuePruneUnrouted(ctx, epoch.Add(time.Minute), 2)
		require.NoError(t, err)
		require.Equal(t, 2, n, "the old row, then the oldest beyond two of the peer")
		require.Equal(t, ids(mine[1], mine[2], theirs), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true}))
		require.Equal(t, ids(routed), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: bnd.ID}))
		_, err = b.st.QueueGet(ctx, b.ws, b.peer.Key, old.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)

		// A pruned message was not settled: Band may deliver it again.
		replay := entry(b.ws, b.peer.Key, room)
		replay.MessageID = old.MessageID
		res, err := b.st.SpoolAppend(ctx, []store.SpoolEntry{replay})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, res.Appended)

		n, err = b.st.QueuePruneUnrouted(ctx, epoch, 0)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.Empty(t, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true}))
	})
	messagingInvalid(t, setup, "Queue_invalidParams", "queue ", "prune ")
}
