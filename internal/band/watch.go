package band

import (
	"sort"
	"sync"
	"time"
)

// Working-set bounds of a person's socket.
const (
	// MaxWatchedRooms bounds the rooms a human socket watches at once
	// (each costs up to three channels).
	MaxWatchedRooms = 48
	// MaxPinnedRooms bounds the slots reserved for rooms the person opened
	// or changed locally.
	MaxPinnedRooms = 8
)

// WatchSet chooses which rooms a person's socket watches: up to
// MaxPinnedRooms pinned rooms (most recently pinned first), then rooms
// with recently observed traffic, then the directory ranked by last
// message activity, up to MaxWatchedRooms in all. It is safe for
// concurrent use.
type WatchSet struct {
	mu        sync.Mutex
	pinned    map[string]time.Time // guarded by mu: room → pin time
	traffic   map[string]time.Time // guarded by mu: room → last observed traffic
	directory map[string]time.Time // guarded by mu: room → last_message_at (zero if none)
}

// NewWatchSet returns an empty set.
func NewWatchSet() *WatchSet {
	return &WatchSet{pinned: map[string]time.Time{}, traffic: map[string]time.Time{}, directory: map[string]time.Time{}}
}

// Pin reserves a slot for room; the oldest pin is dropped past the limit.
func (w *WatchSet) Pin(room string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pinned[room] = at
	if len(w.pinned) > MaxPinnedRooms {
		oldest, first := "", true
		var ot time.Time
		for r, t := range w.pinned {
			if first || t.Before(ot) || (t.Equal(ot) && r < oldest) {
				oldest, ot, first = r, t, false
			}
		}
		delete(w.pinned, oldest)
	}
}

// Unpin releases room's pinned slot.
func (w *WatchSet) Unpin(room string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pinned, room)
}

// Observe records traffic in room.
func (w *WatchSet) Observe(room string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if at.After(w.traffic[room]) {
		w.traffic[room] = at
	}
}

// SetDirectory replaces the directory baseline: every room the person is
// in, with its last message time.
func (w *WatchSet) SetDirectory(rooms map[string]time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.directory = make(map[string]time.Time, len(rooms))
	for r, t := range rooms {
		w.directory[r] = t
	}
}

// Forget removes room from every ranking (the person left it).
func (w *WatchSet) Forget(room string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pinned, room)
	delete(w.traffic, room)
	delete(w.directory, room)
}

// Rooms returns the rooms to watch now, in priority order.
func (w *WatchSet) Rooms() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, MaxWatchedRooms)
	seen := map[string]bool{}
	add := func(ranked []string) {
		for _, r := range ranked {
			if len(out) == MaxWatchedRooms {
				return
			}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	add(newestFirst(w.pinned))
	add(newestFirst(w.traffic))
	add(newestFirst(w.directory))
	return out
}

func newestFirst(m map[string]time.Time) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := m[keys[i]], m[keys[j]]
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return keys[i] < keys[j]
	})
	return keys
}
