// Package procio runs the CLI process a harness adapter drives: started
// through an executor (which puts it in a process group of its own), its
// stdio piped, its stderr handed on line by line, its output read until it
// ends, then reaped; Stop ends the whole group.
//
// Invariants:
//   - a read that fails (the CLI broke its protocol: a malformed or
//     oversize line) kills the group at once, before the wait: the process
//     is not understood any more and may live on; not reaped yet, its pid
//     is still its own;
//   - Exited closes only once the process is reaped (executor.Reaped
//     told) and Err is set: why the output ended, joined with the exit;
//   - Stop sends SIGTERM, then SIGKILL, to the group, a grace apart (the
//     caller closes stdin first: a well-behaved CLI exits at the end of its
//     input), then SIGKILLs the group once the leader is gone, so no child
//     it left lives on; it returns once the process is reaped and the
//     goroutines reading its stdout and stderr are done;
//   - every goroutine Watch starts is waited for by Stop (and Wait).
package procio

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/jamhq/jam/internal/executor"
)

// MaxStderrLine bounds a line of stderr handed on; a longer one ends the
// stderr reading (the process goes on).
const MaxStderrLine = 1 << 20

// Proc is one started process.
type Proc struct {
	ex     executor.Executor
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr io.ReadCloser

	wg     sync.WaitGroup
	exited chan struct{} // closed when the process is reaped

	mu  sync.Mutex
	err error // guarded by mu: why it ended, once exited
}

// Start starts spec through ex with stdin, stdout and stderr piped. Its
// errors are the executor's, unwrapped: the caller names the command (and
// hides its secrets). Watch must follow.
func Start(ex executor.Executor, spec executor.Spec) (*Proc, error) {
	cmd, err := ex.Command(spec)
	if err != nil {
		return nil, err
	}
	p := &Proc{ex: ex, cmd: cmd, exited: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if p.stderr, err = cmd.StderrPipe(); err != nil {
		return nil, err
	}
	if err := executor.Start(ex, cmd); err != nil {
		return nil, err
	}
	return p, nil
}

// Watch says what to do with a started process's output.
type Watch struct {
	// Read reads Stdout until it ends (nil at its end, an error when the
	// process broke the protocol). Required.
	Read func() error
	// Stderr receives each line of stderr. Optional.
	Stderr func(line string)
	// Broken is told Read's error, before the group is killed. Optional.
	Broken func(err error)
	// Exit is called once the process is reaped, before Exited closes.
	// Optional.
	Exit func()
}

// Watch starts the goroutines that read the process's stderr and stdout
// and reap it. Call it once, after Start.
func (p *Proc) Watch(w Watch) {
	p.wg.Go(func() {
		sc := bufio.NewScanner(p.stderr)
		sc.Buffer(make([]byte, 64<<10), MaxStderrLine)
		for sc.Scan() {
			if w.Stderr != nil {
				w.Stderr(sc.Text())
			}
		}
	})
	p.wg.Go(func() {
		err := w.Read()
		if err != nil {
			if w.Broken != nil {
				w.Broken(err)
			}
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
		// The output is over: whatever the process does now, it is done
		// for us. Wait reaps it (Stop kills it if it lingers).
		werr := p.cmd.Wait()
		executor.Reaped(p.ex, p.cmd)
		p.mu.Lock()
		p.err = errors.Join(err, werr)
		p.mu.Unlock()
		if w.Exit != nil {
			w.Exit()
		}
		close(p.exited)
	})
}

// Pid is the process's id, which is also its group's.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stdout is the process's output, for Watch's Read.
func (p *Proc) Stdout() io.Reader { return p.stdout }

// Stdin is the process's input.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// Exited is closed when the process has exited and is reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is why the process ended (the read's error joined with the exit's);
// nil before Exited closes.
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Wait waits for the process to exit and Watch's goroutines to end.
func (p *Proc) Wait() {
	<-p.exited
	p.wg.Wait()
}

// Stop ends the process: its group gets SIGTERM, then SIGKILL, grace
// apart, after a first grace for the process to exit on its own (the
// caller has closed stdin); once the leader is gone the group gets SIGKILL,
// for any child it left. When ctx ends first the group is killed at once
// and Stop returns ctx's error. Either way it returns once the process is
// reaped and Watch's goroutines are done. Safe to call more than once.
func (p *Proc) Stop(ctx context.Context, grace time.Duration) error {
	pgid := p.cmd.Process.Pid
	var err error
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(-pgid, sig)
		}
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
			t.Stop()
			// The leader is gone; children it left in the group go too.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			p.wg.Wait()
			return nil
		case <-t.C:
			continue
		case <-ctx.Done():
			t.Stop()
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			err = ctx.Err()
		}
		break
	}
	p.Wait()
	return err
}
