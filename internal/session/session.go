// Package session runs owned agents: jamd starts the agent's process on a
// lease, gives each room its own session and working directory, and turns
// every message routed to the session into a turn whose answer settles the
// message through the engine.
//
// A Manager implements the engine's Deliverer for owned bindings: Deliver
// only records the Band message as a queue message of the session with its
// queued turn (durably, in one transaction) and wakes the session's
// worker, so it returns at once. Send accepts a person's message to a
// session directly: queue (a turn, whose answer settles nothing on Band),
// note (no turn; the next turn's prompt carries it and consumes it as it
// starts running) or steer (the running turn, when the process's manifest
// says it steers; queued otherwise). One worker per session runs its turns in order; at
// most one turn per session is active. The worker obtains a host (one
// harness.Process) for the session's lease holder — the template for shared
// placement, the session for dedicated — and every transition of a turn is
// written through the store conditionally on the lease generation the turn
// runs under, so a stale process's late result is refused
// (jam.ErrLeaseLost) and discarded. A host whose process dies is replaced
// with a higher generation; the turn it was running ends interrupted and
// its message is queued again for the next turn.
//
// A turn of a Band message that ends failed (the agent did not start,
// placement was refused, the harness failed) or cancelled marks the
// message failed on Band with the turn's reason and detail
// (Settler.Fail); the message stays queued and is answered by a later
// turn.
//
// Hosts are harness.Process values (the harness seam; the daemon's
// Launcher picks the harness): a turn ends by its typed Outcome — a
// StopCancelled outcome is a cancelled turn (or, when the daemon is
// stopping, an interrupted one), a StopFailed one a failed turn, and any
// other answer settles its message — and its streamed harness.Updates
// are the output stored and observed.
// Steering reaches a running turn only when the process's Manifest says
// Steer, and a provider thread is resumed only when it says
// ResumeInProcess or ResumeAtLaunch. A harness whose Manifest
// (Config.Manifest, known before any process starts) says Sessions one
// gets a host per session, whatever the placement, started in the
// session's worktree; when it resumes at launch, a host that replaces an
// exited one is started on the session's provider thread, and if that
// launch fails a fresh process starts and its new thread is recorded.
//
// A turn's terminal move records what it used on its execution: the
// Outcome's usage and model, else the last usage it streamed (so a turn
// interrupted or cancelled midway keeps what was reported), the model
// falling back to the configured one; a cost the agent did not report is
// estimated from the price table (Config.Prices), else unknown.
//
// An Observer (the daemon's event publisher) sees every recorded
// transition of a turn, and the turn's streamed output while it runs, in
// batches: text chunks coalesce and go out every BatchInterval or
// BatchBytes, tool calls and plans as they come, and the last batch before
// the turn's end is recorded. Each batch is written to the store as it
// goes out, within the store's bounds per turn; a batch that fails to
// store is logged, since the output is evidence, not the turn's result.
// The manager also keeps recent turns' output in memory, and Output reads
// it there first, then from the store (after a restart, or for a turn that
// outgrew memory).
//
// A turn's start is its host's boundary: when no other turn uses the
// host, a host that is to be restarted (Restart) or whose configuration is
// no longer the template's desired one is replaced there (its lease ends,
// the next one has the next generation), so a configuration change
// becomes effective at the next turn without a restart of the daemon; a
// host a turn uses is replaced only when its last turn ends. A session is
// open, archived (its worktree archived; a message delivered or sent to it
// resumes it) or closed (final: no further turn; its queued turns are
// cancelled). Retry runs a failed, cancelled or interrupted turn's message
// again as a new turn.
//
// A session's worktree can be archived (changes committed to its branch,
// the directory removed, the branch kept), removed (directory and branch
// deleted) and restored; package worktree does the work on disk, and the
// Manager records the worktree's state. A worktree operation and a running
// turn exclude each other per session, and the turns of a session whose
// worktree is not active wait, queued, until it is restored.
//
// With Config.Results, every turn is bracketed by checkpoints of its
// session's worktree and leaves a change set (origin turn, or salvage for
// a turn that failed, was cancelled or was interrupted), recorded before
// its answer settles; a turn whose start checkpoint cannot be taken fails
// before the agent sees it. Archive and remove take a checkpoint first,
// so a removed worktree is restored as it was left. results.go has the
// details.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/pricing"
	"github.com/jamhq/jam/internal/store"
)

