package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// peerCases covers [store.Peers].
func peerCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

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
	messagingInvalid(t, setup, "Peer_invalidParams", "peer ")
}
