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

	t.Run("Session_role", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		plain := session(t, b, tm, newUUID[jam.RoomID]())
		require.Equal(t, jam.RoleDeveloper, plain.Role, "a session without a role is a developer")
		room := newUUID[jam.RoomID]()
		s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
			Room: room, Role: jam.RoleReview, CreatedAt: epoch})
		require.NoError(t, err)
		require.Equal(t, jam.RoleReview, s.Role)
		got, err := b.st.SessionGet(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Equal(t, jam.RoleReview, got.Role, "SessionGet")
		got, err = b.st.SessionForRoom(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.Equal(t, s.ID, got.ID)
		require.Equal(t, jam.RoleReview, got.Role, "SessionForRoom")
		all, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []jam.SessionRole{jam.RoleDeveloper, jam.RoleReview}, []jam.SessionRole{all[0].Role, all[1].Role}, "SessionList")

		// The writes that change a session leave its role.
		require.NoError(t, b.st.SessionSetThread(ctx, b.ws, s.ID, "thread-1", epoch))
		require.NoError(t, b.st.SessionSetLifecycle(ctx, store.SessionSetLifecycleParams{WorkspaceID: b.ws, ID: s.ID, From: jam.SessionOpen,
			To: jam.SessionArchived, At: epoch}))
		got, err = b.st.SessionForRoom(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.Equal(t, jam.SessionArchived, got.Lifecycle)
		require.Equal(t, jam.RoleReview, got.Role, "an archived session keeps its role")

		for _, r := range jam.SessionRoles {
			s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
				Room: newUUID[jam.RoomID](), Role: r, CreatedAt: epoch})
			require.NoError(t, err, r)
			got, err := b.st.SessionGet(ctx, b.ws, s.ID)
			require.NoError(t, err, r)
			require.Equal(t, r, got.Role)
		}

		before, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		for _, bad := range []jam.SessionRole{"reviewer", "Review", " review", "developer\x00"} {
			id := jam.New[jam.SessionID](b.minter)
			_, err := b.st.SessionCreate(ctx, store.Session{ID: id, WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
				Room: newUUID[jam.RoomID](), Role: bad, CreatedAt: epoch})
			require.ErrorIs(t, err, jam.ErrInvalid, "%q", bad)
			require.ErrorContains(t, err, "session role")
			_, err = b.st.SessionGet(ctx, b.ws, id)
			require.ErrorIs(t, err, jam.ErrNotFound, "a refused session is not stored (%q)", bad)
		}
		after, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, after, len(before), "nothing stored")
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
