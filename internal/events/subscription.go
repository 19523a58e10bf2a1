package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrClosed is what a subscription returns after its Close.
var ErrClosed = errors.New("subscription closed")

// Subscription is one subscriber's view of the event stream: a replay from
// the store, if it asked for one, then the live events, each exactly once
// and in sequence order. Read it from one goroutine; Close may be called
// from any.
type Subscription struct {
	b     *Broker
	ready chan struct{} // signalled (capacity 1) when live events arrive or the subscription ends

	// The reader's state, touched only by the goroutine that reads.
	//
	// floor is the last sequence handed out when the subscription was
	// registered: replay returns events up to it, and the live buffer
	// holds only events after it.
	floor        int64
	pending      []*Event // read before anything else: the reset event, or a replayed page
	replaying    bool     // more replay may be waiting in the store
	replayCursor int64    // the last sequence replay has read
	last         int64    // the sequence of the last event returned: the resume point
	done         bool     // the stream ended with stream_resync; reads return io.EOF

	mu     sync.Mutex
	live   ring  // guarded by mu
	lagged bool  // guarded by mu: the buffer filled; the stream ends once it is drained
	err    error // guarded by mu: set when the subscription was closed or the broker stopped
}

func newSubscription(b *Broker, floor int64, capacity int) *Subscription {
	return &Subscription{b: b, ready: make(chan struct{}, 1), floor: floor, live: newRing(capacity)}
}

// Ready is signalled when TryNext may have something new. A reader that
// got nothing from TryNext waits on it (and on its own context).
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Last returns the sequence of the last event returned (the reset's for a
// new subscription): the position to resume after.
func (s *Subscription) Last() int64 { return s.last }

// TryNext returns the next event if one is ready, without waiting for a
// live event; a replaying subscription reads its next page from the store
// here. ok is false when nothing is ready. After a stream_resync event it
// returns io.EOF; after Close, ErrClosed; after the broker stopped, an
// error wrapping jam.ErrStopping (once the buffered events are read); a
// failed replay read returns the store's error, and the subscriber should
// resume after Last with a new subscription.
func (s *Subscription) TryNext(ctx context.Context) (ev *Event, ok bool, err error) {
	if s.done {
		return nil, false, io.EOF
	}
	for {
		if len(s.pending) > 0 {
			e := s.pending[0]
			s.pending[0] = nil
			s.pending = s.pending[1:]
			s.last = e.Seq
			return e, true, nil
		}
		if !s.replaying {
			break
		}
		if err := s.readReplay(ctx); err != nil {
			return nil, false, err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		e, ok := s.live.pop()
		if !ok {
			break
		}
		if e.Seq <= s.last {
			continue // already returned by replay; cannot happen while floor holds, kept as a guard
		}
		s.last = e.Seq
		return e, true, nil
	}
	switch {
	case s.err != nil:
		return nil, false, s.err
	case s.lagged:
		s.done = true
		return &Event{Seq: s.last, Kind: KindStreamResync, At: s.b.now(), Data: mustJSON(ResyncData{Reason: ReasonLagged})}, true, nil
	}
	return nil, false, nil
}

// readReplay reads the next page of the replay into pending, and ends the
// replay at the floor: later events come from the live buffer.
func (s *Subscription) readReplay(ctx context.Context) error {
	if page, ok := s.b.replayPage(s.replayCursor, s.floor, s.b.cfg.ReplayPage); ok {
		s.pending = append(s.pending, page...)
		if len(page) > 0 {
			s.replayCursor = page[len(page)-1].Seq
		}
		if len(page) < s.b.cfg.ReplayPage || s.replayCursor >= s.floor {
			s.replaying = false
		}
		return nil
	}
	recs, err := s.b.st.EventList(ctx, s.b.cfg.Workspace, s.replayCursor, s.b.cfg.ReplayPage)
	if err != nil {
		return fmt.Errorf("replay events after %d: %w", s.replayCursor, err)
	}
	s.b.stats.replayStored.Add(1)
	if len(recs) < s.b.cfg.ReplayPage {
		s.replaying = false
	}
	for _, r := range recs {
		if r.Seq > s.floor {
			s.replaying = false
			break
		}
		s.pending = append(s.pending, fromRecord(r))
		s.replayCursor = r.Seq
	}
	if s.replayCursor >= s.floor {
		s.replaying = false
	}
	return nil
}

// Next returns the next event, waiting for one until ctx ends. It returns
// what TryNext returns, or ctx's error.
func (s *Subscription) Next(ctx context.Context) (*Event, error) {
	for {
		e, ok, err := s.TryNext(ctx)
		if err != nil || ok {
			return e, err
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Close ends the subscription and releases its buffer. Safe to call more
// than once and concurrently with a read.
func (s *Subscription) Close() {
	s.b.unsubscribe(s)
	s.end(ErrClosed)
}

// deliver appends a committed batch to the live buffer, and reports false
// if the buffer filled (the subscription is lagged from then on and gets
// no more).
func (s *Subscription) deliver(batch []*Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	added := false
	ok := true
	for _, e := range batch {
		if e.Seq <= s.floor {
			continue
		}
		if !s.live.push(e) {
			s.lagged, ok = true, false
			break
		}
		added = true
	}
	if added || !ok {
		s.signal()
	}
	return ok
}

// end ends the subscription with err, keeping the first cause.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// ring is a bounded FIFO of events.
type ring struct {
	buf  []*Event
	head int
	n    int
}

func newRing(capacity int) ring { return ring{buf: make([]*Event, capacity)} }

func (r *ring) push(e *Event) bool {
	if r.n == len(r.buf) {
		return false
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	return true
}

func (r *ring) pop() (*Event, bool) {
	if r.n == 0 {
		return nil, false
	}
	e := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return e, true
}
