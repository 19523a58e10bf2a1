// Package fanout measures the daemon's event fan-out (internal/events):
// one publisher publishes events through the broker, which commits them in
// batches to the SQLite store (each batch one fsynced transaction) and
// hands each to every subscriber; events/s is measured from the first
// publish until every subscriber has read the last event. A subscriber
// that lags is cut off with a resync event and resumes from the store, as
// a client of GET /v1/events does.
//
// There is no outside baseline: each figure is compared with the same run
// at one subscriber (what the extra subscribers cost), and the run with a
// stalled subscriber (one that subscribes and never reads) with the same
// number of readers without it (what a stalled subscriber costs the
// others; ideally nothing).
package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// Options shape one run.
type Options struct {
	// Readers is the number of subscribers that read every event.
	Readers int
	// Stalled adds a subscriber that never reads.
	Stalled bool
	// Events is the number of events published.
	Events int
	// Dir holds the store.
	Dir string
}

// Result is one run.
type Result struct {
	Readers int  `json:"readers"`
	Stalled bool `json:"stalled"`
	Events  int  `json:"events"`
	// PerSec is events per second; DeliveriesPerSec counts each event
	// once per reader.
	PerSec           float64       `json:"events_per_sec"`
	DeliveriesPerSec float64       `json:"deliveries_per_sec"`
	Elapsed          time.Duration `json:"elapsed_ns"`
	// Resyncs counts the times a reader lagged and resumed from the store.
	Resyncs int `json:"resyncs"`
	// EventsPerBatch is the broker's mean commit size.
	EventsPerBatch float64 `json:"events_per_batch"`
}

// Run runs one fan-out over a fresh store in o.Dir.
func Run(ctx context.Context, o Options) (_ Result, err error) {
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(o.Dir, "jam.db")})
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	ws, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "bench", At: time.Now()})
	if err != nil {
		return Result{}, err
	}
	br, err := events.New(events.Config{Workspace: ws.ID}, st)
	if err != nil {
		return Result{}, err
	}
	if err := br.Start(ctx); err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, br.Stop(context.WithoutCancel(ctx))) }()
	if o.Stalled {
		s, err := br.Subscribe(0)
		if err != nil {
			return Result{}, err
		}
		defer s.Close()
	}
	subs := make([]*events.Subscription, o.Readers)
	for i := range subs {
		if subs[i], err = br.Subscribe(0); err != nil {
			return Result{}, err
		}
	}
	last := int64(o.Events) // the store numbers a fresh workspace's events from 1
	var wg sync.WaitGroup
	var mu sync.Mutex
	resyncs := 0
	errs := make([]error, len(subs))
	begun := time.Now()
	for i, s := range subs {
		wg.Go(func() {
			n, err := drain(ctx, br, s, last)
			mu.Lock()
			resyncs += n
			mu.Unlock()
			errs[i] = err
		})
	}
	var pubErr error
	for i := range o.Events {
		if pubErr = br.Publish(ctx, events.Event{Kind: "bench.n", At: time.Now(), Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}); pubErr != nil {
			break
		}
	}
	if pubErr != nil {
		for _, s := range subs {
			s.Close()
		}
	}
	wg.Wait()
	elapsed := time.Since(begun)
	if err := errors.Join(append(errs, pubErr)...); err != nil {
		return Result{}, err
	}
	stats := br.Stats()
	return Result{Readers: o.Readers, Stalled: o.Stalled, Events: o.Events, Elapsed: elapsed,
		PerSec: float64(o.Events) / elapsed.Seconds(), DeliveriesPerSec: float64(o.Events*o.Readers) / elapsed.Seconds(),
		Resyncs: resyncs, EventsPerBatch: float64(stats.Committed) / float64(max(stats.Batches, 1))}, nil
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
