package connection_test

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/connection"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestBandNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "account.band", connection.BandAccountName("band"))
	require.Equal(t, "account.a.b", connection.BandAccountName("a.b"))
	require.Equal(t, "agent.local.rex", connection.BandAgentName(jam.PeerKey{Profile: "local", Scope: "rex"}))
	require.Equal(t, "agent.local.r.x", connection.BandAgentName(jam.PeerKey{Profile: "local", Scope: "r.x"}))
	names := map[string]bool{}
	for _, n := range []string{
		connection.BandAccountName("Work"), connection.BandAccountName("work"), connection.BandAccountName(strings.Repeat("p", 60)),
		connection.BandAgentName(jam.PeerKey{Profile: "a.b", Scope: "c"}), connection.BandAgentName(jam.PeerKey{Profile: "a", Scope: "b.c"}),
		connection.BandAgentName(jam.PeerKey{Profile: "A", Scope: "c"}), connection.BandAgentName(jam.PeerKey{Profile: "a", Scope: "C"}),
		connection.BandAgentName(jam.PeerKey{Profile: "a", Scope: strings.Repeat("s", 64)}),
		connection.BandAgentName(jam.PeerKey{Profile: "a", Scope: "_x"}), connection.BandAgentName(jam.PeerKey{Profile: "_a", Scope: "x"}),
	} {
		require.NoError(t, store.ValidateConnectionName(n), n)
		require.False(t, names[n], "two keys share %s", n)
		names[n] = true
	}
	require.Equal(t, connection.BandAgentName(jam.PeerKey{Profile: "A", Scope: "c"}), connection.BandAgentName(jam.PeerKey{Profile: "A", Scope: "c"}), "stable")
	require.Regexp(t, `^agent\.[0-9a-f]{16}$`, connection.BandAgentName(jam.PeerKey{Profile: "a.b", Scope: "c"}))
	require.Regexp(t, `^account-[0-9a-f]{16}$`, connection.BandAccountName("Work"))
}

func TestBand_byHand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	canary := "canary-" + rand.Text()

	_, err := b.svc.Add(ctx, b.ws, store.ProviderBand, "x", "", []byte(canary))
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.Contains(t, err.Error(), "band connections are made by jam account add and jam agent add")
	list, err := b.svc.List(ctx, b.ws)
	require.NoError(t, err)
	require.Empty(t, list)

	acctConn, err := b.svc.SetBand(ctx, b.ws, "", connection.BandAccountName("p"), []byte(canary+"-a"))
	require.NoError(t, err)
	require.Equal(t, store.ProviderBand, acctConn.Provider)
	_, _, err = b.svc.Resolve(ctx, b.ws, "connection:band/"+acctConn.Name)
	require.ErrorIs(t, err, jam.ErrInvalid, "no agent's environment is given a Band key")
	require.NotContains(t, err.Error(), canary)
	acct, err := b.st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](jam.NewMinter(nil, nil)), WorkspaceID: b.ws, Profile: "p",
		BandURL: "https://band.example", UserID: "0190a1b2-0000-4000-8000-0000000000f1", Handle: "ann", ConnectionID: acctConn.ID, CreatedAt: b.now})
	require.NoError(t, err)
	key := jam.PeerKey{Profile: "p", Scope: "rex"}
	peerConn, err := b.svc.SetBand(ctx, b.ws, "", connection.BandAgentName(key), []byte(canary+"-p"))
	require.NoError(t, err)
	_, err = b.st.PeerPut(ctx, store.Peer{WorkspaceID: b.ws, Key: key, AccountID: acct.ID, AgentID: "0190a1b2-0000-4000-8000-0000000000f2",
		Handle: "rex", Name: "rex", ConnectionID: peerConn.ID, CreatedAt: b.now})
	require.NoError(t, err)

	for ref, who := range map[string]string{"band/account.p": "account p", string(peerConn.ID): "agent p/rex"} {
		_, err = b.svc.Rotate(ctx, b.ws, ref, []byte(canary))
		require.ErrorIs(t, err, jam.ErrConflict, ref)
		require.Contains(t, err.Error(), who)
		_, err = b.svc.Remove(ctx, b.ws, ref)
		require.ErrorIs(t, err, jam.ErrConflict, ref)
		require.Contains(t, err.Error(), who)
	}
	got, err := b.svc.BandSecret(ctx, b.ws, peerConn.ID)
	require.NoError(t, err)
	require.Equal(t, canary+"-p", string(got), "nothing rotated")

	// One no row uses (left by a stop before its row was written) may go.
	orphan, err := b.svc.SetBand(ctx, b.ws, "", "agent.p.gone", []byte(canary+"-o"))
	require.NoError(t, err)
	_, err = b.svc.Rotate(ctx, b.ws, "band/agent.p.gone", []byte(canary+"-o2"))
	require.NoError(t, err)
	_, err = b.svc.Remove(ctx, b.ws, string(orphan.ID))
	require.NoError(t, err)

	require.NotContains(t, b.log.String(), canary)
}

