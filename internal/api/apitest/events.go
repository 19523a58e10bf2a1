package apitest

import (
	"context"
	"sync"

	"github.com/jamhq/jam/internal/api/wire"
)

// Events answers with EventsFunc.
func (f Backend) Events(ctx context.Context, r wire.EventsRequest) (wire.EventStream, error) {
	if f.EventsFunc == nil {
		return nil, ErrUnset
	}
	return f.EventsFunc(ctx, r)
}

// Stream is a fake event stream that a test feeds: Send queues events,
// End ends the stream once they are read.
type Stream struct {
	ready  chan struct{}
	closed chan struct{}
	once   sync.Once

	mu    sync.Mutex
	queue []wire.Event // guarded by mu
	err   error        // guarded by mu: returned once queue is empty
}

// NewStream returns a stream with evs queued.
func NewStream(evs ...wire.Event) *Stream {
	s := &Stream{ready: make(chan struct{}, 1), closed: make(chan struct{})}
	s.Send(evs...)
	return s
}

// Send queues events.
func (s *Stream) Send(evs ...wire.Event) {
	s.mu.Lock()
	s.queue = append(s.queue, evs...)
	s.mu.Unlock()
	s.signal()
}

// End makes the stream return err (io.EOF for a clean end) after the
// queued events.
func (s *Stream) End(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.signal()
}

// TryNext implements wire.EventStream.
func (s *Stream) TryNext(context.Context) (wire.Event, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		ev := s.queue[0]
		s.queue = s.queue[1:]
		return ev, true, nil
	}
	return wire.Event{}, false, s.err
}

// Ready implements wire.EventStream.
func (s *Stream) Ready() <-chan struct{} { return s.ready }

// Close implements wire.EventStream.
func (s *Stream) Close() { s.once.Do(func() { close(s.closed) }) }

// Closed is closed once the server closed the stream.
func (s *Stream) Closed() <-chan struct{} { return s.closed }

func (s *Stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}
