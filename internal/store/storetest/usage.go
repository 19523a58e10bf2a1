package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// usageLane is one session of an agent, with a live lease for its turns.
type usageLane struct {
	sess  store.Session
	lease store.Lease
}

// lane makes a session of peer in room (its template made on first use)
// and starts a lease for it.
func (b *execBundle) lane(t *testing.T, peer jam.PeerKey, room jam.RoomID, templates map[jam.PeerKey]store.Template) usageLane {
	t.Helper()
	ctx := t.Context()
	tm, ok := templates[peer]
	if !ok {
		var err error
		tm, err = b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: peer, Desired: demoConfig(), CreatedAt: epoch})
		require.NoError(t, err)
		templates[peer] = tm
	}
	s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: peer, Room: room, CreatedAt: epoch})
	require.NoError(t, err)
	l, err := b.st.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: string(s.ID), Pid: 1, At: epoch})
	require.NoError(t, err)
	return usageLane{sess: s, lease: l}
}

// templates maps the bundle's peer to its template.
func (b *execBundle) templates() map[jam.PeerKey]store.Template {
	return map[jam.PeerKey]store.Template{b.peer.Key: b.tm}
}

// runTurn runs a new turn of the lane from queued to end at at, ending it
// with u; it returns the turn.
func (b *execBundle) runTurn(t *testing.T, ln usageLane, end jam.TurnState, at time.Time, u *store.ExecutionUsage) jam.TurnID {
	t.Helper()
	ctx := t.Context()
	tr, err := b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: ln.sess.ID, Routing: jam.RoutingQueue,
		SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: at})
	require.NoError(t, err)
	for _, mv := range []store.TurnTransitionParams{
		{From: jam.TurnQueued, To: jam.TurnPreparing, Execution: jam.New[jam.ExecutionID](b.minter)},
		{From: jam.TurnPreparing, To: jam.TurnRunning},
		{From: jam.TurnRunning, To: end, Reason: "end_turn", Usage: u},
	} {
		mv.WorkspaceID, mv.ID, mv.LeaseID, mv.LeaseGeneration, mv.At = b.ws, tr.ID, ln.lease.ID, ln.lease.Generation, at
		_, err := b.st.TurnTransition(ctx, mv)
		require.NoError(t, err)
	}
	return tr.ID
}
