package executor_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/executor/local"
)

// echoer starts, through executor.Start, a shell that echoes each line
// of its stdin, tied to this process's life (Pdeathsig), from a goroutine
// that locks its OS thread and returns without unlocking it, so Go ends
// that thread; it returns once the thread is gone.
func echoer(t *testing.T, ex executor.Executor) (cmd *exec.Cmd, in io.WriteCloser, out *bufio.Reader) {
	t.Helper()
	cmd, err := ex.Command(executor.Spec{Argv: []string{"/bin/sh", "-c", "while read l; do echo \"$l\"; done"}, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	require.NoError(t, err)
	require.NotZero(t, cmd.SysProcAttr.Pdeathsig, "the process is signalled when the daemon dies")
	in, err = cmd.StdinPipe()
	require.NoError(t, err)
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	// The main thread (whose id is the process's) is never ended, even
	// locked: a goroutine that lands on it holds it until the end, so the
	// next one runs on another.
	var tid int
	hold := make(chan struct{})
	var holders sync.WaitGroup
	defer func() { close(hold); holders.Wait() }()
	for range 100 {
		landed := make(chan int, 1)
		started := make(chan struct{})
		holders.Go(func() {
			runtime.LockOSThread()
			id := syscall.Gettid()
			landed <- id
			if id == os.Getpid() {
				<-hold
				runtime.UnlockOSThread()
				return
			}
			// Never unlocked: the thread ends with the goroutine.
			defer close(started)
			require.NoError(t, executor.Start(ex, cmd))
		})
		if tid = <-landed; tid != os.Getpid() {
			<-started
			break
		}
	}
	require.NotEqual(t, os.Getpid(), tid, "a goroutine ran on another thread than the main one")
	task := filepath.Join("/proc/self/task", strconv.Itoa(tid))
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			// Race detector builds keep such a thread (cgo's runtime
			// does not end it): there is nothing to observe.
			_ = in.Close()
			_ = cmd.Wait()
			executor.Reaped(ex, cmd)
			t.Skip("this runtime keeps a locked thread whose goroutine returned")
		}
		time.Sleep(5 * time.Millisecond) // polling /proc, bounded above
	}
	return cmd, in, bufio.NewReader(pipe)
}

// TestStart_outlivesTheStartingThread: a process's parent-death signal
// fires when the thread that forked it ends (golang/go#27505); Start forks
// from a thread of its own, so the end of the caller's thread kills
// nothing. With cmd.Start called on the caller's thread, the shell would
// be dead and the echo never come.
func TestStart_outlivesTheStartingThread(t *testing.T) {
	ex := local.New()
	cmd, in, out := echoer(t, ex)
	_, err := io.WriteString(in, "still here\n")
	require.NoError(t, err)
	line, err := out.ReadString('\n')
	require.NoError(t, err, "the process outlived the thread of the goroutine that started it")
	require.Equal(t, "still here\n", line)
	require.NoError(t, in.Close())
	require.NoError(t, cmd.Wait())
	executor.Reaped(ex, cmd)
}

type fakeLedger struct {
	mu      sync.Mutex
	added   []int
	removed []int
	fail    error
}

func (l *fakeLedger) Add(pid int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.added = append(l.added, pid)
	return nil
}

func (l *fakeLedger) Remove(pid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removed = append(l.removed, pid)
}

// groupExecutor starts the command itself in a process group of its own,
// with nothing around it (local's shim would end the rest of the group
// itself, before Reaped).
type groupExecutor struct{ executor.Executor }

func (groupExecutor) Command(spec executor.Spec) (*exec.Cmd, error) {
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// TestTrack: a tracked executor's process is recorded when it starts and
// forgotten when reaped, after the rest of its group is killed; one that
// cannot be recorded is ended and never runs on.
func TestTrack(t *testing.T) {
	l := &fakeLedger{}
	ex := executor.Track(groupExecutor{local.New()}, l)
	require.Equal(t, executor.Local, ex.Name())
	cmd, err := ex.Command(executor.Spec{Argv: []string{"/bin/sh", "-c", "sleep 600 & echo $!"}, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, executor.Start(ex, cmd))
	require.Equal(t, []int{cmd.Process.Pid}, l.added, "recorded when Start returns")
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	tool, err := strconv.Atoi(line[:len(line)-1])
	require.NoError(t, err)
	_ = cmd.Wait() // the shell exits; its tool stays in the group
	require.NoError(t, syscall.Kill(tool, 0), "the tool runs on after its leader")
	executor.Reaped(ex, cmd)
	require.Equal(t, []int{cmd.Process.Pid}, l.removed)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(tool) + "/stat")
		return err != nil || len(b) > 0 && statState(b) == 'Z'
	}, 10*time.Second, 5*time.Millisecond, "Reaped killed the rest of the group")

	l.fail = errors.New("disk full")
	cmd, err = ex.Command(executor.Spec{Argv: []string{"sleep", "600"}, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	require.NoError(t, err)
	require.ErrorContains(t, executor.Start(ex, cmd), "disk full")
	require.NotNil(t, cmd.ProcessState, "the unrecorded process was ended and reaped")
}

func statState(b []byte) byte {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2]
		}
	}
	return 0
}
