package sqlite

import (
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// TestConnections_sealedAtRest: a credential is sealed in the file, bound
// to its connection and version, and a store without a key neither
// writes nor reads one.
func TestConnections_sealedAtRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	m := jam.NewMinter(time.Now, rand.Reader)
	at := time.Now()
	w, err := b.st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: at})
	require.NoError(t, err)
	canary := "canary" + rand.Text()
	c, err := b.st.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](m), WorkspaceID: w.ID, Provider: store.ProviderGitHub,
		Name: "work", CreatedAt: at}, []byte(canary+"-1"))
	require.NoError(t, err)
	_, err = b.st.ConnectionRotate(ctx, w.ID, c.ID, []byte(canary+"-2"), at)
	require.NoError(t, err)
	require.NoError(t, b.st.Close())
	require.False(t, fileHolds(t, b.cfg.Path, canary))

	// Without the key: no write, no read.
	bare, err := Open(ctx, Config{Path: b.cfg.Path, CheckpointInterval: time.Hour})
	require.NoError(t, err)
	_, err = bare.CredentialCurrent(ctx, w.ID, c.ID)
	require.ErrorIs(t, err, jam.ErrUnavailable)
	_, err = bare.ConnectionRotate(ctx, w.ID, c.ID, []byte("x"), at)
	require.ErrorIs(t, err, jam.ErrUnavailable)
	_, err = bare.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](m), WorkspaceID: w.ID, Provider: store.ProviderModal,
		Name: "m", CreatedAt: at}, []byte("x"))
	require.ErrorIs(t, err, jam.ErrUnavailable)
	require.NoError(t, bare.Close())

	st, err := Open(ctx, b.cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	cur, err := st.CredentialCurrent(ctx, w.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, canary+"-2", string(cur.Secret))

	// Version 1's sealed value moved to version 2 no longer opens.
	_, err = st.writer.ExecContext(ctx, `UPDATE credential_versions SET secret = (SELECT secret FROM credential_versions WHERE version = 1) WHERE version = 2`)
	require.NoError(t, err)
	_, err = st.CredentialCurrent(ctx, w.ID, c.ID)
	require.ErrorIs(t, err, secret.ErrCorrupt)

	// Another key opens nothing.
	other, err := secret.LoadOrCreate(filepath.Join(t.TempDir(), "other.key"))
	require.NoError(t, err)
	cfg := b.cfg
	cfg.Sealer = other
	require.NoError(t, st.Close())
	st, err = Open(ctx, cfg)
	require.NoError(t, err)
	_, err = st.CredentialCurrent(ctx, w.ID, c.ID)
	require.ErrorIs(t, err, secret.ErrCorrupt)
}
