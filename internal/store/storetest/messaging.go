package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// msgBundle is the fixture of the messaging cases: a store with two
// workspaces, an account in each, and peer "p/a" in the first.
type msgBundle struct {
	st     store.Store
	minter *jam.Minter
	ws     jam.WorkspaceID
	other  jam.WorkspaceID
	acct   store.Account
	peer   store.Peer
}

func newUUID[T jam.UUID]() T {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return T(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

func setupMessaging(t *testing.T, open func(t *testing.T) store.Store) *msgBundle {
	t.Helper()
	b := &msgBundle{st: open(t), minter: jam.NewMinter(nil, nil)}
	for i, ws := range []*jam.WorkspaceID{&b.ws, &b.other} {
		w, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{
			ID: jam.New[jam.WorkspaceID](b.minter), Name: fmt.Sprintf("ws%d", i), At: epoch,
		})
		require.NoError(t, err)
		*ws = w.ID
	}
	b.acct = b.putAccount(t, b.ws, "p")
	b.putAccount(t, b.other, "p")
	b.peer = b.putPeer(t, b.ws, b.acct, "a")
	return b
}

func (b *msgBundle) putAccount(t *testing.T, ws jam.WorkspaceID, profile string) store.Account {
	t.Helper()
	a, err := b.st.AccountPut(t.Context(), store.Account{
		ID: jam.New[jam.AccountID](b.minter), WorkspaceID: ws, Profile: profile, BandURL: "https://band.example",
		UserID: newUUID[jam.IdentityID](), Handle: "owner", KeySealed: []byte("sealed-key"), CreatedAt: epoch,
	})
	require.NoError(t, err)
	return a
}

func (b *msgBundle) putPeer(t *testing.T, ws jam.WorkspaceID, acct store.Account, scope string) store.Peer {
	t.Helper()
	p, err := b.st.PeerPut(t.Context(), store.Peer{
		WorkspaceID: ws, Key: jam.PeerKey{Profile: acct.Profile, Scope: scope}, AccountID: acct.ID,
		AgentID: newUUID[jam.IdentityID](), Handle: scope, Name: "Agent " + scope, KeySealed: []byte("sealed-agent-key"), CreatedAt: epoch,
	})
	require.NoError(t, err)
	return p
}

func (b *msgBundle) binding(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, alias string) store.Binding {
	return store.Binding{
		ID: jam.New[jam.BindingID](b.minter), WorkspaceID: ws, Peer: key, Room: room, Alias: alias,
		SessionID: jam.New[jam.SessionID](b.minter), Mode: jam.RuntimeAttached, CreatedAt: epoch,
	}
}

func (b *msgBundle) putBinding(t *testing.T, bnd store.Binding) int {
	t.Helper()
	moved, err := b.st.BindingPut(t.Context(), bnd)
	require.NoError(t, err)
	return moved
}

func entry(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) store.SpoolEntry {
	return store.SpoolEntry{
		WorkspaceID: ws, Peer: key, Room: room, MessageID: newUUID[jam.PlatformMessageID](),
		Sealed: []byte("sealed-message"), ReceivedAt: epoch,
	}
}

// spool appends entries that must all be new and returns them with their
// sequences.
func (b *msgBundle) spool(t *testing.T, entries ...store.SpoolEntry) []store.SpoolEntry {
	t.Helper()
	res, err := b.st.SpoolAppend(t.Context(), entries)
	require.NoError(t, err)
	out := make([]store.SpoolEntry, len(entries))
	for i, e := range entries {
		require.True(t, res.Appended[i], "entry %d", i)
		e.Seq = res.Seqs[i]
		out[i] = e
	}
	return out
}

// queue spools and moves one message of (peer, room), returning its row.
func (b *msgBundle) queue(t *testing.T, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) store.QueueRow {
	t.Helper()
	e := b.spool(t, entry(ws, key, room))[0]
	row, err := b.st.SpoolMove(t.Context(), e.Seq, moveRow(e))
	require.NoError(t, err)
	return row
}

// moveRow is the row the engine passes to SpoolMove for e.
func moveRow(e store.SpoolEntry) store.QueueRow {
	return store.QueueRow{
		WorkspaceID: e.WorkspaceID, Peer: e.Peer, Room: e.Room, MessageID: e.MessageID,
		SenderID: newUUID[jam.IdentityID](), Sealed: []byte("rendered-" + string(e.MessageID)), State: store.QueueQueued,
	}
}

func (b *msgBundle) list(t *testing.T, p store.QueueListParams) []jam.PlatformMessageID {
	t.Helper()
	rows, err := b.st.QueueList(t.Context(), p)
	require.NoError(t, err)
	ids := make([]jam.PlatformMessageID, len(rows))
	for i, r := range rows {
		ids[i] = r.MessageID
		if i > 0 {
			require.Less(t, rows[i-1].Seq, r.Seq, "rows must come in seq order")
		}
	}
	return ids
}

func ids(rows ...store.QueueRow) []jam.PlatformMessageID {
	out := make([]jam.PlatformMessageID, len(rows))
	for i, r := range rows {
		out[i] = r.MessageID
	}
	return out
}

// exerciseMessaging is the part of Exercise that covers [store.Messaging].
func exerciseMessaging(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Account_putGetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		got, err := b.st.AccountGet(ctx, b.ws, "p")
		require.NoError(t, err)
		require.Equal(t, b.acct, got)
		requireTime(t, epoch, got.CreatedAt)
		require.Equal(t, []byte("sealed-key"), got.KeySealed)

		second := b.putAccount(t, b.ws, "b")
		list, err := b.st.AccountList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []store.Account{second, b.acct}, list, "by profile")

		// Replacing with the same id keeps CreatedAt; a new id is a new account.
		repl := b.acct
		repl.Handle, repl.KeySealed, repl.CreatedAt = "renamed", []byte("new-key"), epoch.Add(time.Hour)
		out, err := b.st.AccountPut(ctx, repl)
		require.NoError(t, err)
		require.Equal(t, "renamed", out.Handle)
		require.Equal(t, []byte("new-key"), out.KeySealed)
		requireTime(t, epoch, out.CreatedAt)
		repl.ID = jam.New[jam.AccountID](b.minter)
		out, err = b.st.AccountPut(ctx, repl)
		require.NoError(t, err)
		require.Equal(t, repl.ID, out.ID)
		requireTime(t, epoch.Add(time.Hour), out.CreatedAt)

		// The peers of the profile follow its account.
		peer, err := b.st.PeerGet(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.Equal(t, repl.ID, peer.AccountID)

		// An id that is the account of another profile.
		clash := repl
		clash.Profile = "c"
		_, err = b.st.AccountPut(ctx, clash)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)

		_, err = b.st.AccountGet(ctx, b.ws, "missing")
		require.ErrorIs(t, err, jam.ErrNotFound)
		unknown := repl
		unknown.WorkspaceID, unknown.ID = jam.New[jam.WorkspaceID](b.minter), jam.New[jam.AccountID](b.minter)
		_, err = b.st.AccountPut(ctx, unknown)
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Account_workspaceIsolation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		b.putAccount(t, b.ws, "only-here")
		_, err := b.st.AccountGet(ctx, b.other, "only-here")
		require.ErrorIs(t, err, jam.ErrNotFound)
		list, err := b.st.AccountList(ctx, b.other)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, b.other, list[0].WorkspaceID)
	})

	t.Run("Peer_putGetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		got, err := b.st.PeerGet(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.Equal(t, b.peer, got)
		require.Equal(t, b.acct.ID, got.AccountID)

		second := b.putPeer(t, b.ws, b.acct, "0first")
		list, err := b.st.PeerList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []store.Peer{second, b.peer}, list, "by key")

		// Replacing keeps CreatedAt; the agent id is canonical.
		repl := b.peer
		repl.Name, repl.CreatedAt = "Renamed", epoch.Add(time.Hour)
		repl.AgentID = jam.IdentityID(strings.ToUpper(string(newUUID[jam.IdentityID]())))
		out, err := b.st.PeerPut(ctx, repl)
		require.NoError(t, err)
		requireTime(t, epoch, out.CreatedAt)
		require.Equal(t, jam.IdentityID(strings.ToLower(string(repl.AgentID))), out.AgentID)
		got, err = b.st.PeerGet(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.Equal(t, out, got)

		// Another peer's agent id is taken within the workspace, not across.
		clash := second
		clash.AgentID = out.AgentID
		_, err = b.st.PeerPut(ctx, clash)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		otherAcct, err := b.st.AccountGet(ctx, b.other, "p")
		require.NoError(t, err)
		across := out
		across.WorkspaceID, across.AccountID = b.other, otherAcct.ID
		_, err = b.st.PeerPut(ctx, across)
		require.NoError(t, err)

		// The profile's account must exist and be the one named.
		noAcct := second
		noAcct.Key = jam.PeerKey{Profile: "nobody", Scope: "x"}
		_, err = b.st.PeerPut(ctx, noAcct)
		require.ErrorIs(t, err, jam.ErrNotFound)
		wrongAcct := second
		wrongAcct.AccountID = jam.New[jam.AccountID](b.minter)
		_, err = b.st.PeerPut(ctx, wrongAcct)
		require.ErrorIs(t, err, jam.ErrConflict)

		_, err = b.st.PeerGet(ctx, b.ws, jam.PeerKey{Profile: "p", Scope: "missing"})
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Peer_workspaceIsolation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		_, err := b.st.PeerGet(ctx, b.other, b.peer.Key)
		require.ErrorIs(t, err, jam.ErrNotFound)
		list, err := b.st.PeerList(ctx, b.other)
		require.NoError(t, err)
		require.Empty(t, list)
	})

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

	t.Run("RetentionPrune", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		settled := b.queue(t, b.ws, b.peer.Key, room)
		queued := b.queue(t, b.ws, b.peer.Key, room)
		for _, row := range []store.QueueRow{settled, queued} {
			require.NoError(t, b.st.ReplyIntentPut(ctx, store.ReplyIntent{WorkspaceID: b.ws, Peer: b.peer.Key, Room: room, MessageID: row.MessageID,
				Sealed: []byte("r"), Parts: 1, State: store.ReplyPending, CreatedAt: epoch}))
		}
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, settled.MessageID, epoch))

		n, err := b.st.RetentionPrune(ctx, epoch)
		require.NoError(t, err)
		require.Equal(t, store.RetentionPruned{}, n, "nothing is older than the cut")

		n, err = b.st.RetentionPrune(ctx, epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, store.RetentionPruned{Settled: 1, Intents: 1}, n)
		_, err = b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, settled.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound, "the settled message's intent went")
		_, err = b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, queued.MessageID)
		require.NoError(t, err, "a queued message keeps its intent however old")

		_, err = b.st.RetentionPrune(ctx, time.Time{})
		require.ErrorIs(t, err, jam.ErrInvalid)
	})

	t.Run("ReplyIntent_roundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		row := b.queue(t, b.ws, b.peer.Key, newUUID[jam.RoomID]())
		_, err := b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)

		r := store.ReplyIntent{
			WorkspaceID: b.ws, Peer: b.peer.Key, Room: row.Room, MessageID: row.MessageID,
			Sealed: []byte("sealed-reply"), Parts: 2, State: store.ReplyPending, CreatedAt: epoch,
		}
		require.NoError(t, b.st.ReplyIntentPut(ctx, r))
		got, err := b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.NoError(t, err)
		r.UpdatedAt = epoch // defaults to CreatedAt
		requireReplyIntent(t, r, got)
		require.Empty(t, got.PostedIDs)

		// Advance part by part.
		p1, p2 := newUUID[jam.PlatformMessageID](), newUUID[jam.PlatformMessageID]()
		step := r
		step.Posted, step.PostedIDs, step.UpdatedAt = 1, []jam.PlatformMessageID{p1}, epoch.Add(time.Second)
		step.Sealed = []byte("resealed") // ignored: the first sealed reply stays
		require.NoError(t, b.st.ReplyIntentPut(ctx, step))
		step.Posted, step.PostedIDs, step.State, step.UpdatedAt = 2, []jam.PlatformMessageID{p1, p2}, store.ReplyPosted, epoch.Add(2*time.Second)
		require.NoError(t, b.st.ReplyIntentPut(ctx, step))
		require.NoError(t, b.st.ReplyIntentPut(ctx, step), "the same put again is fine")
		got, err = b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.NoError(t, err)
		want := step
		want.Sealed = r.Sealed
		requireReplyIntent(t, want, got)

		// Anything that would unpost a part is a conflict.
		tests := []struct {
			name   string
			mutate func(r *store.ReplyIntent)
		}{
			{"fewer posted", func(r *store.ReplyIntent) {
				r.Posted, r.PostedIDs, r.State = 1, []jam.PlatformMessageID{p1}, store.ReplyPending
			}},
			{"other posted ids", func(r *store.ReplyIntent) { r.PostedIDs = []jam.PlatformMessageID{p2, p1} }},
			{"other parts", func(r *store.ReplyIntent) {
				r.Parts, r.State = 3, store.ReplyPending
			}},
			{"other room", func(r *store.ReplyIntent) { r.Room = newUUID[jam.RoomID]() }},
			{"back to pending", func(r *store.ReplyIntent) { r.State = store.ReplyPending }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := step
				r.PostedIDs = append([]jam.PlatformMessageID(nil), step.PostedIDs...)
				tt.mutate(&r)
				require.ErrorIs(t, b.st.ReplyIntentPut(t.Context(), r), jam.ErrConflict)
			})
		}

		_, err = b.st.ReplyIntentGet(ctx, b.other, b.peer.Key, row.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's intent")
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

	t.Run("Messaging_invalidParams", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		st, ws, key := b.st, b.ws, b.peer.Key
		room, msg := newUUID[jam.RoomID](), newUUID[jam.PlatformMessageID]()
		acct := func(mut func(a *store.Account)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				a := b.acct
				mut(&a)
				_, err := st.AccountPut(ctx, a)
				return err
			}
		}
		peer := func(mut func(p *store.Peer)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				p := b.peer
				mut(&p)
				_, err := st.PeerPut(ctx, p)
				return err
			}
		}
		bind := func(mut func(bnd *store.Binding)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				bnd := b.binding(ws, key, room, "x")
				mut(&bnd)
				_, err := st.BindingPut(ctx, bnd)
				return err
			}
		}
		spool := func(mut func(e *store.SpoolEntry)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				e := entry(ws, key, room)
				mut(&e)
				_, err := st.SpoolAppend(ctx, []store.SpoolEntry{e})
				return err
			}
		}
		move := func(seq int64, mut func(r *store.QueueRow)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				r := store.QueueRow{WorkspaceID: ws, Sealed: []byte("x")}
				mut(&r)
				_, err := st.SpoolMove(ctx, seq, r)
				return err
			}
		}
		reply := func(mut func(r *store.ReplyIntent)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				r := store.ReplyIntent{WorkspaceID: ws, Peer: key, Room: room, MessageID: msg, Sealed: []byte("x"),
					Parts: 1, State: store.ReplyPending, CreatedAt: epoch}
				mut(&r)
				return st.ReplyIntentPut(ctx, r)
			}
		}
		list := func(p store.QueueListParams) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := st.QueueList(ctx, p); return err }
		}
		mark := func(state string, at time.Time) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				return st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: msg, State: state, At: at})
			}
		}
		const badWS = jam.WorkspaceID("ws_nope")
		badKey := jam.PeerKey{Profile: "p", Scope: "no/slash"}
		tests := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"account bad id", acct(func(a *store.Account) { a.ID = "acct_x" })},
			{"account bad workspace", acct(func(a *store.Account) { a.WorkspaceID = badWS })},
			{"account bad profile", acct(func(a *store.Account) { a.Profile = "a b" })},
			{"account empty profile", acct(func(a *store.Account) { a.Profile = "" })},
			{"account bad url", acct(func(a *store.Account) { a.BandURL = "band.example" })},
			{"account bad user", acct(func(a *store.Account) { a.UserID = "u" })},
			{"account empty key", acct(func(a *store.Account) { a.KeySealed = nil })},
			{"account zero time", acct(func(a *store.Account) { a.CreatedAt = time.Time{} })},
			{"account handle with NUL", acct(func(a *store.Account) { a.Handle = "a\x00" })},
			{"account get bad profile", func(ctx context.Context) error { _, err := st.AccountGet(ctx, ws, ""); return err }},
			{"account list bad workspace", func(ctx context.Context) error { _, err := st.AccountList(ctx, badWS); return err }},
			{"peer bad key", peer(func(p *store.Peer) { p.Key = badKey })},
			{"peer zero key", peer(func(p *store.Peer) { p.Key = jam.PeerKey{} })},
			{"peer bad account", peer(func(p *store.Peer) { p.AccountID = "" })},
			{"peer bad agent", peer(func(p *store.Peer) { p.AgentID = "" })},
			{"peer empty key", peer(func(p *store.Peer) { p.KeySealed = []byte{} })},
			{"peer name not UTF-8", peer(func(p *store.Peer) { p.Name = "\xff" })},
			{"peer zero time", peer(func(p *store.Peer) { p.CreatedAt = time.Time{} })},
			{"peer get zero key", func(ctx context.Context) error { _, err := st.PeerGet(ctx, ws, jam.PeerKey{}); return err }},
			{"binding bad id", bind(func(bnd *store.Binding) { bnd.ID = "sess_x" })},
			{"binding bad room", bind(func(bnd *store.Binding) { bnd.Room = "r" })},
			{"binding empty alias", bind(func(bnd *store.Binding) { bnd.Alias = "" })},
			{"binding bad session", bind(func(bnd *store.Binding) { bnd.SessionID = "" })},
			{"binding bad mode", bind(func(bnd *store.Binding) { bnd.Mode = "remote" })},
			{"binding zero time", bind(func(bnd *store.Binding) { bnd.CreatedAt = time.Time{} })},
			{"binding get bad id", func(ctx context.Context) error { _, err := st.BindingGet(ctx, ws, "bind_x"); return err }},
			{"binding for bad room", func(ctx context.Context) error { _, err := st.BindingForRoom(ctx, ws, key, "r"); return err }},
			{"binding list bad key", func(ctx context.Context) error { _, err := st.BindingList(ctx, ws, badKey); return err }},
			{"binding delete bad id", func(ctx context.Context) error { return st.BindingDelete(ctx, ws, "") }},
			{"spool bad workspace", spool(func(e *store.SpoolEntry) { e.WorkspaceID = "" })},
			{"spool bad peer", spool(func(e *store.SpoolEntry) { e.Peer = badKey })},
			{"spool bad room", spool(func(e *store.SpoolEntry) { e.Room = "" })},
			{"spool bad message", spool(func(e *store.SpoolEntry) { e.MessageID = "m" })},
			{"spool empty sealed", spool(func(e *store.SpoolEntry) { e.Sealed = nil })},
			{"spool zero time", spool(func(e *store.SpoolEntry) { e.ReceivedAt = time.Time{} })},
			{"spool next zero limit", func(ctx context.Context) error { _, err := st.SpoolNext(ctx, ws, key, room, 0); return err }},
			{"spool next bad room", func(ctx context.Context) error { _, err := st.SpoolNext(ctx, ws, key, "r", 1); return err }},
			{"move zero seq", move(0, func(*store.QueueRow) {})},
			{"move bad workspace", move(1, func(r *store.QueueRow) { r.WorkspaceID = "" })},
			{"move empty sealed", move(1, func(r *store.QueueRow) { r.Sealed = nil })},
			{"move bad sender", move(1, func(r *store.QueueRow) { r.SenderID = "s" })},
			{"move bad state", move(1, func(r *store.QueueRow) { r.State = store.QueueDelivered })},
			{"move bad room", move(1, func(r *store.QueueRow) { r.Room = "r" })},
			{"drop zero seq", func(ctx context.Context) error { return st.SpoolDrop(ctx, 0, epoch) }},
			{"drop zero time", func(ctx context.Context) error { return st.SpoolDrop(ctx, 1, time.Time{}) }},
			{"queue get bad message", func(ctx context.Context) error { _, err := st.QueueGet(ctx, ws, key, ""); return err }},
			{"queue list bad workspace", list(store.QueueListParams{WorkspaceID: ""})},
			{"queue list binding and unrouted", list(store.QueueListParams{WorkspaceID: ws, Binding: jam.New[jam.BindingID](b.minter), Unrouted: true})},
			{"queue list bad binding", list(store.QueueListParams{WorkspaceID: ws, Binding: "bind_x"})},
			{"queue list negative limit", list(store.QueueListParams{WorkspaceID: ws, Limit: -1})},
			{"queue list negative after", list(store.QueueListParams{WorkspaceID: ws, After: -1})},
			{"queue list unrouted and delivered", list(store.QueueListParams{WorkspaceID: ws, Unrouted: true, Delivered: true})},
			{"queue list bad room", list(store.QueueListParams{WorkspaceID: ws, Room: "r"})},
			{"queue mark bad state", mark(store.QueueQueued, epoch)},
			{"queue mark zero time", mark(store.QueueClaimed, time.Time{})},
			{"queue settle zero time", func(ctx context.Context) error { return st.QueueSettle(ctx, ws, key, msg, time.Time{}) }},
			{"prune zero time", func(ctx context.Context) error { _, err := st.QueuePruneUnrouted(ctx, time.Time{}, 1); return err }},
			{"prune negative keep", func(ctx context.Context) error { _, err := st.QueuePruneUnrouted(ctx, epoch, -1); return err }},
			{"reply zero parts", reply(func(r *store.ReplyIntent) { r.Parts = 0 })},
			{"reply posted beyond parts", reply(func(r *store.ReplyIntent) {
				r.Posted, r.PostedIDs = 2, []jam.PlatformMessageID{msg, msg}
			})},
			{"reply ids mismatch", reply(func(r *store.ReplyIntent) { r.Posted = 1 })},
			{"reply bad posted id", reply(func(r *store.ReplyIntent) { r.Posted, r.PostedIDs = 1, []jam.PlatformMessageID{"x"} })},
			{"reply posted early", reply(func(r *store.ReplyIntent) { r.State = store.ReplyPosted })},
			{"reply bad state", reply(func(r *store.ReplyIntent) { r.State = "sent" })},
			{"reply empty sealed", reply(func(r *store.ReplyIntent) { r.Sealed = nil })},
			{"reply zero time", reply(func(r *store.ReplyIntent) { r.CreatedAt = time.Time{} })},
			{"reply get bad message", func(ctx context.Context) error { _, err := st.ReplyIntentGet(ctx, ws, key, "m"); return err }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.ErrorIs(t, tt.call(t.Context()), jam.ErrInvalid)
			})
		}
	})
}

