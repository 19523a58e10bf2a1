package procio_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/harness/procio"
)

// forever bounds nothing a test waits for: a wait that long is a failure
// the test's own timeout reports.
const forever = time.Hour

// started starts sh -c script; the script's first line of output is
// returned once it is read (the script prints it when its traps are set),
// and the rest of its output is drained.
func started(t *testing.T, script string) (*procio.Proc, string) {
	t.Helper()
	p, err := procio.Start(local.New(), executor.Spec{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Env: os.Environ()})
	require.NoError(t, err)
	first := make(chan string, 1)
	p.Watch(procio.Watch{
		Read: func() error {
			br := bufio.NewReader(p.Stdout())
			line, err := br.ReadString('\n')
			first <- strings.TrimSpace(line)
			if err != nil {
				return nil
			}
			_, _ = io.Copy(io.Discard, br)
			return nil
		},
	})
	t.Cleanup(func() { _ = p.Stop(context.Background(), 0) })
	return p, <-first
}

// exitSignal is the signal that ended the process, or -1.
func exitSignal(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return -1
}

// TestStop: Stop escalates from the end of input to SIGTERM to SIGKILL,
// as far as the process makes it, and returns once it is reaped.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		grace  time.Duration
		signal syscall.Signal // what ended it; -1: it exited
	}{
		{"exits at the end of its input", "echo ready; exec cat", forever, -1},
		// A grace long enough for the process to die of SIGTERM under load.
		{"ends on SIGTERM", "echo ready; exec sleep 1000", 2 * time.Second, syscall.SIGTERM},
		{"ignores SIGTERM", "trap '' TERM; echo ready; exec sleep 1000", 10 * time.Millisecond, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ready := started(t, tc.script)
			require.Equal(t, "ready", ready)
			require.NoError(t, p.Stdin().Close())
			require.NoError(t, p.Stop(context.Background(), tc.grace))
			select {
			case <-p.Exited():
			default:
				t.Fatal("Stop returned before the process was reaped")
			}
			require.Equal(t, tc.signal, exitSignal(p.Err()), "%v", p.Err())
			require.NoError(t, p.Stop(context.Background(), tc.grace), "a second Stop")
		})
	}
}

// TestStop_cancelled: a Stop whose context ends kills the group at once
// and says why.
func TestStop_cancelled(t *testing.T) {
	p, _ := started(t, "trap '' TERM; echo ready; exec sleep 1000")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, p.Stop(ctx, forever), context.Canceled)
	require.Equal(t, syscall.SIGKILL, exitSignal(p.Err()))
}

// TestStop_killsTheGroup: a child the leader leaves behind, which ignores
// SIGTERM and holds none of its pipes, does not outlive Stop (the reaping
// kills the group, and Stop again once the leader is gone).
func TestStop_killsTheGroup(t *testing.T) {
	p, pid := started(t, "trap '' TERM; sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec cat")
	child, err := strconv.Atoi(pid)
	require.NoError(t, err)
	require.NoError(t, p.Stdin().Close())
	require.NoError(t, p.Stop(context.Background(), forever))
	require.NoError(t, p.Err(), "the leader exited at the end of its input")
	// The child is the init process's to reap: it is gone or a zombie.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return true
		}
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
		return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
	}, 10*time.Second, 10*time.Millisecond, "child %d still runs", child)
}

// TestWatch_broken: a read that fails kills the group at once; Exited
// closes with the read's error, and Broken was told it.
func TestWatch_broken(t *testing.T) {
	p, err := procio.Start(local.New(), executor.Spec{Argv: []string{"sh", "-c", "trap '' TERM; echo bad; exec sleep 1000"},
		Dir: t.TempDir(), Env: os.Environ()})
	require.NoError(t, err)
	bad := errors.New("not the protocol")
	broken := make(chan error, 1)
	exited := false
	p.Watch(procio.Watch{
		Read: func() error {
			_, _ = bufio.NewReader(p.Stdout()).ReadString('\n')
			return bad
		},
		Broken: func(err error) { broken <- err },
		Exit:   func() { exited = true },
	})
	<-p.Exited()
	p.Wait()
	require.ErrorIs(t, p.Err(), bad)
	require.Equal(t, syscall.SIGKILL, exitSignal(p.Err()))
	require.Equal(t, bad, <-broken)
	require.True(t, exited)
	require.NoError(t, p.Stop(context.Background(), forever), "Stop of an exited process")
}

// TestWatch_stderr: every line of stderr reaches Stderr, in order, before
// Wait returns.
func TestWatch_stderr(t *testing.T) {
	p, err := procio.Start(local.New(), executor.Spec{Argv: []string{"sh", "-c", "echo one >&2; echo two >&2"},
		Dir: t.TempDir(), Env: os.Environ()})
	require.NoError(t, err)
	var lines []string
	p.Watch(procio.Watch{Read: func() error { _, err := io.Copy(io.Discard, p.Stdout()); return err },
		Stderr: func(line string) { lines = append(lines, line) }})
	p.Wait()
	require.NoError(t, p.Err())
	require.Equal(t, []string{"one", "two"}, lines)
}
