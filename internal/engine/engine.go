package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/store"
)

// Store is what the engine needs from the store.
type Store interface {
	SpoolNext(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, limit int) ([]store.SpoolEntry, error)
	SpoolLanes(ctx context.Context) ([]store.Lane, error)
	SpoolMoveBatch(ctx context.Context, rows []store.QueueRow) ([]store.SpoolMoved, error)
	SpoolDrop(ctx context.Context, seq int64, at time.Time) error
	QueueGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.QueueRow, error)
	MessageSettled(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (bool, error)
	QueueList(ctx context.Context, p store.QueueListParams) ([]store.QueueRow, error)
	QueueRooms(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]store.QueueRoom, error)
	QueueMark(ctx context.Context, p store.QueueMarkParams) error
	QueueSettle(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, at time.Time) error
	ReplyIntentPut(ctx context.Context, r store.ReplyIntent) error
	ReplyIntentGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (store.ReplyIntent, error)
	BindingGet(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) (store.Binding, error)
	BindingList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]store.Binding, error)
	RoomRetire(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, at time.Time) (store.RoomRetired, error)
	PeerRemove(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.PeerRemoved, error)
	RoomRestore(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (bool, error)
	RoomRetiredList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]jam.RoomID, error)
	QuarantineSpool(ctx context.Context, seq int64, reason string, at time.Time) (store.QuarantinedRecord, error)
	QuarantineQueue(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, reason string, at time.Time) (store.QuarantinedRecord, error)
	QuarantineInvalid(ctx context.Context, at time.Time) ([]store.QuarantinedRecord, error)
}

// Spool is the durable landing of inbound messages.
type Spool interface {
	Push(ctx context.Context, e store.SpoolEntry) (seq int64, appended bool, err error)
	ReleaseN(ws jam.WorkspaceID, peer jam.PeerKey, n int, bytes int64)
}

// Sealer encrypts message bodies at rest.
type Sealer interface {
	Seal(plaintext, aad []byte) []byte
	Open(sealed, aad []byte) ([]byte, error)
}

// Agent is the Band Agent API of one peer.
type Agent interface {
	AgentProcessing(ctx context.Context, room, msg string) (protocol.MessageStatus, error)
	AgentProcessed(ctx context.Context, room, msg string) (protocol.MessageStatus, error)
	// AgentFailed closes the current attempt as failed, with reason.
	AgentFailed(ctx context.Context, room, msg, reason string) (protocol.MessageStatus, error)
	AgentSend(ctx context.Context, room, content string, mentions []protocol.Mention) (protocol.MessageSent, error)
	AgentParticipants(ctx context.Context, room string) ([]protocol.Participant, error)
	// AgentEvent posts a non-text event (no mentions, wakes nobody).
	AgentEvent(ctx context.Context, room string, ev protocol.EventFields) (protocol.EventCreated, error)
	AgentPeers(ctx context.Context) ([]protocol.Peer, error)
	// AgentSent returns the messages the agent posted in room since the
	// given time, oldest first.
	AgentSent(ctx context.Context, room string, since time.Time) ([]protocol.Message, error)
	// AgentActivity reports the agent's working indicator in room.
	AgentActivity(ctx context.Context, room string, working bool) error
}

// Deliverer hands a queued message to its session. It must return quickly:
// a slow session queues work of its own instead of blocking the lane.
type Deliverer interface {
	Deliver(ctx context.Context, d Delivery) error
}

// Delivery is one message handed to a session.
type Delivery struct {
	Binding store.Binding
	Row     store.QueueRow
}

// PeerRuntime is what the engine knows of one live peer.
type PeerRuntime struct {
	WorkspaceID jam.WorkspaceID
	Key         jam.PeerKey
	AgentID     jam.IdentityID
	Handle      string
	// OwnerUserID is the account's person, for addressed_to_user.
	OwnerUserID jam.IdentityID
	Agent       Agent
}

// EventKind names an engine event.
type EventKind string

