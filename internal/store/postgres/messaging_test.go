package postgres

import (
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func newUUID[T jam.UUID]() T {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return T(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

// world is one workspace with one account ("p") and one peer (p/a),
// reached through two handles on one database.
type world struct {
	a, b   *Store
	minter *jam.Minter
	ws     jam.WorkspaceID
	acct   store.Account
	peer   store.Peer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{minter: jam.NewMinter(nil, nil)}
	w.a, w.b = openTwo(t)
	ctx := t.Context()
	ws, err := w.a.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](w.minter), Name: "ws", At: at})
	require.NoError(t, err)
	w.ws = ws.ID
	w.acct, err = w.a.AccountPut(ctx, store.Account{
		ID: jam.New[jam.AccountID](w.minter), WorkspaceID: w.ws, Profile: "p", BandURL: "https://band.example",
		UserID: newUUID[jam.IdentityID](), Handle: "owner", KeySealed: []byte("sealed-key"), CreatedAt: at,
	})
	require.NoError(t, err)
	w.peer, err = w.a.PeerPut(ctx, store.Peer{
		WorkspaceID: w.ws, Key: jam.PeerKey{Profile: "p", Scope: "a"}, AccountID: w.acct.ID,
		AgentID: newUUID[jam.IdentityID](), Handle: "a", Name: "Agent a", KeySealed: []byte("sealed-agent-key"), CreatedAt: at,
	})
	require.NoError(t, err)
	return w
}

// handle returns the Store of the i-th concurrent caller, alternating.
func (w *world) handle(i int) *Store {
	if i%2 == 0 {
		return w.a
	}
	return w.b
}

func (w *world) binding(room jam.RoomID, alias string) store.Binding {
	return store.Binding{
		ID: jam.New[jam.BindingID](w.minter), WorkspaceID: w.ws, Peer: w.peer.Key, Room: room, Alias: alias,
		SessionID: jam.New[jam.SessionID](w.minter), Mode: jam.RuntimeAttached, CreatedAt: at,
	}
}

// TestBindingPut_concurrentBindsOfOneRoom: binds of one room through two
// handles at once all succeed, each stealing the room from the one before,
// and exactly one binding owns the room after.
func TestBindingPut_concurrentBindsOfOneRoom(t *testing.T) {
	w := newWorld(t)
	room := newUUID[jam.RoomID]()
	const n = 8
	errs := make([]error, n)
	binds := make([]store.Binding, n)
	for i := range binds {
		binds[i] = w.binding(room, fmt.Sprintf("alias%d", i))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = w.handle(i).BindingPut(t.Context(), binds[i])
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "bind %d", i)
	}
	list, err := w.a.BindingList(t.Context(), w.ws, w.peer.Key)
	require.NoError(t, err)
	require.Len(t, list, 1)
	owner, err := w.a.BindingForRoom(t.Context(), w.ws, w.peer.Key, room)
	require.NoError(t, err)
	require.Equal(t, list[0].ID, owner.ID)
}

// TestAccountRemove_racesPeerPut: removing an account while a peer of it
// is being put either removes the account (the put then fails: no
// account) or refuses with jam.ErrConflict (the peer came first); never
// a foreign key failure, and never both.
func TestAccountRemove_racesPeerPut(t *testing.T) {
	for i := range 8 {
		w := newWorld(t)
		_, err := w.a.PeerRemove(t.Context(), w.ws, w.peer.Key)
		require.NoError(t, err)
		var putErr, rmErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, putErr = w.a.PeerPut(t.Context(), store.Peer{
				WorkspaceID: w.ws, Key: jam.PeerKey{Profile: "p", Scope: "b"}, AccountID: w.acct.ID,
				AgentID: newUUID[jam.IdentityID](), Handle: "b", Name: "b", KeySealed: []byte("k"), CreatedAt: at,
			})
		})
		wg.Go(func() {
			<-start
			rmErr = w.b.AccountRemove(t.Context(), w.ws, "p")
		})
		close(start)
		wg.Wait()
		if putErr == nil {
			require.ErrorIs(t, rmErr, jam.ErrConflict, "round %d", i)
		} else {
			require.ErrorIs(t, putErr, jam.ErrNotFound, "round %d", i)
			require.NoError(t, rmErr, "round %d", i)
		}
	}
}

func TestPeerRemove(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	room := newUUID[jam.RoomID]()
	_, err := w.a.BindingPut(ctx, w.binding(room, "x"))
	require.NoError(t, err)
	require.ErrorIs(t, w.a.AccountRemove(ctx, w.ws, "p"), jam.ErrConflict)
	out, err := w.a.PeerRemove(ctx, w.ws, w.peer.Key)
	require.NoError(t, err)
	require.Equal(t, 1, out.Bindings)
	_, err = w.a.PeerRemove(ctx, w.ws, w.peer.Key)
	require.ErrorIs(t, err, jam.ErrNotFound)
	require.NoError(t, w.a.AccountRemove(ctx, w.ws, "p"))
	require.ErrorIs(t, w.a.AccountRemove(ctx, w.ws, "p"), jam.ErrNotFound)
}
