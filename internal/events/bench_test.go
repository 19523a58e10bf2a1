package events_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/events"
)

// BenchmarkFanout measures events per second from one publisher through
// the broker, on the SQLite store (each batch one fsynced commit), to 1,
// 10 and 100 subscribers, and to 10 with an eleventh that never reads. A
// subscriber that lags resumes from the store, as a client would;
// "resyncs" counts those resumptions.
func BenchmarkFanout(b *testing.B) {
	for _, tc := range []struct {
		name    string
		readers int
		stalled bool
	}{
		{"subs=1", 1, false},
		{"subs=10", 10, false},
		{"subs=100", 100, false},
		{"subs=10+1stalled", 10, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st, ws := openStore(b)
			br, err := events.New(events.Config{Workspace: ws}, st)
			require.NoError(b, err)
			require.NoError(b, br.Start(context.Background()))
			defer func() { require.NoError(b, br.Stop(context.Background())) }()
			if tc.stalled {
				s, err := br.Subscribe(0)
				require.NoError(b, err)
				defer s.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			last := int64(b.N)
			var wg sync.WaitGroup
			var mu sync.Mutex
			resyncs := 0
			errs := make(chan error, tc.readers)
			subs := make([]*events.Subscription, tc.readers)
			for i := range subs {
				subs[i], err = br.Subscribe(0)
				require.NoError(b, err)
			}
			b.ResetTimer()
			begun := time.Now()
			for _, s := range subs {
				wg.Go(func() {
					n, err := drain(ctx, br, s, last)
					mu.Lock()
					resyncs += n
					mu.Unlock()
					if err != nil {
						errs <- err
					}
				})
			}
			for i := range b.N {
				if err := br.Publish(ctx, ev(i)); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			elapsed := time.Since(begun)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			stats := br.Stats()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(b.N*tc.readers)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(stats.Committed)/float64(max(stats.Batches, 1)), "events/batch")
			b.ReportMetric(float64(resyncs), "resyncs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// drain reads s until it has seen seq last, resuming after every resync,
// and returns how many resyncs it took.
func drain(ctx context.Context, b *events.Broker, s *events.Subscription, last int64) (resyncs int, err error) {
	defer func() { s.Close() }()
	for seen := int64(0); seen < last; {
		e, err := s.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return resyncs, errors.New("stream ended without a resync")
		case err != nil:
			return resyncs, err
		case e.Kind == events.KindStreamResync:
			resyncs++
			s.Close()
			if s, err = b.Subscribe(e.Seq); err != nil {
				return resyncs, err
			}
		default:
			seen = e.Seq
		}
	}
	return resyncs, nil
}