// Launcher starts an agent process (a harness.Process) for a template
// configuration.
// tools are the MCP servers a process that serves one session (named in
// cfg.Session) is given at launch: its session's jam tools (none when the
// session has none).
type Launcher func(ctx context.Context, cfg store.TemplateConfig, tools []harness.MCPServer) (harness.Process, error)

// Store is what the runtime needs from the store.
type Store interface {
	TemplateGet(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID) (store.Template, error)
	TemplateApplied(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID, generation int64, at time.Time) (store.Template, error)
	SessionGet(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID) (store.Session, error)
	SessionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Session, error)
	SessionSetThread(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID, thread string, at time.Time) error
	SessionSetLifecycle(ctx context.Context, p store.SessionSetLifecycleParams) error
	TurnEnqueue(ctx context.Context, t store.Turn) (store.Turn, error)
	TurnList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.Turn, error)
	TurnGet(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) (store.Turn, error)
	TurnTransition(ctx context.Context, p store.TurnTransitionParams) (store.Turn, error)
	TurnOutputAppend(ctx context.Context, p store.TurnOutputAppendParams) (store.TurnOutputBatch, error)
	TurnOutput(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]store.TurnOutputBatch, error)
	MessageAccept(ctx context.Context, p store.MessageAcceptParams) (store.SessionMessage, store.Turn, error)
	MessageGet(ctx context.Context, ws jam.WorkspaceID, id jam.MessageID) (store.SessionMessage, error)
	MessageList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.SessionMessage, error)
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error)
	LeaseEnd(ctx context.Context, ws jam.WorkspaceID, id jam.LeaseID, reason string, at time.Time) error
	LeaseLive(ctx context.Context, ws jam.WorkspaceID, holder string) (store.Lease, error)
	WorktreeForSession(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (store.Worktree, error)
	WorktreeSetState(ctx context.Context, p store.WorktreeSetStateParams) (store.Worktree, error)
	CheckpointInsert(ctx context.Context, c store.Checkpoint) (store.Checkpoint, error)
	CheckpointLatest(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (store.Checkpoint, error)
	CheckpointList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.Checkpoint, error)
	ChangeSetInsert(ctx context.Context, c store.ChangeSet) (store.ChangeSet, error)
}

