package events

import "sort"

// recent caches the most recently committed events of a broker, so that a
// subscriber resuming shortly after it fell behind (the common case: its
// buffer filled a moment ago) replays from memory instead of the store.
// The cache holds committed events only, exactly as the store does, and
// answers only when it holds every event the replay needs; otherwise the
// replay reads the store. It is bounded by a count and by the bytes of the
// events' data, evicting the oldest first. The broker's fan-out lock
// guards it.
type recent struct {
	maxEvents int
	maxBytes  int64

	events []*Event // ring
	head   int
	n      int
	bytes  int64
	// floor is the highest sequence of the workspace that the cache does
	// not hold: every event after it is in the cache.
	floor int64
}

// newRecent returns a cache of at most maxEvents events (none when
// maxEvents < 1) whose first event will follow last.
func newRecent(maxEvents int, maxBytes int64, last int64) recent {
	r := recent{maxEvents: max(maxEvents, 0), maxBytes: maxBytes, floor: last}
	r.events = make([]*Event, r.maxEvents)
	return r
}

// add appends a committed batch, evicting the oldest events past the
// bounds.
func (r *recent) add(batch []*Event) {
	for _, e := range batch {
		if r.maxEvents == 0 {
			r.floor = e.Seq
			continue
		}
		if r.n == r.maxEvents {
			r.evict()
		}
		r.events[(r.head+r.n)%r.maxEvents] = e
		r.n++
		r.bytes += int64(len(e.Data))
		for r.bytes > r.maxBytes && r.n > 0 {
			r.evict()
		}
	}
}

func (r *recent) evict() {
	e := r.events[r.head]
	r.events[r.head] = nil
	r.head = (r.head + 1) % r.maxEvents
	r.n--
	r.bytes -= int64(len(e.Data))
	r.floor = e.Seq
}

func (r *recent) at(i int) *Event { return r.events[(r.head+i)%r.maxEvents] }

// after returns the events with after < seq <= floor, at most limit, and
// whether the cache holds all of them.
func (r *recent) after(after, floor int64, limit int) ([]*Event, bool) {
	if after < r.floor {
		return nil, false
	}
	i := sort.Search(r.n, func(i int) bool { return r.at(i).Seq > after })
	var page []*Event
	for ; i < r.n && len(page) < limit; i++ {
		e := r.at(i)
		if e.Seq > floor {
			break
		}
		page = append(page, e)
	}
	return page, true
}