func TestSetBand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	canary := "canary-" + rand.Text()

	c, err := b.svc.SetBand(ctx, b.ws, "", "agent.p.a", []byte(canary+"-1"))
	require.NoError(t, err)
	require.Equal(t, 1, c.CurrentVersion)

	// The same secret again, by id or by name: nothing changes.
	again, err := b.svc.SetBand(ctx, b.ws, c.ID, "agent.p.a", []byte(canary+"-1"))
	require.NoError(t, err)
	require.Equal(t, c, again)
	again, err = b.svc.SetBand(ctx, b.ws, "", "agent.p.a", []byte(canary+"-1"))
	require.NoError(t, err)
	require.Equal(t, c, again)

	// Another secret rotates the connection.
	r, err := b.svc.SetBand(ctx, b.ws, c.ID, "agent.p.a", []byte(canary+"-2"))
	require.NoError(t, err)
	require.Equal(t, c.ID, r.ID)
	require.Equal(t, 2, r.CurrentVersion)
	got, err := b.svc.BandSecret(ctx, b.ws, c.ID)
	require.NoError(t, err)
	require.Equal(t, canary+"-2", string(got))
	r, err = b.svc.SetBand(ctx, b.ws, "", "agent.p.a", []byte(canary+"-3"))
	require.NoError(t, err)
	require.Equal(t, c.ID, r.ID)
	require.Equal(t, 3, r.CurrentVersion)

	// Removed: a new connection of the name is added; removing twice is fine.
	require.NoError(t, b.svc.RemoveBand(ctx, b.ws, c.ID))
	require.NoError(t, b.svc.RemoveBand(ctx, b.ws, c.ID))
	require.NoError(t, b.svc.RemoveBand(ctx, b.ws, jam.New[jam.ConnectionID](jam.NewMinter(nil, nil))))
	_, err = b.svc.BandSecret(ctx, b.ws, c.ID)
	require.ErrorIs(t, err, jam.ErrNotFound)
	n, err := b.svc.SetBand(ctx, b.ws, c.ID, "agent.p.a", []byte(canary+"-1"))
	require.NoError(t, err)
	require.NotEqual(t, c.ID, n.ID)
	require.Equal(t, 1, n.CurrentVersion)

	// Not a band connection: RemoveBand refuses it.
	gh, err := b.svc.Add(ctx, b.ws, store.ProviderGitHub, "agent.p.a", "", []byte(canary))
	require.NoError(t, err)
	require.ErrorIs(t, b.svc.RemoveBand(ctx, b.ws, gh.ID), jam.ErrInvalid)
	_, err = b.svc.SetBand(ctx, b.ws, "", "Bad Name", []byte(canary))
	require.ErrorIs(t, err, jam.ErrInvalid)

	list, err := b.svc.List(ctx, b.ws)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.NotContains(t, b.log.String(), canary)
}
