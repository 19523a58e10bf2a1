package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Store is what the broker needs of the store.
type Store interface {
	EventAppend(ctx context.Context, events []store.EventRecord) ([]int64, error)
	EventList(ctx context.Context, ws jam.WorkspaceID, after int64, limit int) ([]store.EventRecord, error)
	EventLast(ctx context.Context, ws jam.WorkspaceID) (int64, error)
	EventPrune(ctx context.Context, keepNewest int, before time.Time) (int, error)
}

// SnapshotFunc returns one provider's live state as JSON. It runs under
// the broker's fan-out lock, so it must be quick, must not block, and must
// not call the broker (Publish could wait for the writer, which waits for
// that lock).
type SnapshotFunc func() (json.RawMessage, error)

// Config configures a [Broker].
type Config struct {
	// Workspace is the workspace whose events the broker carries.
	// Required.
	Workspace jam.WorkspaceID
	// Logger receives store failures and peer log failures. Nil discards.
	Logger *slog.Logger
	// PublishBuffer bounds the events published but not yet committed;
	// Publish blocks while it is full. Default 8192.
	PublishBuffer int
	// SubscriberBuffer bounds the committed events waiting for one
	// subscriber; a subscriber that lets it fill is lagged. Default 1024.
	SubscriberBuffer int
	// MaxBatch bounds the events committed in one transaction. Default 512.
	MaxBatch int
	// ReplayPage is how many events a replaying subscription reads from the
	// store at a time. Default 512.
	ReplayPage int
	// RecentEvents and RecentBytes bound the cache of the most recently
	// committed events that replays are served from when it holds all they
	// need (see the package doc). Defaults 8192 events and 8 MiB of data;
	// a negative RecentEvents disables the cache.
	RecentEvents int
	RecentBytes  int64
	// RetainEvents and RetainAge bound the stored log: at Start and every
	// PruneInterval, events beyond the RetainEvents newest and events older
	// than RetainAge are deleted. Defaults 100,000 and 7 days; a negative
	// PruneInterval prunes only at Start. Default interval 1 hour.
	RetainEvents  int
	RetainAge     time.Duration
	PruneInterval time.Duration
	// PeerLogDir, when set, receives one JSON line per event that names a
	// peer, in PeerLogDir/<profile>/<scope>.log (see peerLog).
	PeerLogDir string
	// PeerLogMaxBytes is the size at which a peer log rotates. Default
	// 5 MiB.
	PeerLogMaxBytes int64
	// PeerLogMaxOpen bounds the peer log files open at once. Default 16.
	PeerLogMaxOpen int
	// RetryMin and RetryMax bound the backoff of a failed commit. Defaults
	// 50ms and 5s.
	RetryMin, RetryMax time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.PublishBuffer == 0 {
		c.PublishBuffer = 8192
	}
	if c.SubscriberBuffer == 0 {
		c.SubscriberBuffer = 1024
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 512
	}
	if c.ReplayPage == 0 {
		c.ReplayPage = 512
	}
	if c.RecentEvents == 0 {
		c.RecentEvents = 8192
	}
	if c.RecentBytes == 0 {
		c.RecentBytes = 8 << 20
	}
	if c.RetainEvents == 0 {
		c.RetainEvents = 100_000
	}
	if c.RetainAge == 0 {
		c.RetainAge = 7 * 24 * time.Hour
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = time.Hour
	}
	if c.PeerLogMaxBytes == 0 {
		c.PeerLogMaxBytes = 5 << 20
	}
	if c.PeerLogMaxOpen == 0 {
		c.PeerLogMaxOpen = 16
	}
	if c.RetryMin == 0 {
		c.RetryMin = 50 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if _, err := jam.ParseID[jam.WorkspaceID](string(c.Workspace)); err != nil {
		return err
	}
	switch {
	case c.PublishBuffer < 1:
		return fmt.Errorf("%w: publish buffer %d must be positive", jam.ErrInvalid, c.PublishBuffer)
	case c.SubscriberBuffer < 1:
		return fmt.Errorf("%w: subscriber buffer %d must be positive", jam.ErrInvalid, c.SubscriberBuffer)
	case c.MaxBatch < 1:
		return fmt.Errorf("%w: max batch %d must be positive", jam.ErrInvalid, c.MaxBatch)
	case c.ReplayPage < 1 || c.ReplayPage > store.MaxEventListLimit:
		return fmt.Errorf("%w: replay page %d is outside 1 to %d", jam.ErrInvalid, c.ReplayPage, store.MaxEventListLimit)
	case c.RecentBytes < 0:
		return fmt.Errorf("%w: recent bytes %d must be positive", jam.ErrInvalid, c.RecentBytes)
	case c.RetainEvents < 1:
		return fmt.Errorf("%w: retain events %d must be positive", jam.ErrInvalid, c.RetainEvents)
	case c.RetainAge < 0:
		return fmt.Errorf("%w: retain age %s must be positive", jam.ErrInvalid, c.RetainAge)
	case c.PeerLogMaxBytes < 1:
		return fmt.Errorf("%w: peer log max bytes %d must be positive", jam.ErrInvalid, c.PeerLogMaxBytes)
	case c.PeerLogMaxOpen < 1:
		return fmt.Errorf("%w: peer log max open %d must be positive", jam.ErrInvalid, c.PeerLogMaxOpen)
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("%w: retry bounds %s and %s", jam.ErrInvalid, c.RetryMin, c.RetryMax)
	}
	return nil
}

// Broker sequences events through the store and fans them out to
// subscribers. See the package doc for its design. All methods are safe
// for concurrent use.
type Broker struct {
	cfg Config
	st  Store
	log *slog.Logger

	// pub is the bounded publish buffer; only the writer receives from it.
	pub chan *Event
	// pubMu orders publishers against Stop: Publish holds it shared while
	// it hands an event over, and Stop takes it exclusively to set
	// pubClosed, after which no event can enter pub and the writer may
	// drain it and exit.
	pubMu     sync.RWMutex
	pubClosed bool // guarded by pubMu
	// stopping is closed when Stop begins; it releases publishers blocked
	// on a full buffer. drained is closed once pubClosed is set.
	stopping chan struct{}
	drained  chan struct{}
	stopOnce sync.Once

	writerDone chan struct{}
	wg         sync.WaitGroup // the writer and the pruner

	stats   stats
	aborted atomic.Bool // set when a stop cut the writer off before it committed everything

	// mu is the fan-out lock: the writer holds it while it hands a batch to
	// the subscribers, and Subscribe while it registers one, so a new
	// subscription sees each committed batch either in the store (replay)
	// or in its buffer (live), never in both or neither. Lock order: mu,
	// then a subscription's mu.
	mu        sync.Mutex
	started   bool                       // guarded by mu
	stopped   bool                       // guarded by mu
	cancel    context.CancelCauseFunc    // guarded by mu: ends the writer's and pruner's context
	last      int64                      // guarded by mu: the highest sequence handed to subscribers
	subs      map[*Subscription]struct{} // guarded by mu
	recent    recent                     // guarded by mu
	providers map[string]SnapshotFunc    // guarded by mu
	order     []string                   // guarded by mu: provider names, in registration order
}

// stats counts the broker's work, for tests and benchmarks.
type stats struct {
	committed    atomic.Uint64
	batches      atomic.Uint64
	lagged       atomic.Uint64
	dropped      atomic.Uint64
	replayCached atomic.Uint64
	replayStored atomic.Uint64
}

// Stats is a snapshot of the broker's counters.
type Stats struct {
	// Committed events and the transactions (batches) that stored them.
	Committed, Batches uint64
	// Lagged counts subscriptions ended because their buffer filled.
	Lagged uint64
	// Dropped counts events the store refused as invalid, or that a stop
	// cut off before they were committed.
	Dropped uint64
	// ReplayCached and ReplayStored count the replay pages served from the
	// recent-events cache and read from the store.
	ReplayCached, ReplayStored uint64
}

// New returns a broker over st. Register snapshot providers, then Start
// it.
func New(cfg Config, st Store) (*Broker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new event broker: %w", err)
	}
	if st == nil {
		return nil, fmt.Errorf("new event broker: %w: store is nil", jam.ErrInvalid)
	}
	return &Broker{
		cfg:        cfg,
		st:         st,
		log:        cfg.Logger.With("component", "events"),
		pub:        make(chan *Event, cfg.PublishBuffer),
		stopping:   make(chan struct{}),
		drained:    make(chan struct{}),
		writerDone: make(chan struct{}),
		subs:       map[*Subscription]struct{}{},
		providers:  map[string]SnapshotFunc{},
	}, nil
}

