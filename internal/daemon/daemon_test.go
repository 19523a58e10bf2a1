package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jamtest"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) {
	runChildIfAsked()
	runDemoAgentIfAsked()
	oas, err := apitest.LoadOpenAPI(api.OpenAPIDocument())
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi document:", err)
		os.Exit(1)
	}
	controlAPI = oas
	code := m.Run()
	if v := oas.Violations(); len(v) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d control API answers do not match the OpenAPI document:\n%s\n", len(v), strings.Join(v, "\n\n"))
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// controlAPI checks every answer the tests' API clients receive against
// the control API's OpenAPI document.
var controlAPI *apitest.OpenAPI

// syncBuffer is a bytes.Buffer safe for the daemon to write while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// running is one daemon started by a test.
type running struct {
	cancel context.CancelFunc
	done   chan error
	wg     sync.WaitGroup
	out    *syncBuffer
	log    *syncBuffer
	client *apiclient.Client
}

func testConfig(t *testing.T) config.Config {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamd") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The store is $JAM_TEST_STORE's (jamtest.TestStore): SQLite by
	// default, a fresh PostgreSQL database with JAM_TEST_STORE=postgres.
	return config.Config{DataDir: dir, LogLevel: "debug", LogFormat: "text", ShutdownTimeout: 20 * time.Second, Store: jamtest.TestStore(t), Band: config.BandEmbedded, HubAddr: "127.0.0.1:0"}
}

// sqliteOnly skips t when the daemons of this run use PostgreSQL: t
// examines the SQLite file itself.
func sqliteOnly(t *testing.T, cfg config.Config) {
	t.Helper()
	if cfg.Store != config.DefaultStore {
		t.Skip("examines the SQLite file; this run's store is PostgreSQL")
	}
}

func start(t *testing.T, cfg config.Config) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), out: &syncBuffer{}, log: &syncBuffer{}}
	// Every answer is checked as the daemon writes it too, so what a
	// browser of a web UI test fetches is held to the document as well.
	r.wg.Go(func() {
		r.done <- daemon.RunWith(ctx, cfg, daemon.Streams{Out: r.out, Err: r.log}, daemon.Options{WrapAPI: controlAPI.Middleware})
	})
	r.client = apiclient.NewWrapped(filepath.Join(cfg.DataDir, datadir.SocketFile), controlAPI.Transport)
	t.Cleanup(func() { r.cancel(); r.wg.Wait(); r.client.Close() })
	return r
}

func (r *running) waitReady(t *testing.T) wire.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := r.client.WaitReady(ctx, 10*time.Millisecond)
	require.NoError(t, err, "log:\n%s", r.log.String())
	return st
}

// stop cancels the daemon and returns Run's error and how long it took.
func (r *running) stop() (error, time.Duration) {
	begun := time.Now()
	r.cancel()
	err := <-r.done
	r.wg.Wait()
	return err, time.Since(begun)
}

func TestRun_startStatusStop(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	sqliteOnly(t, cfg)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	st := r.waitReady(t)
	require.Equal(t, wire.StateRunning, st.State)
	require.Equal(t, os.Getpid(), st.PID)
	require.Equal(t, cfg.DataDir, st.DataDir)
	require.Equal(t, "sqlite", st.Store.Driver)
	require.GreaterOrEqual(t, st.Store.SchemaVersion, 2)
	require.Equal(t, "default", st.Workspace.Name)
	require.NotEmpty(t, st.HTTPAddr)
	require.Nil(t, st.PreviousRun)
	require.Contains(t, r.out.String(), "control api  unix:"+filepath.Join(cfg.DataDir, "jamd.sock"))
	require.Contains(t, r.out.String(), "http api     http://"+st.HTTPAddr)

	err, took := r.stop()
	require.NoError(t, err)
	require.Less(t, took, cfg.ShutdownTimeout, "a stop with nothing to drain finishes within the bound")
	require.Contains(t, r.log.String(), `msg="jamd stopped"`)

	// The store is consistent and records the clean stop.
	st2, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(cfg.DataDir, datadir.StoreFile)})
	require.NoError(t, err)
	defer st2.Close()
	require.NoError(t, st2.Check(t.Context()))
}

