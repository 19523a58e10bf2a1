package cli_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/datadir"
)

// backend is the shared fake daemon.
type backend = apitest.Backend

var _ api.Backend = backend{}

// testBundle is a data directory whose control socket a real api.Server
// serves with a fake backend.
type testBundle struct {
	dataDir string
}

// setup starts a server for b on jamd.sock in a fresh, short data
// directory (unix socket paths are limited to 107 bytes).
func setup(t *testing.T, b backend) *testBundle {
	t.Helper()
	dir := shortDir(t)
	srv, err := api.New(api.Config{SocketPath: filepath.Join(dir, datadir.SocketFile), Logger: slog.New(slog.DiscardHandler)}, b)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	return &testBundle{dataDir: dir}
}

// noDaemon returns a data directory nothing serves.
func noDaemon(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{dataDir: shortDir(t)}
}

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamcli")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// result is what one run of jam did.
type result struct {
	code   int
	stdout string
	stderr string
}

// invocation is one run of jam: its arguments, stdin and environment.
type invocation struct {
	args  []string
	stdin string
	env   map[string]string
	// interactive makes stdin and stderr a terminal.
	interactive bool
}

// run runs jam against the bundle's data directory with only inv.env as
// the environment, so the machine's JAM_* variables and config file never
// count.
func (b *testBundle) run(t *testing.T, inv invocation) result {
	t.Helper()
	streams, in, out, errOut := cli.Test()
	in.WriteString(inv.stdin)
	streams.Interactive = inv.interactive
	args := append(append([]string{}, inv.args...), "--data-dir", b.dataDir)
	env := func(k string) (string, bool) { v, ok := inv.env[k]; return v, ok }
	code := cli.Main(t.Context(), args, streams, cli.Deps{Env: env})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// jam runs jam with args and nothing else.
func (b *testBundle) jam(t *testing.T, args ...string) result {
	t.Helper()
	return b.run(t, invocation{args: args})
}

// cmdCase is one run of jam against a fake daemon, and what it must do.
type cmdCase struct {
	name     string
	backend  backend
	inv      invocation
	wantCode int
	// wantStdout is the exact standard output, unless wantJSON is set:
	// then stdout must be that JSON document.
	wantStdout string
	wantJSON   string
	// wantStderr is the exact standard error.
	wantStderr string
}

func runCases(t *testing.T, cases []cmdCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := setup(t, tc.backend).run(t, tc.inv)
			require.Equal(t, tc.wantStderr, r.stderr, "stderr")
			require.Equal(t, tc.wantCode, r.code, "exit code")
			if tc.wantJSON != "" {
				// JSONEq fails on anything but one JSON document.
				require.JSONEq(t, tc.wantJSON, r.stdout)
				return
			}
			require.Equal(t, tc.wantStdout, r.stdout, "stdout")
		})
	}
}

// Fixtures.
var (
	created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	acct    = wire.Account{ID: "acc_1", Profile: "band", BandURL: "https://band.example", UserID: "u-1", Handle: "ann", Created: created}
)

const acctJSON = `{"id":"acc_1","profile":"band","band_url":"https://band.example","user_id":"u-1","handle":"ann","created_at":"2026-01-02T03:04:05Z"}`
