package daemon_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/datadir"
)

// TestRun_storeCheckAtStart: the daemon runs the store's quick_check when
// it starts, and status reports what it found: ok on a sound database,
// the damage on one with a page overwritten (as a failing disk or a torn
// copy leaves it) while the daemon still serves.
func TestRun_storeCheckAtStart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	sqliteOnly(t, cfg)
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	_, err := r.client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	st := waitCheck(t, r)
	require.Equal(t, wire.StoreCheckOK, st.Store.Check.State, "a sound database: %+v", st.Store.Check)
	require.Empty(t, st.Store.Check.Detail)
	err, _ = r.stop()
	require.NoError(t, err)

	// Overwrite the first bytes of the root page of a table the daemon
	// does not read when it starts.
	path := filepath.Join(cfg.DataDir, datadir.StoreFile)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	var root, pageSize int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = 'turn_output'`).Scan(&root))
	require.NoError(t, db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize))
	require.NoError(t, db.Close())
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xde, 0xad, 0xde, 0xad, 0xde, 0xad, 0xde, 0xad}, (root-1)*pageSize)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	r = start(t, cfg)
	r.waitReady(t)
	st = waitCheck(t, r)
	require.Equal(t, wire.StoreCheckFailed, st.Store.Check.State, "%+v", st.Store.Check)
	require.Contains(t, st.Store.Check.Detail, "malformed")
	require.Contains(t, r.log.String(), "store check found damage")

	// jam status --json carries it as well.
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"check":{"state":"failed","detail":`)
}

// waitCheck polls status until the store check is over.
func waitCheck(t *testing.T, r *running) wire.Status {
	t.Helper()
	var st wire.Status
	require.Eventually(t, func() bool {
		var err error
		st, err = r.client.Status(t.Context())
		return err == nil && st.Store.Check.State != wire.StoreCheckRunning
	}, 30*time.Second, 10*time.Millisecond, "the store check ends")
	return st
}