// Engine events.
const (
	EventSpooled EventKind = "spooled"
	// EventSpoolRefused: the disk refused to spool a message (full or not
	// writable); it is not acknowledged, and Inbound retries it until
	// there is room, so no later message of the peer overtakes it.
	EventSpoolRefused   EventKind = "spool_refused"
	EventDuplicate      EventKind = "duplicate"
	EventSystemMarker   EventKind = "system_marker"
	EventQueued         EventKind = "queued"
	EventQueuedUnrouted EventKind = "queued_unrouted"
	EventClaimed        EventKind = "claimed"
	EventClaimRetry     EventKind = "claim_retry"
	EventClaimFailed    EventKind = "claim_failed"
	EventDelivered      EventKind = "delivered"
	EventDeliveryFailed EventKind = "delivery_failed"
	EventReplied        EventKind = "replied"
	EventSettled        EventKind = "settled"
	// EventFailed: a message its agent could not serve was marked failed
	// on Band (Err is the reason); it is still queued, not settled.
	EventFailed EventKind = "failed"
	// EventFailRetry: Band refused a failure mark for now (Err); it is
	// retried in the background.
	EventFailRetry  EventKind = "fail_retry"
	EventLaneFailed EventKind = "lane_failed"
	// EventDroppedRetired: a message of a retired room left the spool
	// without being queued.
	EventDroppedRetired EventKind = "dropped_retired"
	// EventRoomRetired: a room was retired for a peer; its queued and
	// spooled messages were removed locally.
	EventRoomRetired EventKind = "room_retired"
	// EventRoomRestored: a retired room was restored (the agent is back).
	EventRoomRestored EventKind = "room_restored"
	// EventNotice: a local notice was spooled.
	EventNotice EventKind = "notice"
	// EventQuarantined: a spool entry or queue row that could no longer
	// be read was moved to the quarantine; Err is the reason, Source and
	// QuarantineID name the record.
	EventQuarantined EventKind = "quarantined"
)

// Event reports one step of the pipeline.
type Event struct {
	Kind      EventKind
	Workspace jam.WorkspaceID
	Peer      jam.PeerKey
	Room      jam.RoomID
	MessageID jam.PlatformMessageID
	Binding   jam.BindingID
	// Count is the number of messages an event about many concerns
	// (room_retired: queued and spooled messages removed).
	Count int
	Err   error
	// Source ("spool" or "queue") and QuarantineID name a quarantined
	// record.
	Source       string
	QuarantineID int64
}

// Config configures an Engine.
type Config struct {
	Store     Store
	Spool     Spool
	Sealer    Sealer
	Deliverer Deliverer
	Logger    *slog.Logger
	// Events receives every event; it must not block. Optional.
	Events func(Event)
	// Metrics counts every event by its kind. Optional.
	Metrics *metrics.Metrics
	// MaxActiveLanes bounds lanes processing at once. Default 8.
	MaxActiveLanes int
	// ClaimAttempts bounds claim attempts per message. Default 6.
	ClaimAttempts int
	// RetryMin, RetryMax bound the retry backoff. Defaults 1s and 30s.
	RetryMin, RetryMax time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Minter mints local notice ids. Default a minter on the clock.
	Minter *jam.Minter
	// NoActivity turns off the working indicator of attached agents.
	NoActivity bool
	// ActivityInterval is the indicator's refresh interval; default 3s.
	ActivityInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.MaxActiveLanes == 0 {
		c.MaxActiveLanes = 8
	}
	if c.ClaimAttempts == 0 {
		c.ClaimAttempts = 6
	}
	if c.RetryMin == 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Events == nil {
		c.Events = func(Event) {}
	}
	if c.Minter == nil {
		c.Minter = jam.NewMinter(nil, nil)
	}
	return c
}

func (c Config) validate() error {
	if c.Store == nil || c.Spool == nil || c.Sealer == nil || c.Deliverer == nil || c.Logger == nil {
		return errors.New("engine: store, spool, sealer, deliverer and logger are required")
	}
	return nil
}

// Engine runs the inbound pipeline for every registered peer.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	slots chan struct{} // active lane bound

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	peers map[peerRef]*peerState // guarded by mu
	lanes map[store.Lane]*lane   // guarded by mu
	// fails holds the reason of each failure mark being retried.
	fails map[failRef]string // guarded by mu
	// refused holds why a lane's agent cannot serve it (RefuseRoom).
	refused map[store.Lane]string // guarded by mu
	started bool                  // guarded by mu

	// recovered is closed once the messages queued before Start have
	// been redelivered; lanes wait for it.
	recovered chan struct{}

	wake *broadcaster
	act  *activity
}

type peerRef struct {
	ws  jam.WorkspaceID
	key jam.PeerKey
}