// Settler settles the messages turns answer: the engine.
type Settler interface {
	Message(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (engine.InboxItem, error)
	Reply(ctx context.Context, rp engine.ReplyParams) (engine.ReplyResult, error)
	Ack(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) error
	Working(ws jam.WorkspaceID, peer jam.PeerKey, room jam.RoomID) func()
	// Fail marks a message its turn could not answer failed on Band with
	// a short reason; the message stays queued (engine.Engine.Fail).
	Fail(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, reason string) error
	// Send posts a new message in a room as the agent (a staged send).
	Send(ctx context.Context, sp engine.SendParams) (engine.SendResult, error)
	// Participants reads a room's roster as the agent sees it.
	Participants(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) ([]protocol.Participant, error)
	// RoomEvent posts an event (no mention) in a room as the agent.
	RoomEvent(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, ev protocol.EventFields) (protocol.EventCreated, error)
}

// Config configures a Manager.
type Config struct {
	Workspace jam.WorkspaceID
	Store     Store
	Settler   Settler
	Launch    Launcher
	// Manifest says what a harness's processes can do, by the harness
	// key, before one is started: a harness of one session per process
	// gets a host per session, and one that resumes at launch is started
	// on the session's thread. Nil: every harness holds many sessions.
	Manifest func(harness string) (harness.Manifest, error)
	Minter   *jam.Minter
	Logger   *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// RetryDelay paces a session whose turn could not start (the agent
	// would not launch). Default 2s.
	RetryDelay time.Duration
	// Observer sees turn transitions and output. Optional.
	Observer Observer
	// Metrics records each turn that ends, by outcome. Optional.
	Metrics *metrics.Metrics
	// BatchInterval and BatchBytes pace a running turn's output: a batch
	// goes to the Observer every BatchInterval, or as soon as it holds
	// BatchBytes. Defaults 250ms and 4 KiB.
	BatchInterval time.Duration
	BatchBytes    int
	// Prices is the price table a turn's cost is estimated with when the
	// agent reports none (pricing.Table.Settle). Default: no prices, so
	// an unreported cost is unknown.
	Prices func() pricing.Table
	// Results turns on the checkpoints and change sets of turns
	// (results.go). Nil: none are taken.
	Results *ResultsConfig
	// Tools returns the MCP servers (jam's tools, with a capability
	// scoped to the session) a session's threads are given; nil or an
	// empty result: none, and the agent answers in final text only.
	Tools func(s store.Session, cfg store.TemplateConfig) []harness.MCPServer
	// HopLimit bounds the agent messages in a row in one room with no
	// person in between (dispositions.go): a message from an agent beyond
	// it is acknowledged unanswered, and the room is told. 0 is
	// DefaultHopLimit; negative: no limit.
	HopLimit int
}

// Manager runs the owned sessions of one workspace.
type Manager struct {
	cfg Config
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	workers map[jam.SessionID]*worker // guarded by mu
	hosts   map[string]*lease         // guarded by mu: by holder
	// active holds the cancel of each turn a worker has taken up, from
	// before it leaves queued until it ends.
	active map[jam.TurnID]context.CancelCauseFunc // guarded by mu
	// busy names what holds each session: a worker running its turns
	// (holdTurn) or a worktree operation (holdWorktree). The two exclude
	// each other.
	busy    map[jam.SessionID]string // guarded by mu
	stopped bool                     // guarded by mu
	// outputs keeps the output of recent turns; outputOrder is their
	// order, oldest first.
	outputs     map[jam.TurnID]*transcript // guarded by mu
	outputOrder []jam.TurnID               // guarded by mu
	// life tracks the hosts' turn boundaries (lifecycle.go).
	life hostUses // guarded by mu
	// staged holds the dispositions of each session's running turn
	// (dispositions.go).
	staged map[jam.SessionID]*staging // guarded by mu
	// hops counts, per room, the turns taken up in a row for messages
	// from agents since the last from a person.
	hops map[jam.RoomID]int // guarded by mu
}

// What holds a session (Manager.busy).
const (
	holdTurn     = "turn"
	holdWorktree = "worktree"
)

// errCancelledByUser is the cause of a turn's context cancelled by Cancel.
var errCancelledByUser = errors.New("turn cancelled by user")

// worker is one session's turn runner.
type worker struct {
	wake chan struct{}
}

// lease is a live host and the lease record it runs under.
type lease struct {
	mu     sync.Mutex // serializes starting the host
	host   harness.Process
	record store.Lease
	// config is the configuration host was started with.
	config store.TemplateConfig
	// sessions are the provider threads opened on this host, by session.
	sessions map[jam.SessionID]harness.Thread
}

// New builds a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Settler == nil || cfg.Launch == nil || cfg.Logger == nil || cfg.Workspace == "" {
		return nil, errors.New("runtime: workspace, store, settler, launcher and logger are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Minter == nil {
		cfg.Minter = jam.NewMinter(nil, nil)
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = 2 * time.Second
	}
	if cfg.Results != nil {
		if err := cfg.Results.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.BatchInterval <= 0 {
		cfg.BatchInterval = defaultBatchInterval
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = defaultBatchBytes
	}
	if cfg.HopLimit == 0 {
		cfg.HopLimit = DefaultHopLimit
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, log: cfg.Logger.With("component", "runtime"), ctx: ctx, cancel: cancel,
		workers: map[jam.SessionID]*worker{}, hosts: map[string]*lease{}, active: map[jam.TurnID]context.CancelCauseFunc{},
		busy: map[jam.SessionID]string{}, outputs: map[jam.TurnID]*transcript{},
		staged: map[jam.SessionID]*staging{}, hops: map[jam.RoomID]int{}}, nil
}

// Start recovers after a restart: a turn that was active when the daemon
// stopped ends interrupted (its process is gone) and its message is queued
// again; then every session with queued turns starts working.
func (m *Manager) Start(ctx context.Context) error {
	sessions, err := m.cfg.Store.SessionList(ctx, m.cfg.Workspace)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	for _, s := range sessions {
		turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, s.ID)
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		pending := false
		for _, t := range turns {
			switch {
			case t.State.Active():
				m.salvageInterrupted(ctx, s, t)
				if err := m.interrupt(ctx, s, t, jam.ReasonDaemonRestarted); err != nil {
					return err
				}
				pending = true
			case t.State == jam.TurnQueued:
				pending = true
			}
		}
		if pending {
			m.wakeSession(s.ID)
		}
	}
	return nil
}

