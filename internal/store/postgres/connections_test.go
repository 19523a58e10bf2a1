package postgres

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// TestConnections_sealedAtRest: a credential is stored sealed, bound to
// its connection and version; a store without a key writes none.
func TestConnections_sealedAtRest(t *testing.T) {
	t.Parallel()
	s := sealedOpener(t)(t)
	ctx := t.Context()
	m := jam.NewMinter(time.Now, rand.Reader)
	at := time.Now()
	w, err := s.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: at})
	require.NoError(t, err)
	canary := "canary" + rand.Text()
	c, err := s.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](m), WorkspaceID: w.ID, Provider: store.ProviderGitHub,
		Name: "work", CreatedAt: at}, []byte(canary+"-1"))
	require.NoError(t, err)
	_, err = s.ConnectionRotate(ctx, w.ID, c.ID, []byte(canary+"-2"), at)
	require.NoError(t, err)
	rows, err := s.pool.Query(ctx, `SELECT secret FROM credential_versions WHERE connection_id = $1`, c.ID)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		require.NotEmpty(t, raw)
		require.NotContains(t, string(raw), canary)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 2, n)
	cur, err := s.CredentialCurrent(ctx, w.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, canary+"-2", string(cur.Secret))

	_, err = s.pool.Exec(ctx, `UPDATE credential_versions SET secret = (SELECT secret FROM credential_versions WHERE version = 1) WHERE version = 2`)
	require.NoError(t, err)
	_, err = s.CredentialCurrent(ctx, w.ID, c.ID)
	require.ErrorIs(t, err, secret.ErrCorrupt, "moved to another version, a sealed value no longer opens")

	bare := opener(t)(t)
	bw, err := bare.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: at})
	require.NoError(t, err)
	_, err = bare.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](m), WorkspaceID: bw.ID, Provider: store.ProviderModal,
		Name: "m", CreatedAt: at}, []byte("x"))
	require.ErrorIs(t, err, jam.ErrUnavailable, "a store without a key keeps no credential")
}
