// Package working publishes an agent's "working" indicator in a room: a
// content-free lease on Band (POST …/activity {"working": true}) that the
// platform expires about 10 s after the last report.
//
// A Publisher serves one (agent, room). Begin opens the lease for an epoch
// (a turn, or an attached agent's batch of work) and End closes it; the
// network calls run on the publisher's own goroutine, never on the caller's
// path. While open it re-reports working: true every Interval (3 s, below
// half the platform's TTL) with Timeout (2 s) per report and no retry: the
// TTL is the backstop. End of an older epoch never clears a newer one, and
// the clear of an ended epoch is always attempted before the next true. A
// report the platform refuses as unsupported (no active execution: 404 or
// 422) pauses publication until the epoch changes. Close drains: it sends
// a final clear if one is owed, waiting at most DrainTimeout (2.25 s).
package working

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Defaults from the platform's contract.
const (
	DefaultInterval     = 3 * time.Second
	DefaultTimeout      = 2 * time.Second
	DefaultDrainTimeout = 2250 * time.Millisecond
	// PlatformTTL is how long Band keeps an unrefreshed indicator.
	PlatformTTL = 10 * time.Second
)

// The cadence must stay below half the TTL and each report must end before
// the next is due.
var (
	_ = [1]struct{}{}[boolIndex(DefaultTimeout < DefaultInterval)]
	_ = [1]struct{}{}[boolIndex(2*DefaultInterval < PlatformTTL)]
)

// boolIndex is 0 for true and 1 for false, so the arrays above fail to
// compile when a bound is broken.
func boolIndex(ok bool) int {
	if ok {
		return 0
	}
	return 1
}

// Reporter sends one activity report for a room.
type Reporter interface {
	AgentActivity(ctx context.Context, room string, working bool) error
}

// Config configures a Publisher.
type Config struct {
	Reporter Reporter
	Room     string
	Logger   *slog.Logger
	// Interval, Timeout and DrainTimeout default to the package's
	// defaults.
	Interval, Timeout, DrainTimeout time.Duration
	// Unsupported reports whether an error means the platform cannot take
	// reports now (no active execution). Default: jam.ErrNotFound or
	// jam.ErrInvalid, the sentinels of 404 and 422.
	Unsupported func(error) bool
}

// Publisher publishes one room's working indicator for one agent.
type Publisher struct {
	cfg  Config
	wake chan struct{}
	done chan struct{}

	mu      sync.Mutex
	epoch   uint64 // guarded by mu: the newest epoch begun
	open    bool   // guarded by mu: epoch is open
	closing bool   // guarded by mu
	paused  uint64 // guarded by mu: the epoch whose reports were refused; 0 none
	owed    uint64 // guarded by mu: the epoch a true was last accepted for, not cleared since; 0 none
	reports int    // guarded by mu: reports sent
}

// New starts a Publisher; Close stops it.
func New(cfg Config) *Publisher {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.Unsupported == nil {
		cfg.Unsupported = func(err error) bool {
			return errors.Is(err, jam.ErrNotFound) || (errors.Is(err, jam.ErrInvalid) && !errors.Is(err, jam.ErrUnavailable))
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run()
	return p
}

// Begin opens the indicator for epoch. An epoch not newer than the newest
// begun is ignored.
func (p *Publisher) Begin(epoch uint64) {
	p.mu.Lock()
	if p.closing || epoch <= p.epoch && p.open {
		p.mu.Unlock()
		return
	}
	if epoch > p.epoch {
		p.epoch = epoch
	}
	p.open = true
	p.mu.Unlock()
	p.signal()
}

// End closes the indicator if epoch is the newest begun; the end of an
// older epoch is ignored.
func (p *Publisher) End(epoch uint64) {
	p.mu.Lock()
	if epoch != p.epoch || !p.open {
		p.mu.Unlock()
		return
	}
	p.open = false
	p.mu.Unlock()
	p.signal()
}

// Reports returns how many reports were sent.
func (p *Publisher) Reports() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reports
}

// Close ends the publisher: a clear still owed is sent, bounded by the
// drain timeout, and Close waits for the goroutine.
func (p *Publisher) Close() {
	p.mu.Lock()
	p.closing, p.open = true, false
	p.mu.Unlock()
	p.signal()
	<-p.done
}

func (p *Publisher) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run serializes the reports: true when an epoch opens and every interval
// while it stays open; false when the epoch a true was accepted for ends
// or is replaced, before any true of the next one.
func (p *Publisher) run() {
	defer close(p.done)
	t := time.NewTimer(p.cfg.Interval)
	t.Stop()
	var tried uint64 // the epoch a true was last attempted for
	due := false     // the refresh interval has passed since that attempt
	for {
		p.mu.Lock()
		open, epoch, closing, owed, paused := p.open, p.epoch, p.closing, p.owed, p.paused
		p.mu.Unlock()
		switch {
		case owed != 0 && (!open || owed != epoch):
			timeout := p.cfg.Timeout
			if closing {
				timeout = p.cfg.DrainTimeout
			}
			p.report(owed, false, timeout)
			continue // re-read: a Begin may have come meanwhile
		case closing:
			return
		case open && paused != epoch && (tried != epoch || due):
			p.report(epoch, true, p.cfg.Timeout)
			tried, due = epoch, false
			t.Reset(p.cfg.Interval)
		}
		select {
		case <-p.wake:
		case <-t.C:
			due = true
		}
	}
}

// report sends one report and records its outcome. Nothing is retried:
// the platform's TTL ends a lease whose clear was lost.
func (p *Publisher) report(epoch uint64, working bool, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := p.cfg.Reporter.AgentActivity(ctx, p.cfg.Room, working)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reports++
	switch {
	case !working:
		p.owed = 0 // attempted once, whatever the outcome
	case err == nil:
		p.owed = epoch
	case p.cfg.Unsupported(err):
		p.paused = epoch
	}
	if err != nil {
		p.cfg.Logger.Debug("activity report failed", "room", p.cfg.Room, "working", working, "err", err)
	}
}
