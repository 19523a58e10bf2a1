package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jamhq/jam/internal/proc"
)

// processDir, under the data directory, holds a record of each agent
// process group jamd runs (package proc's ledger).
const processDir = "run"

// reapGrace is how long an agent a previous run left gets between SIGTERM
// and SIGKILL.
const reapGrace = 2 * time.Second

// startProcesses opens the ledger of agent process groups and ends every
// group a previous run recorded and left running; it runs before any agent
// starts. Its stop, the last of all, kills any group still recorded (the
// owned runtimes stopped theirs already and removed their records).
func (d *daemon) startProcesses(ctx context.Context, stack *stopStack) error {
	procs, err := proc.OpenLedger(filepath.Join(d.cfg.DataDir, processDir), d.log)
	if err != nil {
		return err
	}
	if _, err := procs.Reap(ctx, reapGrace); err != nil {
		return fmt.Errorf("end agents a previous run left: %w", err)
	}
	d.procs = procs
	stack.push("agent processes", func(context.Context) error {
		if n := procs.KillAll(); n > 0 {
			d.log.Warn("agent process groups still running at the end of the stop were killed", "groups", n)
		}
		return nil
	})
	return nil
}

// killOnSecondSignal watches, while jamd stops, for a second SIGINT or
// SIGTERM: then every agent process group is killed and the signal raised
// again with its default action, so jamd ends at once, as a second signal
// asks, and no agent is left behind. The returned function ends the watch.
func (d *daemon) killOnSecondSignal() (done func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case s := <-sigs:
			n := 0
			if d.procs != nil {
				n = d.procs.KillAll()
			}
			d.log.Error("second signal while stopping: agent processes killed, exiting at once", "signal", s, "groups", n)
			signal.Reset(s)
			_ = syscall.Kill(os.Getpid(), s.(syscall.Signal))
		case <-quit:
		}
	})
	return func() {
		signal.Stop(sigs)
		close(quit)
		wg.Wait()
	}
}

// stopStack holds the stop functions of started components, so they stop
// in the reverse of the order they started, on a normal stop and when a
// later component fails to start.
type stopStack struct {
	log   *slog.Logger
	items []stopItem
}

type stopItem struct {
	name string
	stop func(ctx context.Context) error
}

func (s *stopStack) push(name string, stop func(ctx context.Context) error) {
	s.items = append(s.items, stopItem{name: name, stop: stop})
}

// unwind stops every component, newest first, sharing one deadline. A
// component that fails or overruns does not keep the others from stopping.
func (s *stopStack) unwind(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for i := len(s.items) - 1; i >= 0; i-- {
		it := s.items[i]
		begun := time.Now()
		if err := it.stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", it.name, err))
			continue
		}
		s.log.Debug("stopped", "what", it.name, "took", time.Since(begun))
	}
	s.items = nil
	return errors.Join(errs...)
}
