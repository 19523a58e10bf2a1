package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/jam"
)

// storageHealth remembers the last write the disk refused (full, or the
// data directory not writable), so that status reports it while it lasts.
// A later write that succeeds through the same path (a message spooled or
// queued) clears it. Nothing acknowledged is lost meanwhile: a refused
// write kept nothing and acknowledged nothing (see package spool).
type storageHealth struct {
	// path and file are the database file and what it was when the store
	// opened, set once before the control API starts: a database file
	// removed or replaced while the daemon runs is reported too (its
	// writes would go to a file nobody opens again).
	path string
	file os.FileInfo

	mu    sync.Mutex
	err   error           // guarded by mu: the last refusal, nil when healthy
	when  time.Time       // guarded by mu
	check wire.StoreCheck // guarded by mu: the consistency check at start
}

// maxCheckProblems is how many of quick_check's problems status shows.
const maxCheckProblems = 5

// startStoreCheck runs the store's consistency check (SQLite's
// quick_check) in the background: on a large database it reads every
// page, and the daemon serves meanwhile. Status shows it running, then ok
// or its first problems; a failure is logged as an error too. The stop
// cancels it and waits for it.
func (d *daemon) startStoreCheck(stack *stopStack) {
	d.storage.mu.Lock()
	d.storage.check = wire.StoreCheck{State: wire.StoreCheckRunning}
	d.storage.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		begun := time.Now()
		err := d.store.Check(ctx)
		if ctx.Err() != nil {
			return
		}
		res := wire.StoreCheck{State: wire.StoreCheckOK, Seconds: time.Since(begun).Seconds()}
		if err != nil {
			res.State, res.Detail = wire.StoreCheckFailed, firstProblems(err.Error())
			d.log.Error("store check found damage; back up the data directory and restore jam.db from a copy", "err", err, "took", time.Since(begun))
		} else {
			d.log.Info("store check ok", "took", time.Since(begun).Round(time.Millisecond))
		}
		d.storage.mu.Lock()
		d.storage.check = res
		d.storage.mu.Unlock()
	}()
	stack.push("store check", func(context.Context) error {
		cancel()
		<-done
		return nil
	})
}

// firstProblems keeps the first maxCheckProblems of a check's "; "-joined
// problems.
func firstProblems(msg string) string {
	parts := strings.SplitN(msg, "; ", maxCheckProblems+1)
	if len(parts) > maxCheckProblems {
		return strings.Join(parts[:maxCheckProblems], "; ") + "; …"
	}
	return msg
}

// checkResult is the consistency check's state.
func (h *storageHealth) checkResult() wire.StoreCheck {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.check
}

// observe records err if it is a refused write.
func (h *storageHealth) observe(err error) {
	if err == nil || !errors.Is(err, jam.ErrStorageFull) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err, h.when = err, time.Now()
}

// engineEvent clears the fault when the pipeline wrote again, and records
// a refused write it reports.
func (h *storageHealth) engineEvent(ev engine.Event) {
	switch ev.Kind {
	case engine.EventSpooled, engine.EventQueued, engine.EventQueuedUnrouted:
		h.mu.Lock()
		h.err = nil
		h.mu.Unlock()
	default:
		h.observe(ev.Err)
	}
}

// watch records the database file to check for removal.
func (h *storageHealth) watch(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("database file: %w", err)
	}
	h.path, h.file = path, fi
	return nil
}

// problem describes the current fault, or "" when there is none.
func (h *storageHealth) problem() string {
	if h.file != nil {
		if fi, err := os.Stat(h.path); err != nil || !os.SameFile(fi, h.file) {
			return fmt.Sprintf("database file %s was removed or replaced while jamd runs; restart jamd to recover", h.path)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return ""
	}
	return fmt.Sprintf("%v (since %s)", h.err, h.when.UTC().Format(time.RFC3339))
}
