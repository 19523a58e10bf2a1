package daemon

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

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

	mu   sync.Mutex
	err  error     // guarded by mu: the last refusal, nil when healthy
	when time.Time // guarded by mu
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
