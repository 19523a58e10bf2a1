package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// TestMigration_bandConnections opens a database written before
// migration 0024, with a rotated connection and a legacy account and
// peer: the connections and their versions are kept through the rebuild
// (the secrets still open, the foreign keys hold), the legacy rows read
// with no connection id and their sealed keys, and a band connection can
// be made.
func TestMigration_bandConnections(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	migs := embedded(t)
	before := -1
	for i, m := range migs {
		if m.Name == "band_connections" {
			before = i
		}
	}
	require.Positive(t, before, "migration band_connections is embedded")
	cfg := Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box}
	minter := jam.NewMinter(nil, nil)
	at := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

	old, err := open(ctx, cfg, migs[:before])
	require.NoError(t, err)
	w, err := old.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](minter), Name: "w", At: at})
	require.NoError(t, err)
	ws := w.ID
	c, err := old.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](minter), WorkspaceID: ws, Provider: store.ProviderGitHub,
		Name: "gh", CreatedAt: at}, []byte("token-1"))
	require.NoError(t, err)
	_, err = old.ConnectionRotate(ctx, ws, c.ID, []byte("token-2"), at.Add(time.Second))
	require.NoError(t, err)
	acct := jam.New[jam.AccountID](minter)
	_, err = old.writer.ExecContext(ctx, `INSERT INTO accounts (id, workspace_id, profile, band_url, user_id, handle, key_sealed, created_at)
VALUES (?, ?, 'p', 'https://band.example', '0190a1b2-0000-4000-8000-0000000000f1', 'ann', x'01', ?)`, acct, ws, at.UnixMicro())
	require.NoError(t, err)
	_, err = old.writer.ExecContext(ctx, `INSERT INTO peers (workspace_id, profile, scope, agent_id, handle, name, key_sealed, created_at)
VALUES (?, 'p', 'a', '0190a1b2-0000-4000-8000-0000000000f2', 'a', 'a', x'02', ?)`, ws, at.UnixMicro())
	require.NoError(t, err)
	require.NoError(t, old.Close())

	st, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	got, err := st.ConnectionGet(ctx, ws, c.ID)
	require.NoError(t, err)
	require.Equal(t, 2, got.CurrentVersion)
	v, err := st.CredentialCurrent(ctx, ws, c.ID)
	require.NoError(t, err)
	require.Equal(t, "token-2", string(v.Secret))
	vs, err := st.CredentialVersions(ctx, ws, c.ID)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	var broken int
	require.NoError(t, st.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&broken))
	require.Zero(t, broken)

	a, err := st.AccountGet(ctx, ws, "p")
	require.NoError(t, err)
	require.Empty(t, a.ConnectionID)
	require.Equal(t, []byte{1}, a.KeySealed)
	p, err := st.PeerGet(ctx, ws, jam.PeerKey{Profile: "p", Scope: "a"})
	require.NoError(t, err)
	require.Empty(t, p.ConnectionID)
	require.Equal(t, []byte{2}, p.KeySealed)

	band, err := st.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](minter), WorkspaceID: ws, Provider: store.ProviderBand,
		Name: "account.p", CreatedAt: at}, []byte("key"))
	require.NoError(t, err)
	a.ConnectionID, a.KeySealed = band.ID, nil
	_, err = st.AccountPut(ctx, a)
	require.NoError(t, err)
	// The rebuilt tables keep their indexes: a second live name is refused.
	_, err = st.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](minter), WorkspaceID: ws, Provider: store.ProviderBand,
		Name: "account.p", CreatedAt: at}, []byte("key"))
	require.ErrorIs(t, err, jam.ErrAlreadyExists)
}
