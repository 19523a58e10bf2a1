package sqlite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestStore_peerAndAccountRemove: an account a peer uses is not removed
// (conflict, naming the peer); removing the peer deletes its binding and
// template and the peer, keeps its sessions as history, and frees its key
// for a new peer and template; then the account goes.
func TestStore_peerAndAccountRemove(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, ctx := b.st, t.Context()
	m := jam.NewMinter(nil, nil)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "default", At: at})
	require.NoError(t, err)
	ws := w.ID
	acct, err := st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](m), WorkspaceID: ws, Profile: "work", BandURL: "https://band.example",
		UserID: "0190a1b2-0000-4000-8000-0000000000f1", Handle: "ann", KeySealed: []byte("sealed"), CreatedAt: at})
	require.NoError(t, err)
	key := jam.PeerKey{Profile: "work", Scope: "demo"}
	peer := func() {
		_, err := st.PeerPut(ctx, store.Peer{WorkspaceID: ws, Key: key, AccountID: acct.ID, AgentID: "0190a1b2-0000-4000-8000-0000000000f2", Handle: "demo",
			Name: "demo", KeySealed: []byte("sealed"), CreatedAt: at})
		require.NoError(t, err)
		_, err = st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](m), WorkspaceID: ws, Peer: key,
			Desired: store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Placement: jam.PlacementShared, Permission: "allow"}, CreatedAt: at})
		require.NoError(t, err)
	}
	peer()
	tmpl, err := st.TemplateForPeer(ctx, ws, key)
	require.NoError(t, err)
	room := jam.RoomID("0190a1b2-0000-4000-8000-0000000000aa")
	s, err := st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: ws, TemplateID: tmpl.ID, Peer: key, Room: room, CreatedAt: at})
	require.NoError(t, err)
	_, err = st.BindingPut(ctx, store.Binding{ID: jam.New[jam.BindingID](m), WorkspaceID: ws, Peer: key, Room: room, Alias: "room-1", SessionID: s.ID,
		Mode: jam.RuntimeOwned, CreatedAt: at})
	require.NoError(t, err)

	err = st.AccountRemove(ctx, ws, "work")
	require.ErrorIs(t, err, jam.ErrConflict)
	require.ErrorContains(t, err, "work/demo")

	res, err := st.PeerRemove(ctx, ws, key)
	require.NoError(t, err)
	require.Equal(t, store.PeerRemoved{Bindings: 1, Templates: 1}, res)
	_, err = st.PeerGet(ctx, ws, key)
	require.ErrorIs(t, err, jam.ErrNotFound)
	_, err = st.TemplateForPeer(ctx, ws, key)
	require.ErrorIs(t, err, jam.ErrNotFound)
	bs, err := st.BindingList(ctx, ws, key)
	require.NoError(t, err)
	require.Empty(t, bs)
	kept, err := st.SessionGet(ctx, ws, s.ID)
	require.NoError(t, err, "sessions stay as history")
	require.Equal(t, s.ID, kept.ID)
	_, err = st.PeerRemove(ctx, ws, key)
	require.ErrorIs(t, err, jam.ErrNotFound)

	peer() // the same key again, with a new template
	_, err = st.PeerRemove(ctx, ws, key)
	require.NoError(t, err)
	require.NoError(t, st.AccountRemove(ctx, ws, "work"))
	_, err = st.AccountGet(ctx, ws, "work")
	require.ErrorIs(t, err, jam.ErrNotFound)
	require.ErrorIs(t, st.AccountRemove(ctx, ws, "work"), jam.ErrNotFound)
}

// TestStore_sessionLifecycle: a session moves open ⇄ archived and to
// closed, conditionally on where it is; an archived session is still its
// room's, a closed one is not, and it stays closed.
func TestStore_sessionLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, ctx := b.st, t.Context()
	m := jam.NewMinter(nil, nil)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ws := jam.New[jam.WorkspaceID](m)
	key := jam.PeerKey{Profile: "local", Scope: "demo"}
	room := jam.RoomID("0190a1b2-0000-4000-8000-0000000000aa")
	s, err := st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: ws, TemplateID: jam.New[jam.TemplateID](m), Peer: key, Room: room, CreatedAt: at})
	require.NoError(t, err)
	move := func(from, to jam.SessionLifecycle) error {
		return st.SessionSetLifecycle(ctx, store.SessionSetLifecycleParams{WorkspaceID: ws, ID: s.ID, From: from, To: to, At: at})
	}
	require.NoError(t, move(jam.SessionOpen, jam.SessionArchived))
	got, err := st.SessionForRoom(ctx, ws, key, room)
	require.NoError(t, err)
	require.Equal(t, jam.SessionArchived, got.Lifecycle, "an archived session is still the room's")
	require.ErrorIs(t, move(jam.SessionOpen, jam.SessionArchived), jam.ErrConflict)
	require.ErrorIs(t, move("paused", jam.SessionOpen), jam.ErrInvalid)
	require.NoError(t, move(jam.SessionArchived, jam.SessionOpen))
	require.NoError(t, move(jam.SessionOpen, jam.SessionClosed))
	_, err = st.SessionForRoom(ctx, ws, key, room)
	require.ErrorIs(t, err, jam.ErrNotFound)
	require.ErrorIs(t, move(jam.SessionClosed, jam.SessionOpen), jam.ErrInvalid, "closed is final")
	require.ErrorIs(t, st.SessionSetLifecycle(ctx, store.SessionSetLifecycleParams{WorkspaceID: ws, ID: jam.New[jam.SessionID](m),
		From: jam.SessionOpen, To: jam.SessionClosed, At: at}), jam.ErrNotFound)

	// A new open session of the room, with the closed one kept.
	s2, err := st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: ws, TemplateID: s.TemplateID, Peer: key, Room: room, CreatedAt: at})
	require.NoError(t, err)
	got, err = st.SessionForRoom(ctx, ws, key, room)
	require.NoError(t, err)
	require.Equal(t, s2.ID, got.ID)
}