func bindingIDs(bs []store.Binding) []jam.BindingID {
	out := make([]jam.BindingID, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

func requireBinding(t *testing.T, want, got store.Binding) {
	t.Helper()
	requireTime(t, want.CreatedAt, got.CreatedAt)
	want.CreatedAt, got.CreatedAt = time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

func requireSpoolEntry(t *testing.T, want, got store.SpoolEntry) {
	t.Helper()
	requireTime(t, want.ReceivedAt, got.ReceivedAt)
	want.ReceivedAt, got.ReceivedAt = time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

func requireQueueRow(t *testing.T, want, got store.QueueRow) {
	t.Helper()
	for _, p := range [][2]*time.Time{{&want.ReceivedAt, &got.ReceivedAt}, {&want.ClaimedAt, &got.ClaimedAt}, {&want.DeliveredAt, &got.DeliveredAt}} {
		require.Equal(t, p[0].IsZero(), p[1].IsZero())
		if !p[0].IsZero() {
			requireTime(t, *p[0], *p[1])
		}
		*p[0], *p[1] = time.Time{}, time.Time{}
	}
	require.Equal(t, want, got)
}

func requireReplyIntent(t *testing.T, want, got store.ReplyIntent) {
	t.Helper()
	requireTime(t, want.CreatedAt, got.CreatedAt)
	requireTime(t, want.UpdatedAt, got.UpdatedAt)
	want.CreatedAt, got.CreatedAt, want.UpdatedAt, got.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(want.PostedIDs) == 0 {
		want.PostedIDs = nil
	}
	require.Equal(t, want, got)
}
