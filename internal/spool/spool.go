package spool

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/store"
)

// Store is what the spool needs of the store.
type Store interface {
	SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error)
	SpoolUsage(ctx context.Context) ([]store.SpoolUsage, error)
}

// Config configures a [Spool].
type Config struct {
	// MaxEntriesPerPeer bounds the entries spooled for one peer. Default
	// 4096.
	MaxEntriesPerPeer int
	// MaxBytesPerPeer bounds the sealed bytes spooled for one peer. Default
	// 64 MiB.
	MaxBytesPerPeer int64
	// MaxBatch bounds the entries committed in one transaction. Default 256.
	MaxBatch int
	// Logger receives accounting anomalies. Nil discards them.
	Logger *slog.Logger
	// Metrics records each group commit's latency. Optional.
	Metrics *metrics.Metrics
}

func (c Config) withDefaults() Config {
	if c.MaxEntriesPerPeer == 0 {
		c.MaxEntriesPerPeer = 4096
	}
	if c.MaxBytesPerPeer == 0 {
		c.MaxBytesPerPeer = 64 << 20
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 256
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.MaxEntriesPerPeer < 1:
		return fmt.Errorf("%w: max entries per peer %d must be positive", jam.ErrInvalid, c.MaxEntriesPerPeer)
	case c.MaxBytesPerPeer < 1:
		return fmt.Errorf("%w: max bytes per peer %d must be positive", jam.ErrInvalid, c.MaxBytesPerPeer)
	case c.MaxBatch < 1:
		return fmt.Errorf("%w: max batch %d must be positive", jam.ErrInvalid, c.MaxBatch)
	}
	return nil
}

// Spool makes inbound messages durable with group commit. See the package
// doc for its design. All methods are safe for concurrent use.
type Spool struct {
	cfg    Config
	st     Store
	logger *slog.Logger

	// reqs hands a push to the writer. It is unbuffered, so a push is
	// either taken by the writer (and answered) or not taken at all, and no
	// push can be stranded in a buffer when the writer exits.
	reqs       chan *request
	stopping   chan struct{} // closed by the first Stop
	stopOnce   sync.Once
	writerDone chan struct{} // closed when the writer exits
	wg         sync.WaitGroup

	// Test hooks, nil in production: waiting runs each time a push starts
	// waiting for room, sending when a push is about to hand its entry to
	// the writer. Set before Start.
	waitingHook func()
	sendingHook func()

	mu      sync.Mutex
	started bool                    // guarded by mu
	stopped bool                    // guarded by mu
	cancel  context.CancelCauseFunc // guarded by mu: ends the writer's context
	usage   map[peerKey]*peerUsage  // guarded by mu
}

// peerKey names one peer's bounds.
type peerKey struct {
	ws   jam.WorkspaceID
	peer jam.PeerKey
}

// peerUsage is one peer's reserved capacity. freed, when not nil, is closed
// (and cleared) the next time capacity is returned, waking every push
// waiting for room.
type peerUsage struct {
	entries int
	bytes   int64
	freed   chan struct{}
}

// request is one push handed to the writer. done has room for the one
// answer, so the writer never blocks on a push that stopped waiting.
type request struct {
	key   peerKey
	entry store.SpoolEntry
	done  chan result
}

type result struct {
	seq      int64
	appended bool
	err      error
}

// New returns a spool over st. Start it before pushing.
func New(cfg Config, st Store) (*Spool, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new spool: %w", err)
	}
	if st == nil {
		return nil, fmt.Errorf("new spool: %w: store is nil", jam.ErrInvalid)
	}
	return &Spool{
		cfg:        cfg,
		st:         st,
		logger:     cfg.Logger.With("component", "spool"),
		reqs:       make(chan *request),
		stopping:   make(chan struct{}),
		writerDone: make(chan struct{}),
		usage:      map[peerKey]*peerUsage{},
	}, nil
}

// Start loads the spooled usage of every peer from the store and starts
// the writer. It returns an error wrapping jam.ErrStopping after Stop, and
// jam.ErrConflict if the spool already started.
func (s *Spool) Start(ctx context.Context) error {
	if err := s.checkStartable(); err != nil {
		return err
	}
	loaded, err := s.st.SpoolUsage(ctx)
	if err != nil {
		return fmt.Errorf("start spool: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startableLocked(); err != nil {
		return err
	}
	for _, u := range loaded {
		s.usage[peerKey{u.WorkspaceID, u.Peer}] = &peerUsage{entries: u.Entries, bytes: u.Bytes}
	}
	// The writer outlives Start's context: only Stop ends it.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.started = true
	s.wg.Go(func() {
		defer close(s.writerDone)
		s.run(runCtx)
	})
	return nil
}

func (s *Spool) checkStartable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startableLocked()
}

func (s *Spool) startableLocked() error {
	switch {
	case s.stopped:
		return fmt.Errorf("start spool: %w", jam.ErrStopping)
	case s.started:
		return fmt.Errorf("start spool: %w: already started", jam.ErrConflict)
	}
	return nil
}

