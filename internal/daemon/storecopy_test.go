package daemon_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// runJam runs the jam command line in-process with env as the whole
// environment.
func runJam(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := cli.Test()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	code := cli.Main(ctx, args, io, cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub, CopyStore: daemon.CopyStore,
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	return code, out.String(), errOut.String()
}

// TestStoreCopy: "jam store copy" moves a stopped daemon's SQLite store
// into an empty PostgreSQL database with every row, verified; it refuses
// while the daemon runs and into a database that is not empty, and the
// password never shows.
func TestStoreCopy(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	_, err := r.client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	_, err = r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "lobby", Agents: []string{"coder"}})
	require.NoError(t, err)

	target := withUser(t, pgtest.URL(t), "postgres", "not-checked-pw")
	env := map[string]string{"HOME": cfg.DataDir, "JAM_STORE": target}
	code, out, errOut := runJam(t, env, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, int(cli.ExitConflict), code, "the daemon runs: %s%s", out, errOut)
	require.Contains(t, errOut, "jam: stop jamd first: another jamd (pid ")

	err, _ = r.stop()
	require.NoError(t, err)
	code, out, errOut = runJam(t, env, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Regexp(t, `^copied \d+ rows in \d+ tables to postgres 127\.0\.0\.1:\d+/jam_test_\w+; counts equal, [1-9]\d* sealed values open to the same content\n`, out)
	require.Contains(t, out, "  workspaces             1\n")
	require.Contains(t, out, "  accounts ")
	require.NotContains(t, out+errOut, "not-checked-pw")

	// What the copy wrote reads back through the PostgreSQL store.
	pg, err := postgres.Open(ctx, postgres.Config{URL: target, Sealer: loadBox(t, cfg)})
	require.NoError(t, err)
	defer pg.Close()
	wss, err := pg.WorkspaceList(ctx)
	require.NoError(t, err)
	require.Len(t, wss, 1)
	evs, err := pg.EventList(ctx, wss[0].ID, 0, 1000)
	require.NoError(t, err)
	require.NotEmpty(t, evs)

	// Twice: the target is not empty any more, and nothing changes.
	code, out, errOut = runJam(t, env, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, int(cli.ExitConflict), code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.True(t, strings.HasPrefix(errOut, "jam: postgres store 127.0.0.1:"), errOut)
	require.Contains(t, errOut, "the target database is not empty")
	again, err := pg.EventList(ctx, wss[0].ID, 0, 1000)
	require.NoError(t, err)
	require.Equal(t, evs, again)

	// No target at all is a usage error.
	code, _, errOut = runJam(t, map[string]string{"HOME": cfg.DataDir}, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, int(cli.ExitUsage), code)
	require.Contains(t, errOut, "no target")
}

// loadBox is the daemon key of a data directory.
func loadBox(t *testing.T, cfg config.Config) *secret.Box {
	t.Helper()
	box, err := secret.LoadOrCreate(filepath.Join(cfg.DataDir, "daemon.key"))
	require.NoError(t, err)
	return box
}