// Workspace returns the workspace whose events the broker carries.
func (b *Broker) Workspace() jam.WorkspaceID { return b.cfg.Workspace }

// RegisterSnapshot adds a live-state provider whose snapshot every reset
// event carries under name. A second provider of the same name is
// jam.ErrAlreadyExists.
func (b *Broker) RegisterSnapshot(name string, fn SnapshotFunc) error {
	if name == "" || fn == nil {
		return fmt.Errorf("register snapshot: %w: name and function are required", jam.ErrInvalid)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.providers[name]; ok {
		return fmt.Errorf("register snapshot %s: %w", name, jam.ErrAlreadyExists)
	}
	b.providers[name] = fn
	b.order = append(b.order, name)
	return nil
}

// Start prunes the stored log, loads its last sequence and starts the
// writer. Its context bounds only that work: the writer runs until Stop.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	switch {
	case b.stopped:
		b.mu.Unlock()
		return fmt.Errorf("start event broker: %w", jam.ErrStopping)
	case b.started:
		b.mu.Unlock()
		return fmt.Errorf("start event broker: %w: already started", jam.ErrConflict)
	}
	b.mu.Unlock()

	if err := b.prune(ctx); err != nil {
		return fmt.Errorf("start event broker: %w", err)
	}
	last, err := b.st.EventLast(ctx, b.cfg.Workspace)
	if err != nil {
		return fmt.Errorf("start event broker: %w", err)
	}
	var pl *peerLog
	if b.cfg.PeerLogDir != "" {
		// Logs are diagnostics: one that cannot be scrubbed is reported,
		// and does not keep the broker from starting.
		if err := scrubPeerLogs(b.cfg.PeerLogDir); err != nil {
			b.log.Warn("peer logs of an earlier build not scrubbed of event data", "err", err)
		}
		pl = newPeerLog(b.cfg.PeerLogDir, b.cfg.PeerLogMaxBytes, b.cfg.PeerLogMaxOpen, b.log)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return fmt.Errorf("start event broker: %w", jam.ErrStopping)
	}
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	b.cancel = cancel
	b.started = true
	b.last = last
	b.recent = newRecent(b.cfg.RecentEvents, b.cfg.RecentBytes, last)
	b.wg.Go(func() {
		defer close(b.writerDone)
		b.run(runCtx, pl)
	})
	if b.cfg.PruneInterval > 0 {
		b.wg.Go(func() { b.pruneLoop(runCtx) })
	}
	return nil
}

