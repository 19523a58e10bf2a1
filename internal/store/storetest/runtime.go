package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func demoConfig() store.TemplateConfig {
	return store.TemplateConfig{Harness: "acp", Command: []string{"jam", "demo-agent"}, Placement: jam.PlacementShared, Permission: "allow"}
}

func template(t *testing.T, b *msgBundle) store.Template {
	t.Helper()
	tm, err := b.st.TemplatePut(t.Context(), store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: b.peer.Key, Desired: demoConfig(), CreatedAt: epoch})
	require.NoError(t, err)
	return tm
}

func session(t *testing.T, b *msgBundle, tm store.Template, room jam.RoomID) store.Session {
	t.Helper()
	s, err := b.st.SessionCreate(t.Context(), store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key, Room: room, CreatedAt: epoch})
	require.NoError(t, err)
	return s
}

func lease(t *testing.T, b *msgBundle, holder string) store.Lease {
	t.Helper()
	l, err := b.st.LeaseAcquire(t.Context(), store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: holder, Pid: 42, At: epoch})
	require.NoError(t, err)
	return l
}

func enqueue(t *testing.T, b *msgBundle, s store.Session) store.Turn {
	t.Helper()
	tr, err := b.st.TurnEnqueue(t.Context(), store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Routing: jam.RoutingQueue, SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: epoch})
	require.NoError(t, err)
	return tr
}
