package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// sessionCases covers [store.Sessions].
func sessionCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Session_oneOpenPerRoom", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		room := newUUID[jam.RoomID]()
		s := session(t, b, tm, room)
		require.Equal(t, jam.SessionOpen, s.Lifecycle)
		_, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key, Room: room, CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		other := session(t, b, tm, newUUID[jam.RoomID]())
		require.NotEqual(t, s.ID, other.ID)

		require.NoError(t, b.st.SessionSetThread(ctx, b.ws, s.ID, "demo-1234", epoch))
		got, err := b.st.SessionForRoom(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.Equal(t, "demo-1234", got.ProviderThread)
		require.Equal(t, tm.ID, got.TemplateID)
		all, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, all, 2)
		_, err = b.st.SessionGet(ctx, b.other, s.ID)
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Session_overrides", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		plain := session(t, b, tm, newUUID[jam.RoomID]())
		require.True(t, plain.Overrides.IsZero(), "a session without overrides runs the template as is")
		ov := store.SessionOverrides{Command: []string{"agent", "--fast"}, Repo: "/srv/other"}
		s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
			Room: newUUID[jam.RoomID](), Overrides: ov, CreatedAt: epoch})
		require.NoError(t, err)
		require.Equal(t, ov, s.Overrides)
		all, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, ov, all[1].Overrides, "read back by every query")
		require.True(t, all[0].Overrides.IsZero())
		for name, bad := range map[string]store.SessionOverrides{
			"relative repository": {Repo: "src/other"},
			"blank program":       {Command: []string{"", "x"}},
			"NUL in an argument":  {Command: []string{"agent", "a\x00b"}},
		} {
			_, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
				Room: newUUID[jam.RoomID](), Overrides: bad, CreatedAt: epoch})
			require.ErrorIs(t, err, jam.ErrInvalid, name)
		}
	})
}