// Stop stops the spool; see the package doc. It is safe to call more than
// once and before Start.
func (s *Spool) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	started, cancel := s.started, s.cancel
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stopping) })
	if !started {
		return nil
	}
	var err error
	select {
	case <-s.writerDone:
	case <-ctx.Done():
		// Abort the commit in flight; its pushes fail with ErrStopping.
		cancel(jam.ErrStopping)
		err = fmt.Errorf("stop spool: %w", ctx.Err())
	}
	s.wg.Wait()
	cancel(jam.ErrStopping)
	return err
}

// Push makes e durable and returns once the batch holding it committed.
// Concurrent pushes share one commit. While e's peer is at its entry or
// byte bound, Push waits until Release frees room or ctx ends; it never
// drops e. appended=false means a duplicate: e's message is already
// spooled, queued or settled for its peer (not an error). An invalid entry
// is jam.ErrInvalid; a commit the disk refused wraps jam.ErrStorageFull
// (e was not kept); a push during or after Stop wraps jam.ErrStopping;
// before Start, jam.ErrUnavailable. If ctx ends after the entry reached the
// writer, Push returns ctx's error and the entry may or may not have been
// committed; pushing it again is safe.
func (s *Spool) Push(ctx context.Context, e store.SpoolEntry) (seq int64, appended bool, err error) {
	if err := validateEntry(e); err != nil {
		return 0, false, fmt.Errorf("spool push %s: %w", e.MessageID, err)
	}
	req := &request{key: peerKey{e.WorkspaceID, e.Peer}, entry: e, done: make(chan result, 1)}
	size := int64(len(e.Sealed))
	if err := s.reserve(ctx, req.key, size); err != nil {
		return 0, false, fmt.Errorf("spool push %s: %w", e.MessageID, err)
	}
	if s.sendingHook != nil {
		s.sendingHook()
	}
	select {
	case s.reqs <- req:
	case <-s.stopping:
		s.release(req.key, 1, size)
		return 0, false, fmt.Errorf("spool push %s: %w", e.MessageID, jam.ErrStopping)
	case <-ctx.Done():
		s.release(req.key, 1, size)
		return 0, false, fmt.Errorf("spool push %s: %w", e.MessageID, ctx.Err())
	}
	// The writer answers every request it took, so this only waits as long
	// as one commit.
	select {
	case r := <-req.done:
		return r.seq, r.appended, r.err
	case <-ctx.Done():
		return 0, false, fmt.Errorf("spool push %s: outcome unknown: %w", e.MessageID, ctx.Err())
	}
}

// validateEntry checks what the store would, so that one bad entry is
// refused alone instead of failing the batch it would have joined.
func validateEntry(e store.SpoolEntry) error {
	if _, err := jam.ParseID[jam.WorkspaceID](string(e.WorkspaceID)); err != nil {
		return err
	}
	if e.Peer.IsZero() {
		return fmt.Errorf("%w: peer key is empty", jam.ErrInvalid)
	}
	if err := e.Peer.Validate(); err != nil {
		return err
	}
	if _, err := jam.ParseUUID[jam.RoomID](string(e.Room)); err != nil {
		return err
	}
	if _, err := jam.ParseMessageID(string(e.MessageID)); err != nil {
		return err
	}
	if len(e.Sealed) == 0 {
		return fmt.Errorf("%w: sealed message is empty", jam.ErrInvalid)
	}
	if e.ReceivedAt.IsZero() {
		return fmt.Errorf("%w: received at is zero", jam.ErrInvalid)
	}
	return nil
}