// Stop stops taking events (Publish returns jam.ErrStopping), commits and
// hands out what was already published, ends every subscription, and
// waits for the broker's goroutines. If ctx ends first, the commit in
// flight is cancelled and the events not yet committed are dropped (and
// counted). Safe to call more than once and before Start.
func (b *Broker) Stop(ctx context.Context) error {
	b.mu.Lock()
	b.stopped = true
	started, cancel := b.started, b.cancel
	b.mu.Unlock()

	b.stopOnce.Do(func() {
		close(b.stopping) // releases publishers waiting for room
		b.pubMu.Lock()
		b.pubClosed = true
		b.pubMu.Unlock()
		close(b.drained)
	})
	var err error
	if started {
		select {
		case <-b.writerDone:
		case <-ctx.Done():
			// Out of time: abort the commit in flight. A writer that had
			// nothing left to commit is no failure.
			cancel(jam.ErrStopping)
			<-b.writerDone
			if b.aborted.Load() {
				err = fmt.Errorf("stop event broker: %w", context.Cause(ctx))
			}
		}
		cancel(jam.ErrStopping) // the pruner
		b.wg.Wait()
	}

	b.mu.Lock()
	subs := b.subs
	b.subs = map[*Subscription]struct{}{}
	b.mu.Unlock()
	for s := range subs {
		s.end(fmt.Errorf("event stream: %w", jam.ErrStopping))
	}
	return err
}

