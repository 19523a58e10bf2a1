package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestRuntimePrune_inBatches: a history longer than one transaction's
// batch is pruned over several, to the same end.
func TestRuntimePrune_inBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	st.pruneBatch = 2
	ws, key, room := benchPeerT(t, st)
	m := jam.NewMinter(nil, nil)
	now := time.Now()
	tm, err := st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](m), WorkspaceID: ws, Peer: key, CreatedAt: now,
		Desired: store.TemplateConfig{Harness: "acp", Command: []string{"jam", "demo-agent"}, Placement: jam.PlacementShared, Permission: "allow"}})
	require.NoError(t, err)
	sess, err := st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: ws, TemplateID: tm.ID, Peer: key, Room: room, CreatedAt: now})
	require.NoError(t, err)
	var last jam.TurnID
	for range 7 {
		tr, err := st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](m), WorkspaceID: ws, SessionID: sess.ID, Routing: jam.RoutingQueue,
			SourceMessageID: "0190a1b2-0000-4000-8000-0000000000cc", CreatedAt: now})
		require.NoError(t, err)
		_, err = st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: ws, ID: tr.ID, From: jam.TurnQueued, To: jam.TurnCancelled, At: now})
		require.NoError(t, err)
		last = tr.ID
	}
	n, err := st.RuntimePrune(ctx, store.RuntimePruneParams{KeepTurns: 1, KeepMessages: 1, MaxOutputBytes: store.DefaultMaxOutputBytes})
	require.NoError(t, err)
	require.Equal(t, 6, n.Turns, "three full batches of two, then an empty one")
	require.Equal(t, 12, n.Journal, "queued and cancelled, for each")
	turns, err := st.TurnList(ctx, ws, sess.ID)
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.Equal(t, last, turns[0].ID)
}
