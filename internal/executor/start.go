package executor

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Ledger records the process groups of started agents durably, so that a
// daemon that died without stopping them can end them at its next start
// (package proc keeps one under the data directory).
type Ledger interface {
	// Add records the process pid, which leads its own process group,
	// before the caller gives it any work.
	Add(pid int) error
	// Remove forgets pid's record once its group has been ended.
	Remove(pid int)
}

// Track returns ex with its processes recorded in l: Start records each
// one after it starts and Reaped forgets it once its group is ended.
func Track(ex Executor, l Ledger) Executor { return tracked{Executor: ex, ledger: l} }

type tracked struct {
	Executor
	ledger Ledger
}

// ledgerOf returns the ledger ex records its processes in, if any.
func ledgerOf(ex Executor) Ledger {
	if t, ok := ex.(tracked); ok {
		return t.ledger
	}
	return nil
}

// Start starts cmd, a command ex returned, from the thread agent
// processes are forked from (see the package doc: that thread lives as
// long as any process it started, so a process's parent-death signal
// fires only when the daemon dies), and records it when ex is tracked
// (Track). A process that cannot be recorded is ended and the error
// returned: an agent nothing could reap is never given work. Every
// command Start started must be passed to Reaped once its Wait returned.
func Start(ex Executor, cmd *exec.Cmd) error {
	if err := forker.start(cmd); err != nil {
		return err
	}
	if l := ledgerOf(ex); l != nil {
		if err := l.Add(cmd.Process.Pid); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			forker.release()
			return err
		}
	}
	return nil
}

// Reaped is called once the Wait of a command Start started has returned:
// the rest of its process group (a tool the agent left running) is
// killed, then its record, if ex is tracked, is removed: a record never
// names a group that could still run.
func Reaped(ex Executor, cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if l := ledgerOf(ex); l != nil {
		l.Remove(pid)
	}
	forker.release()
}

// forker owns the OS thread agent processes are forked from. A child's
// PR_SET_PDEATHSIG fires when the thread that forked it ends, not the
// process (golang/go#27505), and Go ends a thread whose locked goroutine
// returns. So the thread is locked to a goroutine that returns only when
// no process it started is left (live is 0): until then it is never
// retired, and the signal fires only when the daemon itself dies.
var forker forkThread

type forkThread struct {
	mu   sync.Mutex
	reqs chan forkRequest // nil when no thread runs; guarded by mu
	live int              // processes started and not yet reaped; guarded by mu
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// start runs cmd.Start on the thread, starting the thread if none runs.
func (f *forkThread) start(cmd *exec.Cmd) error {
	f.mu.Lock()
	if f.reqs == nil {
		reqs := make(chan forkRequest)
		f.reqs = reqs
		// It ends when release closes reqs: after the last process
		// it started is reaped.
		go func() {
			runtime.LockOSThread()
			for r := range reqs {
				r.done <- r.cmd.Start()
			}
		}()
	}
	f.live++
	reqs := f.reqs
	f.mu.Unlock()
	r := forkRequest{cmd: cmd, done: make(chan error, 1)}
	reqs <- r
	err := <-r.done
	if err != nil {
		f.release()
	}
	return err
}

// release says one process started on the thread is reaped.
func (f *forkThread) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == 0 {
		return // a command reaped twice
	}
	f.live--
	if f.live == 0 {
		close(f.reqs)
		f.reqs = nil
	}
}