// Publish hands ev to the writer, which commits it to the store (assigning
// its Seq) and then gives it to every subscriber. It returns once the
// event is in the publish buffer, not once it is committed; it never waits
// for a subscriber. It blocks only while the publish buffer is full, that
// is while publishers outpace the store, until room frees, ctx ends, or
// the broker stops; a published event is never dropped short of a stop
// that runs out of time. A malformed event is jam.ErrInvalid; after Stop,
// Publish returns jam.ErrStopping.
func (b *Broker) Publish(ctx context.Context, ev Event) error {
	if ev.At.IsZero() {
		ev.At = b.cfg.Now()
	}
	ev.Seq = 0
	ev, err := validate(ev)
	if err != nil {
		return fmt.Errorf("publish event: %w", err)
	}
	e := &ev
	b.pubMu.RLock()
	defer b.pubMu.RUnlock()
	if b.pubClosed {
		return fmt.Errorf("publish event %s: %w", ev.Kind, jam.ErrStopping)
	}
	select {
	case b.pub <- e:
		return nil
	default:
	}
	select {
	case b.pub <- e:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publish event %s: %w", ev.Kind, context.Cause(ctx))
	case <-b.stopping:
		return fmt.Errorf("publish event %s: %w", ev.Kind, jam.ErrStopping)
	}
}

// Stats returns the broker's counters.
func (b *Broker) Stats() Stats {
	return Stats{
		Committed: b.stats.committed.Load(),
		Batches:   b.stats.batches.Load(),
		Lagged:    b.stats.lagged.Load(),
		Dropped:   b.stats.dropped.Load(),

		ReplayCached: b.stats.replayCached.Load(),
		ReplayStored: b.stats.replayStored.Load(),
	}
}

