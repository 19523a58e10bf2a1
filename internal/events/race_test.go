package events_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/events"
)

// TestBroker_replayLiveRace subscribes, from many positions and at many
// moments, while several publishers publish concurrently, with a replay
// page and a subscriber buffer small enough that replays take many pages
// and subscribers lag and resume often. Every subscriber must see each
// event after its starting point exactly once and in sequence order, with
// no gap, across its resyncs and resumptions. Run it with -race.
func TestBroker_replayLiveRace(t *testing.T) {
	t.Parallel()
	const publishers, each, subscribers = 4, 400, 24
	const total = publishers * each
	// A recent-events cache small enough that replays cross from the store
	// to the cache.
	tb := setup(t, events.Config{ReplayPage: 5, SubscriberBuffer: 16, MaxBatch: 8, PublishBuffer: 64, RecentEvents: 40})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	var wg, pubs sync.WaitGroup
	errs := make(chan error, publishers+subscribers+1)
	published := make(chan struct{})
	// One subscriber is registered before anything is published and
	// stalls until publishing is over, so at least one lags for certain.
	certain, err := tb.b.Subscribe(0)
	require.NoError(t, err)
	wg.Go(func() {
		if err := followSub(ctx, tb.b, certain, 0, total, published); err != nil {
			errs <- fmt.Errorf("stalled subscriber: %w", err)
		}
	})
	for p := range publishers {
		pubs.Go(func() {
			for i := range each {
				if err := tb.b.Publish(ctx, ev(p*each+i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		pubs.Wait()
		close(published)
	})
	for n := range subscribers {
		wg.Go(func() {
			// Start positions spread from the beginning to past the middle,
			// and a third start live; a fresh store numbers events 1..total.
			after := events.Live
			if n%3 != 0 {
				// A position is only valid once handed out: wait for it,
				// then resume from it while publishing goes on.
				after = int64(n * total / subscribers / 2)
				if err := waitFor(ctx, tb.b, after); err != nil {
					errs <- err
					return
				}
			}
			// Every fourth stalls after a few events until publishing is
			// over, by which time more than its buffer has gone by.
			var stall <-chan struct{}
			if n%4 == 1 {
				stall = published
			}
			if err := follow(ctx, tb.b, after, total, stall); err != nil {
				errs <- fmt.Errorf("subscriber %d (after %d): %w", n, after, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Equal(t, uint64(total), tb.b.Stats().Committed)
	require.NotZero(t, tb.b.Stats().Lagged, "a stalled subscriber lagged and resumed")
}

// follow reads from after until it has seen seq last, resuming after each
// resync, and checks that every sequence after its start arrives exactly
// once and in order. With stall set, it stops reading after three events
// until stall is closed.
func follow(ctx context.Context, b *events.Broker, after int64, last int64, stall <-chan struct{}) error {
	s, err := b.Subscribe(after)
	if err != nil {
		return err
	}
	return followSub(ctx, b, s, after, last, stall)
}

// followSub is follow on a subscription already made with after.
func followSub(ctx context.Context, b *events.Broker, s *events.Subscription, after int64, last int64, stall <-chan struct{}) error {
	defer func() { s.Close() }()
	want := after + 1
	if after == events.Live {
		reset, err := s.Next(ctx)
		if err != nil {
			return err
		}
		if reset.Kind != events.KindReset {
			return fmt.Errorf("first event %s, want a reset", reset.Kind)
		}
		want = reset.Seq + 1
	}
	for seen := 0; want <= last; seen++ {
		if seen == 3 && stall != nil {
			<-stall
		}
		e, err := s.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return errors.New("stream ended without a resync")
		case err != nil:
			return err
		case e.Kind == events.KindStreamResync:
			if e.Seq != want-1 {
				return fmt.Errorf("resync at %d, but the last event seen is %d", e.Seq, want-1)
			}
			if _, err := s.Next(ctx); !errors.Is(err, io.EOF) {
				return fmt.Errorf("after a resync: %v, want io.EOF", err)
			}
			s.Close()
			var err error
			if s, err = b.Subscribe(e.Seq); err != nil {
				return err
			}
		case e.Seq != want:
			return fmt.Errorf("got seq %d, want %d", e.Seq, want)
		default:
			want++
		}
	}
	return nil
}

// waitFor returns once the broker has handed out seq.
func waitFor(ctx context.Context, b *events.Broker, seq int64) error {
	for {
		s, err := b.Subscribe(events.Live)
		if err != nil {
			return err
		}
		for {
			e, err := s.Next(ctx)
			if errors.Is(err, io.EOF) {
				break // lagged: look again
			}
			if err != nil {
				s.Close()
				return err
			}
			if e.Seq >= seq {
				s.Close()
				return nil
			}
		}
		s.Close()
	}
}