func TestRun_restartSeesPreviousRunAndKeepsWorkspace(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	first := r.waitReady(t)
	err, _ := r.stop()
	require.NoError(t, err)

	r2 := start(t, cfg)
	second := r2.waitReady(t)
	require.Equal(t, first.Workspace, second.Workspace, "the default workspace survives a restart")
	require.NotNil(t, second.PreviousRun)
	require.True(t, second.PreviousRun.Clean)
	require.NotNil(t, second.PreviousRun.StoppedAt)
	err, _ = r2.stop()
	require.NoError(t, err)
}

func TestRun_secondDaemonIsRefused(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)

	err := daemon.Run(t.Context(), cfg, daemon.Streams{Out: &syncBuffer{}, Err: &syncBuffer{}})
	require.ErrorIs(t, err, datadir.ErrLocked)
	require.ErrorContains(t, err, "is already running on "+cfg.DataDir)

	// The refused daemon touched nothing: the first still answers.
	_, err = r.client.Status(t.Context())
	require.NoError(t, err)
	err, _ = r.stop()
	require.NoError(t, err)
}

func TestRun_failedStartUnwinds(t *testing.T) {
	t.Parallel()
	// Occupy a port so the HTTP listener cannot bind.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cfg := testConfig(t)
	cfg.HTTPAddr = l.Addr().String()

	err = daemon.Run(t.Context(), cfg, daemon.Streams{Out: &syncBuffer{}, Err: &syncBuffer{}})
	require.ErrorContains(t, err, "start control api")
	require.ErrorContains(t, err, "address already in use")

	// Everything it opened was released: the lock can be taken and the
	// socket is gone.
	lock, err := datadir.Acquire(cfg.DataDir)
	require.NoError(t, err)
	require.NoError(t, lock.Release())
	_, err = os.Stat(filepath.Join(cfg.DataDir, datadir.SocketFile))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestRun_unusableDataDir starts jamd, as "jamd --data-dir …" would, on
// data directories it cannot use: it fails at once with an error naming
// the directory and the cause, exits with the usage code (2), and leaves
// nothing behind. Root ignores permission bits, so as root an unwritable
// directory is one on a file system that refuses root too (sysfs).
func TestRun_unusableDataDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// dir returns the data directory, or "" to skip.
		dir  func(t *testing.T, base string) string
		want string
	}{
		{"path is a file", func(t *testing.T, base string) string {
			file := filepath.Join(base, "file")
			require.NoError(t, os.WriteFile(file, nil, 0o600))
			return file
		}, "is not a directory"},
		{"parent is a file", func(t *testing.T, base string) string {
			file := filepath.Join(base, "file")
			require.NoError(t, os.WriteFile(file, nil, 0o600))
			return filepath.Join(file, "jam")
		}, "cannot be created: not a directory"},
		{"directory is not writable", func(t *testing.T, base string) string {
			if os.Geteuid() == 0 {
				if fi, err := os.Stat("/sys/kernel"); err == nil && fi.IsDir() {
					return "/sys/kernel"
				}
				return ""
			}
			dir := filepath.Join(base, "ro")
			require.NoError(t, os.Mkdir(dir, 0o500))
			return dir
		}, "is not writable: permission denied"},
		{"parent is not writable", func(t *testing.T, base string) string {
			if os.Geteuid() == 0 {
				return "/sys/jam"
			}
			dir := filepath.Join(base, "ro")
			require.NoError(t, os.Mkdir(dir, 0o500))
			return filepath.Join(dir, "jam")
		}, "cannot be created:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := testConfig(t).DataDir
			dir := tt.dir(t, base)
			if dir == "" {
				t.Skip("no directory here that root cannot write")
			}
			t.Cleanup(func() { _ = os.Chmod(filepath.Join(base, "ro"), 0o700) })
			before := listTree(t, base)

			io, _, out, errOut := cli.Test()
			code := cli.MainDaemon(t.Context(), []string{"--data-dir", dir, "--http-addr", ""}, io, cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub})
			require.Equal(t, int(cli.ExitUsage), code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, errOut.String(), "data directory "+dir+" "+tt.want)
			require.Empty(t, out.String(), "nothing started")
			require.Equal(t, before, listTree(t, base), "nothing was left behind")
		})
	}
}

// listTree lists every path under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		out = append(out, path)
		return err
	}))
	return out
}