// run is the writer: it takes one event, then every event already waiting
// (up to MaxBatch), commits them in one transaction, and hands them out.
// While it commits, new events gather in the buffer and form the next
// batch, so the busier the broker, the larger its batches.
func (b *Broker) run(ctx context.Context, pl *peerLog) {
	defer func() {
		if pl != nil {
			pl.close()
		}
	}()
	batch := make([]*Event, 0, b.cfg.MaxBatch)
	recs := make([]store.EventRecord, 0, b.cfg.MaxBatch)
	for {
		var first *Event
		select {
		case first = <-b.pub:
		case <-b.drained:
			// No event can enter pub any more: drain what is left.
			select {
			case first = <-b.pub:
			default:
				return
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < b.cfg.MaxBatch {
			select {
			case e := <-b.pub:
				batch = append(batch, e)
			default:
				break fill
			}
		}
		committed, ok := b.commit(ctx, batch, recs)
		if !ok {
			b.aborted.Store(true)
			b.dropRest(len(batch))
			return
		}
		if len(committed) == 0 {
			continue
		}
		b.fanOut(committed)
		if pl != nil {
			pl.write(committed)
		}
	}
}

// commit stores batch and returns its committed events with their
// sequences. A failed commit is retried with backoff until it succeeds or
// ctx ends (ok false). A batch the store refuses as invalid, which
// validation at Publish should make impossible, is committed event by
// event so that only the bad events are dropped.
func (b *Broker) commit(ctx context.Context, batch []*Event, recs []store.EventRecord) (_ []*Event, ok bool) {
	recs = recs[:0]
	for _, e := range batch {
		recs = append(recs, record(b.cfg.Workspace, e))
	}
	delay := b.cfg.RetryMin
	for {
		seqs, err := b.st.EventAppend(ctx, recs)
		if err == nil {
			for i, e := range batch {
				e.Seq = seqs[i]
			}
			b.stats.committed.Add(uint64(len(batch)))
			b.stats.batches.Add(1)
			return batch, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		if errors.Is(err, jam.ErrInvalid) {
			if len(batch) == 1 {
				b.stats.dropped.Add(1)
				b.log.Error("event refused by the store; dropped", "kind", batch[0].Kind, "err", err)
				return nil, true
			}
			var kept []*Event
			for _, e := range batch {
				one, ok := b.commit(ctx, []*Event{e}, nil)
				if !ok {
					return nil, false
				}
				kept = append(kept, one...)
			}
			return kept, true
		}
		b.log.Warn("commit events; retrying", "events", len(batch), "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, false
		}
		delay = min(2*delay, b.cfg.RetryMax)
	}
}

// dropRest counts and reports the events a stop cut off: the batch in
// flight and whatever is still buffered.
func (b *Broker) dropRest(inFlight int) {
	n := inFlight
	for {
		select {
		case <-b.pub:
			n++
			continue
		default:
		}
		break
	}
	b.stats.dropped.Add(uint64(n))
	b.log.Error("stop ran out of time; events not committed", "events", n)
}

// fanOut hands committed events to every subscriber, under the fan-out
// lock. A subscriber with no room left is marked lagged and left out from
// then on; nothing waits for it.
func (b *Broker) fanOut(batch []*Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = batch[len(batch)-1].Seq
	b.recent.add(batch)
	for s := range b.subs {
		if !s.deliver(batch) {
			delete(b.subs, s)
			b.stats.lagged.Add(1)
		}
	}
}

// prune applies the retention bounds.
func (b *Broker) prune(ctx context.Context) error {
	n, err := b.st.EventPrune(ctx, b.cfg.RetainEvents, b.cfg.Now().Add(-b.cfg.RetainAge))
	if err != nil {
		return err
	}
	if n > 0 {
		b.log.Info("pruned events", "count", n)
	}
	return nil
}

// pruneLoop prunes every PruneInterval until ctx ends. A failed prune is
// logged and tried again at the next tick: retention is housekeeping, and
// the log only grows meanwhile.
func (b *Broker) pruneLoop(ctx context.Context) {
	t := time.NewTicker(b.cfg.PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.prune(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn("prune events", "err", err)
			}
		}
	}
}

// Subscribe starts a subscription. With after = Live it starts at the
// present with a reset event carrying every provider's snapshot, taken
// under the fan-out lock together with the subscription's position. With
// after >= 0 it first replays, from the store, every event after after
// (ReplayPage at a time, as the subscriber reads), then continues with
// live events, without a gap or a duplicate. A position beyond the last
// sequence the broker knows is treated like Live (ReasonUnknownPosition).
// The subscriber must Close the subscription.
func (b *Broker) Subscribe(after int64) (*Subscription, error) {
	if after < Live {
		return nil, fmt.Errorf("subscribe: %w: after %d is negative", jam.ErrInvalid, after)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || !b.started {
		return nil, fmt.Errorf("subscribe: %w", jam.ErrStopping)
	}
	s := newSubscription(b, b.last, b.cfg.SubscriberBuffer)
	switch {
	case after == Live || after > b.last:
		data := ResetData{Reason: ReasonSubscribe, Snapshots: map[string]json.RawMessage{}}
		if after != Live {
			data.Reason, data.After = ReasonUnknownPosition, after
		}
		for _, name := range b.order {
			snap, err := b.providers[name]()
			if err == nil && !json.Valid(snap) {
				err = errors.New("snapshot is not valid JSON")
			}
			if err != nil {
				if data.Errors == nil {
					data.Errors = map[string]string{}
				}
				data.Errors[name] = err.Error()
				continue
			}
			data.Snapshots[name] = snap
		}
		s.pending = []*Event{{Seq: b.last, Kind: KindReset, At: b.now(), Data: mustJSON(data)}}
		s.last = b.last
	default:
		s.replayCursor = after
		s.replaying = after < b.last
		s.last = after
	}
	b.subs[s] = struct{}{}
	return s, nil
}

// replayPage returns the events after after, up to floor and at most
// limit, from the recent-events cache, and whether the cache could answer
// (it holds every event of the workspace after after).
func (b *Broker) replayPage(after, floor int64, limit int) ([]*Event, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	page, ok := b.recent.after(after, floor, limit)
	if ok {
		b.stats.replayCached.Add(1)
	}
	return page, ok
}

// unsubscribe forgets s.
func (b *Broker) unsubscribe(s *Subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

func (b *Broker) now() time.Time { return b.cfg.Now().UTC().Truncate(time.Microsecond) }
