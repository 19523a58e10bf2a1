package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// bindingCases covers [store.Bindings].
func bindingCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Binding_putGetForRoomList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, jam.RoomID(strings.ToUpper(string(room))), "main")
		require.Zero(t, b.putBinding(t, bnd))
		bnd.Room = room // stored canonical

		got, err := b.st.BindingGet(ctx, b.ws, bnd.ID)
		require.NoError(t, err)
		requireBinding(t, bnd, got)
		got, err = b.st.BindingForRoom(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		requireBinding(t, bnd, got)

		other := b.putPeer(t, b.ws, b.acct, "b")
		b2 := b.binding(b.ws, other.Key, room, "main") // same room and alias, other peer
		b.putBinding(t, b2)
		b3 := b.binding(b.ws, b.peer.Key, newUUID[jam.RoomID](), "aaa")
		b.putBinding(t, b3)

		list, err := b.st.BindingList(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.Equal(t, []jam.BindingID{b3.ID, bnd.ID}, bindingIDs(list), "by alias")
		list, err = b.st.BindingList(ctx, b.ws, jam.PeerKey{})
		require.NoError(t, err)
		require.Equal(t, []jam.BindingID{b3.ID, bnd.ID, b2.ID}, bindingIDs(list), "by peer, then alias")

		// Update in place keeps CreatedAt.
		upd := bnd
		upd.SessionID, upd.Mode, upd.CreatedAt = jam.New[jam.SessionID](b.minter), jam.RuntimeOwned, epoch.Add(time.Hour)
		require.Zero(t, b.putBinding(t, upd))
		got, err = b.st.BindingGet(ctx, b.ws, bnd.ID)
		require.NoError(t, err)
		upd.CreatedAt = epoch
		requireBinding(t, upd, got)

		// An alias another binding of the peer holds.
		dup := b.binding(b.ws, b.peer.Key, newUUID[jam.RoomID](), "aaa")
		_, err = b.st.BindingPut(ctx, dup)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		// A missing peer.
		_, err = b.st.BindingPut(ctx, b.binding(b.ws, jam.PeerKey{Profile: "p", Scope: "ghost"}, room, "x"))
		require.ErrorIs(t, err, jam.ErrNotFound)
		_, err = b.st.BindingForRoom(ctx, b.ws, b.peer.Key, newUUID[jam.RoomID]())
		require.ErrorIs(t, err, jam.ErrNotFound)
		_, err = b.st.BindingGet(ctx, b.ws, jam.New[jam.BindingID](b.minter))
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Binding_workspaceIsolation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, room, "main")
		b.putBinding(t, bnd)
		otherAcct, err := b.st.AccountGet(ctx, b.other, "p")
		require.NoError(t, err)
		b.putPeer(t, b.other, otherAcct, "a")

		_, err = b.st.BindingGet(ctx, b.other, bnd.ID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		_, err = b.st.BindingForRoom(ctx, b.other, b.peer.Key, room)
		require.ErrorIs(t, err, jam.ErrNotFound)
		list, err := b.st.BindingList(ctx, b.other, jam.PeerKey{})
		require.NoError(t, err)
		require.Empty(t, list)
		require.ErrorIs(t, b.st.BindingDelete(ctx, b.other, bnd.ID), jam.ErrNotFound)

		// The id cannot be taken over from the other workspace.
		steal := bnd
		steal.WorkspaceID = b.other
		_, err = b.st.BindingPut(ctx, steal)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		got, err := b.st.BindingGet(ctx, b.ws, bnd.ID)
		require.NoError(t, err)
		requireBinding(t, bnd, got)
	})

	t.Run("Binding_stealMovesRows", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room, elsewhere := newUUID[jam.RoomID](), newUUID[jam.RoomID]()

		// An unrouted row of the room, re-homed when the room is first
		// bound, then rows of that first owner: all of them must end on
		// the new owner, in arrival order.
		u1 := b.queue(t, b.ws, b.peer.Key, room)
		uOther := b.queue(t, b.ws, b.peer.Key, elsewhere)
		first := b.binding(b.ws, b.peer.Key, room, "first")
		require.Equal(t, 1, b.putBinding(t, first))
		r1 := b.queue(t, b.ws, b.peer.Key, room)
		require.Equal(t, first.ID, r1.Binding)
		r2 := b.queue(t, b.ws, b.peer.Key, room)

		// A different peer's rows in the same room are not touched.
		other := b.putPeer(t, b.ws, b.acct, "b")
		ob := b.binding(b.ws, other.Key, room, "first")
		b.putBinding(t, ob)
		o1 := b.queue(t, b.ws, other.Key, room)

		second := b.binding(b.ws, b.peer.Key, room, "second")
		require.Equal(t, 3, b.putBinding(t, second))
		_, err := b.st.BindingGet(ctx, b.ws, first.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "the previous owner is replaced")
		owner, err := b.st.BindingForRoom(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.Equal(t, second.ID, owner.ID)

		require.Equal(t, ids(u1, r1, r2), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: second.ID}))
		require.Empty(t, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: first.ID}))
		require.Equal(t, ids(uOther), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true}))
		require.Equal(t, ids(o1), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: ob.ID}))

		// A steal may take over the old owner's alias.
		third := b.binding(b.ws, b.peer.Key, room, "second")
		require.Equal(t, 3, b.putBinding(t, third))
	})

	t.Run("Binding_moveToAnotherRoom", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room, next := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, room, "main")
		b.putBinding(t, bnd)
		old := b.queue(t, b.ws, b.peer.Key, room)
		waiting := b.queue(t, b.ws, b.peer.Key, next)
		require.Empty(t, waiting.Binding)

		// Updating the binding in place onto another room leaves the old
		// room's rows unrouted and takes the new room's.
		bnd.Room = next
		require.Equal(t, 1, b.putBinding(t, bnd))
		require.Equal(t, ids(waiting), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: bnd.ID}))
		require.Equal(t, ids(old), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true}))
		_, err := b.st.BindingForRoom(t.Context(), b.ws, b.peer.Key, room)
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Binding_deleteUnroutes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		bnd := b.binding(b.ws, b.peer.Key, room, "main")
		b.putBinding(t, bnd)
		r1 := b.queue(t, b.ws, b.peer.Key, room)
		r2 := b.queue(t, b.ws, b.peer.Key, room)

		require.NoError(t, b.st.BindingDelete(ctx, b.ws, bnd.ID))
		_, err := b.st.BindingGet(ctx, b.ws, bnd.ID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		require.Equal(t, ids(r1, r2), b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true, Peer: b.peer.Key}))
		got, err := b.st.QueueGet(ctx, b.ws, b.peer.Key, r1.MessageID)
		require.NoError(t, err)
		require.Empty(t, got.Binding)
		require.ErrorIs(t, b.st.BindingDelete(ctx, b.ws, bnd.ID), jam.ErrNotFound)

		// A new message of the room is unrouted too.
		r3 := b.queue(t, b.ws, b.peer.Key, room)
		require.Empty(t, r3.Binding)
	})
	messagingInvalid(t, setup, "Binding_invalidParams", "binding ")
}