// reserve takes room for one entry of size bytes in k's bounds, waiting
// while they are full.
func (s *Spool) reserve(ctx context.Context, k peerKey, size int64) error {
	for {
		s.mu.Lock()
		switch {
		case s.stopped:
			s.mu.Unlock()
			return jam.ErrStopping
		case !s.started:
			s.mu.Unlock()
			return fmt.Errorf("%w: spool not started", jam.ErrUnavailable)
		}
		u := s.usage[k]
		if u == nil {
			u = &peerUsage{}
			s.usage[k] = u
		}
		// An empty peer admits any entry, so one larger than the byte
		// bound cannot wait forever.
		if u.entries == 0 || (u.entries < s.cfg.MaxEntriesPerPeer && u.bytes+size <= s.cfg.MaxBytesPerPeer) {
			u.entries++
			u.bytes += size
			s.mu.Unlock()
			return nil
		}
		if u.freed == nil {
			u.freed = make(chan struct{})
		}
		freed := u.freed
		s.mu.Unlock()

		if s.waitingHook != nil {
			s.waitingHook()
		}
		select {
		case <-freed:
		case <-s.stopping:
			return jam.ErrStopping
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release returns the capacity of one entry of bytes sealed bytes that left
// the spool (moved to the queue or dropped), and wakes pushes waiting for
// room in that peer's bounds.
func (s *Spool) Release(ws jam.WorkspaceID, peer jam.PeerKey, bytes int) {
	s.release(peerKey{ws, peer}, 1, int64(bytes))
}

// ReleaseN is Release for n entries of bytes sealed bytes in total (a
// retired room's entries, deleted together). ReleaseN with n = 0 does
// nothing.
func (s *Spool) ReleaseN(ws jam.WorkspaceID, peer jam.PeerKey, n int, bytes int64) {
	if n > 0 {
		s.release(peerKey{ws, peer}, n, bytes)
	}
}

func (s *Spool) release(k peerKey, n int, size int64) {
	s.mu.Lock()
	u := s.usage[k]
	var short bool
	if u == nil {
		short = true
	} else {
		u.entries -= n
		u.bytes -= size
		if u.entries < 0 || u.bytes < 0 {
			// More released than reserved: a caller bug. Clamp, so the
			// bounds stay meaningful, and say so.
			short = true
			u.entries, u.bytes = max(u.entries, 0), max(u.bytes, 0)
		}
		if u.freed != nil {
			close(u.freed)
			u.freed = nil
		}
		if u.entries == 0 && u.bytes == 0 {
			delete(s.usage, k)
		}
	}
	s.mu.Unlock()
	if short {
		s.logger.Warn("released more than was spooled", "workspace", k.ws, "peer", k.peer, "bytes", size)
	}
}

// Usage returns the entries and sealed bytes counted against a peer's
// bounds: what is spooled plus pushes in flight.
func (s *Spool) Usage(ws jam.WorkspaceID, peer jam.PeerKey) (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.usage[peerKey{ws, peer}]; u != nil {
		return u.entries, u.bytes
	}
	return 0, 0
}

// Depth returns the entries counted against every peer's bounds: what is
// spooled plus pushes in flight.
func (s *Spool) Depth() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.usage {
		n += u.entries
	}
	return n
}

// maxLinger bounds how long the writer waits to fill a batch.
const maxLinger = 2 * time.Millisecond

// run is the writer: it commits batches until Stop.
//
// Producers wait for their acknowledgement before pushing again, so a
// commit that answers n pushes is typically followed by n new pushes a
// little later. Taking only what is already waiting would make batches
// alternate between a handful (those that arrived first) and the rest,
// paying one extra commit per round. So when fewer pushes are waiting than
// the last commit carried, the writer lingers for the others, for at most
// half the last commit's duration (capped at maxLinger). With a single
// producer the last commit carried one push, and the writer never waits.
func (s *Spool) run(ctx context.Context) {
	batch := make([]*request, 0, s.cfg.MaxBatch)
	entries := make([]store.SpoolEntry, 0, s.cfg.MaxBatch)
	var target int // pushes the last commit carried
	var lastCommit time.Duration
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		// Stop wins over pushes that are still arriving, so a push that
		// races Stop gets ErrStopping rather than a late commit.
		select {
		case <-s.stopping:
			return
		default:
		}
		select {
		case <-s.stopping:
			return
		case r := <-s.reqs:
			batch = s.fill(append(batch[:0], r))
		}
		if len(batch) < target {
			linger.Reset(min(lastCommit/2, maxLinger))
		wait:
			for len(batch) < target && len(batch) < s.cfg.MaxBatch {
				select {
				case r := <-s.reqs:
					batch = s.fill(append(batch, r))
				case <-linger.C:
					break wait
				case <-s.stopping:
					break wait // answer what was taken
				}
			}
			linger.Stop()
		}
		entries = entries[:0]
		for _, r := range batch {
			entries = append(entries, r.entry)
		}
		lastCommit, target = s.commit(ctx, batch, entries), len(batch)
		clear(batch) // drop references to answered requests
	}
}

// fill adds the pushes already waiting to batch, up to MaxBatch.
func (s *Spool) fill(batch []*request) []*request {
	for len(batch) < s.cfg.MaxBatch {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit appends one batch and answers each of its pushes; it returns how
// long the append took. The commit is observed in the metrics before any
// push is answered, so a pusher that has its answer sees it counted.
func (s *Spool) commit(ctx context.Context, batch []*request, entries []store.SpoolEntry) time.Duration {
	start := time.Now()
	res, err := s.st.SpoolAppend(ctx, entries)
	took := time.Since(start)
	if err == nil && (len(res.Appended) != len(entries) || len(res.Seqs) != len(entries)) {
		err = fmt.Errorf("store answered %d/%d results for %d entries", len(res.Appended), len(res.Seqs), len(entries))
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	s.cfg.Metrics.SpoolCommit(took, len(batch), err)
	for i, r := range batch {
		switch {
		case err != nil:
			s.release(r.key, 1, int64(len(r.entry.Sealed)))
			r.done <- result{err: fmt.Errorf("spool push %s: %w", r.entry.MessageID, err)}
		case !res.Appended[i]:
			s.release(r.key, 1, int64(len(r.entry.Sealed)))
			r.done <- result{}
		default:
			r.done <- result{seq: res.Seqs[i], appended: true}
		}
	}
	return took
}
