package working

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// call is one report the publisher made; the test answers it.
type call struct {
	ctx     context.Context
	room    string
	working bool
	answer  chan error
}

// stepReporter hands every report to the test and waits for its answer,
// so the test decides the interleaving.
type stepReporter struct{ calls chan call }

func newStepReporter() *stepReporter { return &stepReporter{calls: make(chan call)} }

func (r *stepReporter) AgentActivity(ctx context.Context, room string, working bool) error {
	c := call{ctx: ctx, room: room, working: working, answer: make(chan error, 1)}
	select {
	case r.calls <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next waits for the next report, checks it, and answers err.
func (r *stepReporter) next(t *testing.T, working bool, err error) call {
	t.Helper()
	select {
	case c := <-r.calls:
		require.Equal(t, working, c.working, "report working=%v", c.working)
		c.answer <- err
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no report (want working=%v)", working)
		return call{}
	}
}

// quiet asserts that no report comes while the publisher is idle: it
// closes the publisher and requires that Close sends nothing.
func quietClose(t *testing.T, r *stepReporter, p *Publisher) {
	t.Helper()
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case c := <-r.calls:
		t.Fatalf("unexpected report working=%v", c.working)
	case <-done:
	}
}

func newPub(r Reporter, interval time.Duration) *Publisher {
	return New(Config{Reporter: r, Room: "r1", Interval: interval, Timeout: time.Second, DrainTimeout: time.Second})
}

func TestPublisher_refreshesWhileOpenAndClearsOnEnd(t *testing.T) {
	t.Parallel()
	r := newStepReporter()
	p := newPub(r, 5*time.Millisecond)
	p.Begin(1)
	c := r.next(t, true, nil)
	require.Equal(t, "r1", c.room)
	deadline, ok := c.ctx.Deadline()
	require.True(t, ok, "every report is bounded")
	require.WithinDuration(t, time.Now().Add(time.Second), deadline, time.Second)
	r.next(t, true, nil) // refreshed after the interval
	r.next(t, true, fmt.Errorf("503: %w", jam.ErrUnavailable))
	r.next(t, true, nil) // a transient failure does not stop the refresh
	p.End(1)
	// A refresh may already be on its way; the clear follows it.
	for c := range r.calls {
		c.answer <- nil
		if !c.working {
			break
		}
	}
	quietClose(t, r, p)
}

func TestPublisher_olderEpochCannotClearNewer(t *testing.T) {
	t.Parallel()
	r := newStepReporter()
	p := newPub(r, time.Hour)
	p.Begin(1)
	r.next(t, true, nil)
	p.Begin(2)
	// Epoch 1's true must be cleared before epoch 2's true.
	r.next(t, false, nil)
	r.next(t, true, nil)
	p.End(1) // stale: ignored
	p.Begin(1)
	// Nothing changes: Close now owes exactly one clear, for epoch 2.
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	r.next(t, false, nil)
	<-done
}

func TestPublisher_unsupportedPausesUntilTheEpochChanges(t *testing.T) {
	t.Parallel()
	r := newStepReporter()
	p := newPub(r, time.Millisecond)
	p.Begin(1)
	r.next(t, true, fmt.Errorf("no active execution: %w", jam.ErrNotFound))
	// Paused: no refresh for epoch 1 however long it stays open.
	select {
	case c := <-r.calls:
		t.Fatalf("reported while paused: working=%v", c.working)
	case <-time.After(50 * time.Millisecond):
	}
	p.Begin(2)
	r.next(t, true, nil)
	p.End(2)
	r.next(t, false, nil)
	quietClose(t, r, p)
}

func TestPublisher_closeDrainsWithinItsBound(t *testing.T) {
	t.Parallel()
	r := newStepReporter()
	p := New(Config{Reporter: r, Room: "r1", Interval: time.Hour, Timeout: time.Second, DrainTimeout: 50 * time.Millisecond})
	p.Begin(1)
	r.next(t, true, nil)
	start := time.Now()
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	c := <-r.calls // the clear; never answered
	require.False(t, c.working)
	<-done
	require.Less(t, time.Since(start), 5*time.Second, "Close is bounded by the drain timeout")
	require.Equal(t, 2, p.Reports())
}

func TestSet_epochsPerKey(t *testing.T) {
	t.Parallel()
	reps := map[string]*stepReporter{"a": newStepReporter(), "b": newStepReporter()}
	s := NewSet(func(k Key) *Publisher { return newPub(reps[k.Room], time.Hour) })
	a, b := Key{Agent: "p/x", Room: "a"}, Key{Agent: "p/x", Room: "b"}
	e1 := s.Begin(a)
	reps["a"].next(t, true, nil)
	require.Equal(t, uint64(1), s.Begin(b))
	reps["b"].next(t, true, nil)
	e2 := s.Begin(a)
	require.Greater(t, e2, e1)
	reps["a"].next(t, false, nil) // epoch e1's clear before e2's true
	reps["a"].next(t, true, nil)
	s.End(a, e1) // stale
	s.End(a, e2)
	reps["a"].next(t, false, nil)

	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	reps["b"].next(t, false, nil)
	<-done
	require.Zero(t, s.Begin(a), "closed")
}