// Stop ends every worker and host and waits for them.
func (m *Manager) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopped = true
	hosts := m.hosts
	m.hosts = map[string]*lease{}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	var errs []error
	for _, l := range hosts {
		errs = append(errs, m.endLease(ctx, l, "stopped"))
	}
	return errors.Join(errs...)
}

// Deliver implements engine.Deliverer for owned bindings: the message is
// accepted as a queue message of the binding's session, with the queued
// turn that answers it, unless a turn for it is already queued or running
// (a redelivery). A Band message accepted before whose turn ended without
// settling it gets a new turn.
func (m *Manager) Deliver(ctx context.Context, d engine.Delivery) error {
	if d.Binding.Mode != jam.RuntimeOwned {
		return nil // attached agents pull their messages
	}
	// An archived session resumes; a closed one takes no message.
	if err := m.resumeFor(ctx, d.Binding.SessionID); err != nil {
		return err
	}
	turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, d.Binding.SessionID)
	if err != nil {
		return err
	}
	for _, t := range turns {
		if t.SourceMessageID == d.Row.MessageID && !t.State.Terminal() {
			m.wakeSession(d.Binding.SessionID)
			return nil
		}
	}
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, d.Binding.SessionID)
	if err != nil {
		return err
	}
	msgs, err := m.cfg.Store.MessageList(ctx, m.cfg.Workspace, s.ID)
	if err != nil {
		return err
	}
	accepted := false
	for _, msg := range msgs {
		if msg.SourceMessageID == d.Row.MessageID {
			if _, err := m.enqueue(ctx, s, msg.ID, msg.SourceMessageID); err != nil {
				return err
			}
			accepted = true
			break
		}
	}
	if !accepted {
		if _, _, err := m.accept(ctx, s, store.SessionMessage{ID: jam.New[jam.MessageID](m.cfg.Minter), WorkspaceID: m.cfg.Workspace, SessionID: s.ID,
			Requested: jam.RoutingQueue, Routing: jam.RoutingQueue, SourceMessageID: d.Row.MessageID, CreatedAt: m.cfg.Now()}); err != nil {
			return err
		}
	}
	m.wakeSession(d.Binding.SessionID)
	return nil
}

// enqueue queues another turn for an accepted message (msg, "" for turns
// recorded before session messages) that settles src on Band ("" for a
// message sent to the session directly).
func (m *Manager) enqueue(ctx context.Context, s store.Session, msg jam.MessageID, src jam.PlatformMessageID) (store.Turn, error) {
	t, err := m.cfg.Store.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](m.cfg.Minter), WorkspaceID: m.cfg.Workspace,
		SessionID: s.ID, Routing: jam.RoutingQueue, MessageID: msg, SourceMessageID: src, CreatedAt: m.cfg.Now()})
	if err != nil {
		return store.Turn{}, err
	}
	m.cfg.Observer.TurnMoved(TurnEvent{Turn: t, Peer: s.Peer, Room: s.Room})
	return t, nil
}

