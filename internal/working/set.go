package working

import (
	"sync"
)

// Key names one agent in one room.
type Key struct {
	Agent string // any stable agent key (the peer key)
	Room  string
}

// Set holds the publishers of many (agent, room) pairs, created on first
// use, and closes them all at shutdown.
type Set struct {
	newPub func(k Key) *Publisher

	mu     sync.Mutex
	pubs   map[Key]*Publisher // guarded by mu
	epochs map[Key]uint64     // guarded by mu: the last epoch handed out
	closed bool               // guarded by mu
}

// NewSet builds a Set; newPub creates the publisher of a key.
func NewSet(newPub func(k Key) *Publisher) *Set {
	return &Set{newPub: newPub, pubs: map[Key]*Publisher{}, epochs: map[Key]uint64{}}
}

// Begin opens a new epoch for k and returns it; 0 once the set is closed.
func (s *Set) Begin(k Key) uint64 {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0
	}
	p, ok := s.pubs[k]
	if !ok {
		p = s.newPub(k)
		s.pubs[k] = p
	}
	s.epochs[k]++
	epoch := s.epochs[k]
	s.mu.Unlock()
	p.Begin(epoch)
	return epoch
}

// End closes epoch of k; an older epoch than the newest is ignored.
func (s *Set) End(k Key, epoch uint64) {
	s.mu.Lock()
	p := s.pubs[k]
	s.mu.Unlock()
	if p != nil {
		p.End(epoch)
	}
}

// Close closes every publisher at once, each draining within its bound,
// and waits for them.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	pubs := make([]*Publisher, 0, len(s.pubs))
	for _, p := range s.pubs {
		pubs = append(pubs, p)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Go(p.Close)
	}
	wg.Wait()
}
