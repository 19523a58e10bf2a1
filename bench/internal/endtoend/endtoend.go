package endtoend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/bench/internal/measure"
)

// Options shape a run.
type Options struct {
	// Rate is the offered load of the fixed-load run, in messages/s.
	Rate float64
	// Duration is how long each run posts.
	Duration time.Duration
	// Posters is the number of closed-loop posters at saturation, and
	// the number of posting goroutines of the fixed-load run.
	Posters int
	// Rooms is the number of bound rooms the posts go to (jam). Default 10.
	Rooms int
	// Ackers bounds the agent's concurrent acknowledgements (jam).
	// Default 8.
	Ackers int
	// Drain bounds the wait for the last messages after posting stops.
	// Default 30s.
	Drain time.Duration
	// Dir holds the data of the run; keep it short (unix socket paths).
	Dir string
}

func (o Options) withDefaults() Options {
	if o.Rooms == 0 {
		o.Rooms = 10
	}
	if o.Ackers == 0 {
		o.Ackers = 8
	}
	if o.Posters == 0 {
		o.Posters = 16
	}
	if o.Drain == 0 {
		o.Drain = 30 * time.Second
	}
	return o
}

// Load names a run's load.
type Load string

const (
	Fixed      Load = "fixed"
	Saturation Load = "saturation"
)

// Result is one run.
type Result struct {
	Load Load `json:"load"`
	// Offered is the offered rate of a fixed-load run (0 at saturation).
	Offered float64 `json:"offered_per_sec,omitempty"`
	// Delivery: post → the agent has the message. PerSec counts
	// deliveries over the run.
	Delivery measure.Stats `json:"delivery"`
	// Settlement: post → the acknowledgement returned. PerSec counts
	// settled messages over the run.
	Settlement measure.Stats `json:"settlement"`
	// Lost counts posted messages not settled when the drain ended.
	Lost int `json:"lost"`
}

// tracker follows each posted message from post to settlement.
type tracker struct {
	mu    sync.Mutex
	msgs  map[int]*times // guarded by mu
	start time.Time
	next  atomic.Int64
}

type times struct {
	posted, delivered, settled time.Time
	done                       chan struct{} // closed once settled
}

func newTracker() *tracker { return &tracker{msgs: map[int]*times{}, start: time.Now()} }

// post registers message n as posted at at.
func (t *tracker) post(n int, at time.Time) {
	t.mu.Lock()
	t.msgs[n] = &times{posted: at, done: make(chan struct{})}
	t.mu.Unlock()
}

// deliver marks n delivered at at, reporting whether this was the first
// delivery of a message this tracker posted.
func (t *tracker) deliver(n int, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.msgs[n]
	if m == nil || !m.delivered.IsZero() {
		return false
	}
	m.delivered = at
	return true
}

func (t *tracker) settle(n int, at time.Time) {
	t.mu.Lock()
	if m := t.msgs[n]; m != nil && m.settled.IsZero() {
		m.settled = at
		close(m.done)
	}
	t.mu.Unlock()
}

// wait waits until n is settled, for at most d.
func (t *tracker) wait(ctx context.Context, n int, d time.Duration) error {
	t.mu.Lock()
	m := t.msgs[n]
	t.mu.Unlock()
	if m == nil {
		return fmt.Errorf("message %d was not posted", n)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-m.done:
		return nil
	case <-timer.C:
		return fmt.Errorf("message %d not settled within %s", n, d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pending counts posted messages not yet settled.
func (t *tracker) pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.msgs {
		if m.settled.IsZero() {
			n++
		}
	}
	return n
}

// result summarises the run: rates over the time from the first post to
// the last settlement.
func (t *tracker) result(load Load, offered float64) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	var del, set []time.Duration
	var last time.Time
	lost := 0
	for _, m := range t.msgs {
		if !m.delivered.IsZero() {
			del = append(del, m.delivered.Sub(m.posted))
		}
		if m.settled.IsZero() {
			lost++
			continue
		}
		set = append(set, m.settled.Sub(m.posted))
		if m.settled.After(last) {
			last = m.settled
		}
	}
	elapsed := last.Sub(t.start)
	return Result{Load: load, Offered: offered, Delivery: measure.Summarize(del, elapsed),
		Settlement: measure.Summarize(set, elapsed), Lost: lost}
}

// text is the body of message n, mentioning handle; number reads n back.
func text(handle string, n int) string { return fmt.Sprintf("@%s bench #%d", handle, n) }

func number(content string) (int, bool) {
	i := strings.LastIndexByte(content, '#')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(content[i+1:]))
	return n, err == nil
}

// postFunc posts message n (registering it in tr first) and, for the
// baseline, also reads and settles it.
type postFunc func(ctx context.Context, worker, n int, at time.Time) error

// runFixed posts at o.Rate for o.Duration from o.Posters goroutines, each
// post at its scheduled time (or as soon as a poster is free).
func runFixed(ctx context.Context, o Options, tr *tracker, post postFunc) error {
	type job struct {
		n  int
		at time.Time
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	errs := make([]error, o.Posters)
	for w := range o.Posters {
		wg.Go(func() {
			for j := range jobs {
				if err := post(ctx, w, j.n, j.at); err != nil && errs[w] == nil {
					errs[w] = err
				}
			}
		})
	}
	interval := time.Duration(float64(time.Second) / o.Rate)
	start := time.Now()
	tr.start = start
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= o.Duration || ctx.Err() != nil {
			break
		}
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		select {
		case jobs <- job{n: int(tr.next.Add(1)), at: at}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// runSaturation posts from o.Posters closed-loop goroutines for
// o.Duration: each posts a message, waits until it is settled, and posts
// the next, so o.Posters messages are in flight at any time.
func runSaturation(ctx context.Context, o Options, tr *tracker, post postFunc) error {
	var wg sync.WaitGroup
	errs := make([]error, o.Posters)
	tr.start = time.Now()
	deadline := tr.start.Add(o.Duration)
	for w := range o.Posters {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n := int(tr.next.Add(1))
				if err := post(ctx, w, n, time.Now()); err != nil {
					errs[w] = err
					return
				}
				if err := tr.wait(ctx, n, o.Drain); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// waitSettled waits until every posted message is settled or d passes.
func waitSettled(ctx context.Context, tr *tracker, d time.Duration) {
	deadline := time.Now().Add(d)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for tr.pending() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