// transition records a move of a turn of session s and tells the
// Observer.
func (m *Manager) transition(ctx context.Context, s store.Session, p store.TurnTransitionParams) (store.Turn, error) {
	p.WorkspaceID = m.cfg.Workspace
	t, err := m.cfg.Store.TurnTransition(ctx, p)
	if err != nil {
		return store.Turn{}, err
	}
	m.cfg.Observer.TurnMoved(TurnEvent{Turn: t, From: p.From, Peer: s.Peer, Room: s.Room})
	if t.State.Terminal() {
		m.cfg.Metrics.TurnEnded(string(t.State), t.UpdatedAt.Sub(t.CreatedAt))
	}
	m.markFailed(ctx, s, t)
	return t, nil
}

// hold marks the session held by what (holdTurn or holdWorktree); false
// when something else holds it.
func (m *Manager) hold(id jam.SessionID, what string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.busy[id]; ok {
		return false
	}
	m.busy[id] = what
	return true
}

func (m *Manager) release(id jam.SessionID) {
	m.mu.Lock()
	delete(m.busy, id)
	m.mu.Unlock()
}

// wakeSession makes sure the session's worker runs.
func (m *Manager) wakeSession(id jam.SessionID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	w, ok := m.workers[id]
	if !ok {
		w = &worker{wake: make(chan struct{}, 1)}
		m.workers[id] = w
		m.wg.Go(func() { m.run(id, w) })
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is a session's worker: it runs queued turns in order until stopped.
func (m *Manager) run(id jam.SessionID, w *worker) {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-w.wake:
		}
		for m.ctx.Err() == nil {
			ran, err := m.runNext(m.ctx, id)
			if err != nil && m.ctx.Err() == nil {
				m.log.Warn("turn did not run; retrying", "session", id, "err", err, "in", m.cfg.RetryDelay)
				t := time.NewTimer(m.cfg.RetryDelay)
				select {
				case <-m.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				continue
			}
			if !ran {
				break
			}
		}
	}
}

// runNext runs the session's oldest queued turn; ran is false when there
// is none.
func (m *Manager) runNext(ctx context.Context, id jam.SessionID) (ran bool, err error) {
	turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, id)
	if err != nil {
		return false, err
	}
	var next *store.Turn
	for i := range turns {
		if turns[i].State == jam.TurnQueued {
			next = &turns[i]
			break
		}
	}
	if next == nil || m.isClosing(id) {
		return false, nil
	}
	// A worktree operation in progress wakes the worker when it ends.
	if !m.hold(id, holdTurn) {
		return false, nil
	}
	defer m.release(id)
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, id)
	if err != nil {
		return false, err
	}
	if s.Lifecycle == jam.SessionClosed {
		return false, nil // takes no further turn
	}
	wt, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, s.ID)
	if err != nil {
		return false, err
	}
	if wt.State != store.WorktreeActive {
		// The session's turns wait until its worktree is restored, which
		// wakes the worker.
		m.log.Info("turn waits for the session's worktree", "session", id, "turn", next.ID, "worktree", wt.State)
		return false, nil
	}
	if err := m.replaceMissing(ctx, wt); err != nil {
		return false, err
	}
	return true, m.runTurn(ctx, s, wt, *next)
}

// Cancel cancels a turn: a queued turn ends cancelled at once; a turn a
// worker has taken up is asked to stop (it ends cancelled and settles
// nothing). A turn that already ended is jam.ErrConflict.
func (m *Manager) Cancel(ctx context.Context, id jam.TurnID) error {
	m.mu.Lock()
	cancel, ok := m.active[id]
	m.mu.Unlock()
	if ok {
		cancel(errCancelledByUser)
		return nil
	}
	t, err := m.cfg.Store.TurnGet(ctx, m.cfg.Workspace, id)
	if err != nil {
		return err
	}
	if t.State != jam.TurnQueued {
		return fmt.Errorf("%w: turn %s is %s", jam.ErrConflict, id, t.State)
	}
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, t.SessionID)
	if err != nil {
		return err
	}
	_, err = m.transition(ctx, s, store.TurnTransitionParams{ID: id, From: jam.TurnQueued, To: jam.TurnCancelled,
		Reason: jam.ReasonCancelledByUser, At: m.cfg.Now()})
	return err
}
