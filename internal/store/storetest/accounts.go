package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// accountCases covers [store.Accounts].
func accountCases(t *testing.T, open func(t *testing.T) store.Store) {
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

	t.Run("Account_connection", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		// A row moved onto a connection: the id, and no legacy key.
		moved := b.acct
		moved.ConnectionID, moved.KeySealed = jam.New[jam.ConnectionID](b.minter), nil
		out, err := b.st.AccountPut(ctx, moved)
		require.NoError(t, err)
		require.Equal(t, moved.ConnectionID, out.ConnectionID)
		require.Empty(t, out.KeySealed)
		got, err := b.st.AccountGet(ctx, b.ws, "p")
		require.NoError(t, err)
		require.Equal(t, moved.ConnectionID, got.ConnectionID)
		require.Nil(t, got.KeySealed)
		list, err := b.st.AccountList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []store.Account{got}, list)

		// The same for a peer.
		p := b.peer
		p.ConnectionID, p.KeySealed = jam.New[jam.ConnectionID](b.minter), nil
		_, err = b.st.PeerPut(ctx, p)
		require.NoError(t, err)
		gotp, err := b.st.PeerGet(ctx, b.ws, p.Key)
		require.NoError(t, err)
		require.Equal(t, p.ConnectionID, gotp.ConnectionID)
		require.Nil(t, gotp.KeySealed)
		peers, err := b.st.PeerList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []store.Peer{gotp}, peers)

		// A legacy row has no connection id.
		legacy, err := b.st.PeerGet(ctx, b.ws, b.putPeer(t, b.ws, got, "legacy").Key)
		require.NoError(t, err)
		require.Empty(t, legacy.ConnectionID)
		require.Equal(t, []byte("sealed-agent-key"), legacy.KeySealed)

		// Neither a connection nor a key: refused, nothing stored.
		bare := moved
		bare.ConnectionID = ""
		_, err = b.st.AccountPut(ctx, bare)
		require.ErrorIs(t, err, jam.ErrInvalid)
		bp := p
		bp.ConnectionID = ""
		_, err = b.st.PeerPut(ctx, bp)
		require.ErrorIs(t, err, jam.ErrInvalid)
		got2, err := b.st.AccountGet(ctx, b.ws, "p")
		require.NoError(t, err)
		require.Equal(t, got, got2)
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
	messagingInvalid(t, setup, "Account_invalidParams", "account ")
}
