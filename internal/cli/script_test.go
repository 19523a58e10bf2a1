package cli_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/datadir"
)

// leakCheckedM runs the tests, then fails the binary if goroutines leaked.
type leakCheckedM struct{ m *testing.M }

func (l leakCheckedM) Run() int {
	code := l.m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			return 1
		}
	}
	return code
}

// TestMain registers the real jam and jamd mains, so scripts run them as
// separate processes exactly as a user would.
func TestMain(m *testing.M) {
	testscript.Main(leakCheckedM{m}, map[string]func(){
		"jam":  func() { os.Exit(realMain(cli.Main)) },
		"jamd": func() { os.Exit(realMain(cli.MainDaemon)) },
	})
}

func realMain(main func(context.Context, []string, *cli.IOStreams, cli.Deps) int) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := daemon.RunCLI
	if file := os.Getenv(violationsEnv); file != "" {
		wrap, err := validateAnswers(file)
		if err != nil {
			os.Stderr.WriteString("openapi document: " + err.Error() + "\n")
			return 1
		}
		run = daemon.RunCLIWith(daemon.Options{WrapAPI: wrap})
	}
	return main(ctx, os.Args[1:], cli.System(), cli.Deps{RunDaemon: run, RunHub: daemon.RunHub, RunDemoAgent: daemon.RunDemoAgent})
}

// violationsEnv names the file a script's daemons append every control
// API answer that does not match the OpenAPI document to; the script
// fails at its end when the file is not empty.
const violationsEnv = "JAM_TEST_API_VIOLATIONS"

// validateAnswers is the daemon's API wrapper of a script: every answer
// (the CLI's requests, a curl's) is checked against the OpenAPI document
// as it is written, and a violation appended to file at once, so a
// daemon the script kills has reported it already.
func validateAnswers(file string) (func(http.Handler) http.Handler, error) {
	oas, err := apitest.LoadOpenAPI(api.OpenAPIDocument())
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	written := 0
	return func(next http.Handler) http.Handler {
		checked := oas.Middleware(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			checked.ServeHTTP(w, r)
			mu.Lock()
			defer mu.Unlock()
			v := oas.Violations()
			if len(v) == written {
				return
			}
			f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				_, err = f.WriteString(strings.Join(v[written:], "\n\n") + "\n")
				err = errors.Join(err, f.Close())
			}
			if err != nil {
				os.Stderr.WriteString("record an OpenAPI violation: " + err.Error() + "\n")
				return
			}
			written = len(v)
		})
	}, nil
}

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, scriptParams("testdata/script"))
}

// scriptParams are the parameters every script of this package runs
// with: the scripts in dir, each kept inside its own work directory.
func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Keep every script inside its work directory: no default data
			// or config directory of the machine is ever touched.
			env.Setenv("JAM_DATA_DIR", env.WorkDir+"/jamdata")
			// Scripts run in parallel: no fixed port for the HTTP listener.
			env.Setenv("JAM_HTTP_ADDR", "127.0.0.1:0")
			// A stop waits for owned agents to exit (2 s after their stdin
			// closes, 2 s after SIGTERM): on a loaded machine that can pass
			// the 4 s default, and no script is about that bound.
			env.Setenv("JAM_SHUTDOWN_TIMEOUT", "30s")
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("XDG_DATA_HOME", env.WorkDir+"/.local/share")
			// Every control API answer the script's daemons give is
			// checked against the OpenAPI document.
			violations := env.WorkDir + "/.api-violations"
			env.Setenv(violationsEnv, violations)
			env.Defer(func() {
				if data, err := os.ReadFile(violations); err == nil && len(data) > 0 {
					env.T().Fatal("control API answers that do not match the OpenAPI document:\n" + string(data))
				}
			})
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"holdport":   cmdHoldPort,
			"stopdaemon": cmdStopDaemon,
			"waitfile":   cmdWaitFile,
			"waitmatch":  cmdWaitMatch,
			"logkeys":    cmdLogKeys,
		},
	}
}

// cmdStopDaemon sends SIGTERM to the daemon holding a data directory and
// waits until it has released the directory's lock, failing the script if
// that takes longer than the given bound.
//
//	stopdaemon DATADIR BOUND
func cmdStopDaemon(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stopdaemon DATADIR BOUND")
	}
	dir := ts.MkAbs(args[0])
	bound, err := time.ParseDuration(args[1])
	ts.Check(err)
	pid := datadir.HolderPID(dir)
	if pid == 0 {
		ts.Fatalf("no daemon holds %s", dir)
	}
	ts.Check(syscall.Kill(pid, syscall.SIGTERM))
	// The daemon is another process, so there is no signal to wait on but
	// the lock itself: poll it.
	deadline := time.Now().Add(bound)
	for {
		l, err := datadir.Acquire(dir)
		if err == nil {
			ts.Check(l.Release())
			ts.Logf("daemon released %s after SIGTERM", dir)
			return
		}
		if !errors.Is(err, datadir.ErrLocked) {
			ts.Fatalf("lock %s: %v", dir, err)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("daemon (pid %d) still holds %s %s after SIGTERM", pid, dir, bound)
		}
		time.Sleep(20 * time.Millisecond) // polling another process; nothing to wait on
	}
}

// cmdHoldPort keeps a loopback TCP address taken until the script ends:
// it listens there, or finds it taken already (by anyone), which is as
// good.
//
//	holdport ADDR
func cmdHoldPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdport ADDR")
	}
	l, err := net.Listen("tcp", args[0])
	if errors.Is(err, syscall.EADDRINUSE) {
		ts.Logf("%s is taken already", args[0])
		return
	}
	ts.Check(err)
	ts.Defer(func() { l.Close() })
}

// cmdWaitFile waits until a file exists, failing the script after the
// bound. Another process writes the file, so there is nothing to wait on
// but the file system: poll it.
//
//	waitfile PATH BOUND
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfile PATH BOUND")
	}
	path := ts.MkAbs(args[0])
	bound, err := time.ParseDuration(args[1])
	ts.Check(err)
	deadline := time.Now().Add(bound)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within %s", path, bound)
		}
		time.Sleep(20 * time.Millisecond) // polling another process; nothing to wait on
	}
}