// New builds an Engine.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "engine"),
		slots:   make(chan struct{}, cfg.MaxActiveLanes),
		peers:   map[peerRef]*peerState{},
		lanes:   map[store.Lane]*lane{},
		fails:   map[failRef]string{},
		refused: map[store.Lane]string{},
		wake:    newBroadcaster(),

		recovered: make(chan struct{}),
	}
	e.act = newActivity(e)
	return e, nil
}

// Start recovers spooled lanes and redelivers queued messages of every
// registered peer, then accepts work until Stop. It returns without
// waiting for the redelivery, so the daemon serves while a large backlog
// is worked through; lanes wait for it (Recovered).
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("engine: already started")
	}
	e.ctx, e.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	e.started = true
	var peers []PeerRuntime
	for _, p := range e.peers {
		peers = append(peers, p.rt)
	}
	e.mu.Unlock()
	// Records that can no longer be read leave the pipeline before
	// anything is delivered, so none holds up its room.
	if _, err := e.sweep(ctx); err != nil {
		// Not fatal: a lane or list that meets such a record sweeps again.
		e.log.Warn("sweep at start", "err", err)
	}
	lanes, err := e.cfg.Store.SpoolLanes(ctx)
	if err != nil {
		return fmt.Errorf("recover spool lanes: %w", err)
	}
	// Queued messages first, in queue order, before any lane moves a
	// newer one: a new message must not reach an agent ahead of older ones
	// it has not seen.
	if !e.spawn(func() {
		defer close(e.recovered)
		for _, p := range peers {
			if err := e.Redeliver(e.ctx, p.WorkspaceID, p.Key, ""); err != nil && e.ctx.Err() == nil {
				e.log.Warn("redeliver at start", "peer", p.Key, "err", err)
			}
		}
	}) {
		close(e.recovered)
	}
	for _, l := range lanes {
		e.wakeLane(l)
	}
	return nil
}

// Recovered is closed once the messages queued before Start have been
// redelivered (claimed and delivered, or their claims given up).
func (e *Engine) Recovered() <-chan struct{} { return e.recovered }

// Stop ends every lane (and the claim retries it runs) and waits for
// them. Safe twice and before
// Start.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel(jam.ErrStopping)
	// Every lane does its I/O and retry backoff under e.ctx, so they end
	// promptly.
	e.wg.Wait()
	e.act.close()
	return nil
}

// AddPeer registers a live peer; its spooled lanes can then be processed
// and its queued messages are redelivered.
func (e *Engine) AddPeer(ctx context.Context, p PeerRuntime) error {
	ps := newPeerState(p)
	e.mu.Lock()
	e.peers[peerRef{p.WorkspaceID, p.Key}] = ps
	started := e.started
	e.mu.Unlock()
	if !started {
		return nil
	}
	return e.Redeliver(ctx, p.WorkspaceID, p.Key, "")
}

func (e *Engine) peer(ws jam.WorkspaceID, key jam.PeerKey) (*peerState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.peers[peerRef{ws, key}]
	if !ok {
		return nil, fmt.Errorf("%w: peer %s is not running", jam.ErrUnavailable, key)
	}
	return p, nil
}

// Peers returns the registered peers of a workspace.
func (e *Engine) Peers(ws jam.WorkspaceID) []PeerRuntime {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []PeerRuntime
	for ref, p := range e.peers {
		if ref.ws == ws {
			out = append(out, p.rt)
		}
	}
	return out
}

func (e *Engine) emit(ev Event) {
	e.cfg.Metrics.PipelineEvent(string(ev.Kind))
	e.cfg.Events(ev)
}

// spawn runs f as a goroutine the engine owns, unless the engine is stopping.
func (e *Engine) spawn(f func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ctx == nil || e.ctx.Err() != nil {
		return false
	}
	e.wg.Go(f)
	return true
}

// aad binds a sealed body to its row so rows cannot be swapped.
func aad(ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) []byte {
	return []byte(string(ws) + "|" + key.String() + "|" + string(msg))
}

// broadcaster wakes every waiter when something is queued.
type broadcaster struct {
	mu sync.Mutex
	ch chan struct{} // guarded by mu; closed and replaced on Notify
}

func newBroadcaster() *broadcaster { return &broadcaster{ch: make(chan struct{})} }

func (b *broadcaster) C() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcaster) Notify() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}
