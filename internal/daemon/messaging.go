package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/approval"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/connection"
	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mcp"
	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/session"
	"github.com/jamhq/jam/internal/spool"
	"github.com/jamhq/jam/internal/store"
)

// Unrouted bucket retention, applied at start.
const (
	unroutedMaxAge  = 30 * 24 * time.Hour
	unroutedMaxKeep = 1000
)

// settledRetention is how long settled tombstones and finished reply
// intents are kept. Band never replays a processed message, so tombstones
// only guard against late duplicates; a week is generous.
const settledRetention = 7 * 24 * time.Hour

// embeddedProfile names the account of the embedded hub's owner.
const embeddedProfile = "local"

// messaging wires accounts, peers, the spool, the engine and one agent
// feed per peer.
type messaging struct {
	d       *daemon
	log     *slog.Logger
	box     *secret.Box
	spool   *spool.Spool
	engine  *engine.Engine
	feeds   *feeds
	runtime *session.Manager
	// tools is jam's MCP server for owned agents (tools.go).
	tools *mcp.Server
	// approvals holds the questions agents ask the person (approvals.go).
	approvals *approval.Service
	ask       harness.Approval // asks the person (approvals.go)
	// delegations runs agents' delegations to child sessions
	// (delegations.go).
	delegations *delegation.Service

	mu      sync.Mutex
	clients map[jam.AccountID]*band.Client // guarded by mu: person clients

	// owned serializes materializing owned agents' sessions (owned.go).
	owned sync.Mutex
	// sandbox is the executor of agents that name none (sandbox.go).
	sandbox string
}

// startMessaging brings up the pipeline: secret box, spool, engine, the
// embedded account, and a feed per known peer.
func (d *daemon) startMessaging(ctx context.Context, stack *stopStack) error {
	box := d.box // loaded with the store, which seals content with it too
	m := &messaging{d: d, log: d.log.With("component", "messaging"), box: box, clients: map[jam.AccountID]*band.Client{}}
	if n, err := d.store.QueuePruneUnrouted(ctx, time.Now().Add(-unroutedMaxAge), unroutedMaxKeep); err != nil {
		return fmt.Errorf("prune unrouted: %w", err)
	} else if n > 0 {
		m.log.Info("pruned unrouted messages", "count", n)
	}

	if n, err := d.store.RetentionPrune(ctx, time.Now().Add(-settledRetention)); err != nil {
		return fmt.Errorf("prune settled records: %w", err)
	} else if n.Settled+n.Intents > 0 {
		m.log.Info("pruned settled records", "tombstones", n.Settled, "reply_intents", n.Intents)
	}

	sp, err := spool.New(spool.Config{Logger: d.log, Metrics: d.metrics}, d.store)
	if err != nil {
		return err
	}
	if err := sp.Start(ctx); err != nil {
		return fmt.Errorf("start spool: %w", err)
	}
	stack.push("spool", sp.Stop)
	m.spool = sp

	del := &deliverer{}
	eng, err := engine.New(engine.Config{
		Store: d.store, Spool: sp, Sealer: box, Deliverer: del, Logger: d.log, Metrics: d.metrics,
		Events: func(ev engine.Event) {
			m.log.Debug("pipeline", "event", ev.Kind, "peer", ev.Peer, "room", ev.Room, "message", ev.MessageID, "binding", ev.Binding, "err", ev.Err)
			d.storage.engineEvent(ev)
			d.publishEngineEvent(ev)
		},
	})
	if err != nil {
		return err
	}
	m.engine = eng
	m.feeds = newFeeds(d.log, eng)
	m.feeds.onState = func(key jam.PeerKey, ev band.AgentEvent) {
		d.metrics.BandState(string(ev.State))
		d.publishAgentState(key, ev)
	}
	d.metrics.SetDepths(metrics.Depths{Spool: sp.Depth, Queue: d.queueDepth, Band: m.feeds.stateCounts})
	m.feeds.onRoom = func(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) {
		m.serveOwnedRoom(m.feeds.ctx, ws, key, room)
	}
	stack.push("agent feeds", m.feeds.stop)
	// Owned runtimes stop before the feeds and after the engine (the
	// stack unwinds in reverse).
	if err := m.startRuntime(ctx, stack, del); err != nil {
		return err
	}

	if err := m.moveLegacyKeys(ctx); err != nil {
		return err
	}
	if d.band.userID != "" {
		if err := m.ensureConfiguredAccount(ctx); err != nil {
			return err
		}
	}
	peers, err := d.store.PeerList(ctx, d.workspace.ID)
	if err != nil {
		return fmt.Errorf("load peers: %w", err)
	}
	for _, p := range peers {
		rt, client, err := m.peerRuntime(ctx, p)
		if err != nil {
			m.log.Warn("peer cannot start", "peer", p.Key, "err", err)
			continue
		}
		if err := eng.AddPeer(ctx, rt); err != nil {
			return err
		}
		m.feeds.start(d.workspace.ID, p, client)
	}
	if err := eng.Start(ctx); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	stack.push("engine", eng.Stop)
	d.msg = m
	return nil
}

// accountAAD and peerAAD are the associated data the daemon once sealed
// Band keys under, in the rows' KeySealed. They remain only to read a
// legacy row and to move it onto a band connection (bandkeys.go); no key
// is sealed under them any more.
func accountAAD(ws jam.WorkspaceID, profile string) []byte {
	return []byte("account|" + string(ws) + "|" + profile)
}

func peerAAD(ws jam.WorkspaceID, key jam.PeerKey) []byte {
	return []byte("peer|" + string(ws) + "|" + key.String())
}

// configuredProfile names the account of the configured Band: "local" for
// the embedded hub, "band" for a Band URL given at start.
func (d *daemon) configuredProfile() string {
	if d.band.mode == "embedded" {
		return embeddedProfile
	}
	return "band"
}

// ensureConfiguredAccount records the person the daemon was started with
// (the embedded hub's owner, or --band with --band-key) as an account,
// its key in the account's band connection (rotated when the key is not
// the one it holds).
func (m *messaging) ensureConfiguredAccount(ctx context.Context) error {
	d := m.d
	ws := d.workspace.ID
	profile := d.configuredProfile()
	key := d.cfg.BandKey
	if d.band.mode == "embedded" {
		key = d.band.hub.OwnerKey()
	}
	acct, err := d.store.AccountGet(ctx, ws, profile)
	switch {
	case err == nil && acct.BandURL == d.band.url && string(acct.UserID) == d.band.userID:
		if old, oerr := m.accountKey(ctx, acct); oerr == nil && string(old) == key && acct.ConnectionID != "" {
			return nil
		}
	case err != nil && !errors.Is(err, jam.ErrNotFound):
		return err
	}
	if acct.ID == "" {
		acct.ID = jam.New[jam.AccountID](d.minter)
		acct.CreatedAt = time.Now()
	}
	conn, err := d.connections().SetBand(ctx, ws, acct.ConnectionID, connection.BandAccountName(profile), []byte(key))
	if err != nil {
		return fmt.Errorf("record account %s: %w", profile, err)
	}
	user, _ := jam.ParseUUID[jam.IdentityID](d.band.userID)
	acct = store.Account{ID: acct.ID, WorkspaceID: ws, Profile: profile, BandURL: d.band.url, UserID: user, Handle: d.band.handle,
		ConnectionID: conn.ID, CreatedAt: acct.CreatedAt}
	if _, err := d.store.AccountPut(ctx, acct); err != nil {
		return fmt.Errorf("record account %s: %w", profile, err)
	}
	return nil
}

// accountClient returns the person's REST client of an account.
func (m *messaging) accountClient(ctx context.Context, a store.Account) (*band.Client, error) {
	m.mu.Lock()
	c, ok := m.clients[a.ID]
	m.mu.Unlock()
	if ok {
		return c, nil
	}
	key, err := m.accountKey(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("account %s key: %w", a.Profile, err)
	}
	c, err = band.NewClient(m.d.band.http, a.BandURL, band.APIKey(key))
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.clients[a.ID]; ok {
		return prev, nil
	}
	m.clients[a.ID] = c
	return c, nil
}

// peerRuntime opens a peer's key and builds its agent client.
func (m *messaging) peerRuntime(ctx context.Context, p store.Peer) (engine.PeerRuntime, *band.Client, error) {
	acct, err := m.accountByID(ctx, p.WorkspaceID, p.AccountID)
	if err != nil {
		return engine.PeerRuntime{}, nil, err
	}
	key, err := m.peerKey(ctx, p)
	if err != nil {
		return engine.PeerRuntime{}, nil, fmt.Errorf("peer %s key: %w", p.Key, err)
	}
	c, err := band.NewClient(m.d.band.http, acct.BandURL, band.APIKey(key))
	if err != nil {
		return engine.PeerRuntime{}, nil, err
	}
	return engine.PeerRuntime{WorkspaceID: p.WorkspaceID, Key: p.Key, AgentID: p.AgentID, Handle: p.Handle, OwnerUserID: acct.UserID, Agent: agentAPI{Client: c, id: string(p.AgentID)}}, c, nil
}

func (m *messaging) accountByID(ctx context.Context, ws jam.WorkspaceID, id jam.AccountID) (store.Account, error) {
	accts, err := m.d.store.AccountList(ctx, ws)
	if err != nil {
		return store.Account{}, err
	}
	for _, a := range accts {
		if a.ID == id {
			return a, nil
		}
	}
	return store.Account{}, fmt.Errorf("%w: account %s", jam.ErrNotFound, id)
}

// agentAPI adapts the band client to the engine's Agent interface.
type agentAPI struct {
	*band.Client
	id string // the agent's Band id, known from the peer record
}

func (a agentAPI) AgentSent(ctx context.Context, room string, since time.Time) ([]protocol.Message, error) {
	var out []protocol.Message
	cursor := ""
	for {
		page, err := a.AgentContext(ctx, room, cursor, protocol.MaxPageLimit)
		if err != nil {
			return nil, err
		}
		for _, msg := range page.Messages {
			at, _ := time.Parse(time.RFC3339Nano, msg.InsertedAt)
			if strings.EqualFold(msg.SenderID, a.id) && !at.Before(since.Add(-time.Second)) {
				out = append(out, msg)
			}
		}
		if !page.HasMore || page.NextCursor == "" || page.NextCursor == cursor {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// feeds owns one agent feed goroutine per peer.
type feeds struct {
	log    *slog.Logger
	engine *engine.Engine
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// onState, if set, publishes a socket state change (set before start).
	onState func(jam.PeerKey, band.AgentEvent)
	// onRoom, if set, runs for every room the agent is in, before the
	// room is caught up (set before start).
	onRoom func(jam.WorkspaceID, jam.PeerKey, jam.RoomID)

	mu     sync.Mutex
	states map[jam.PeerKey]band.ConnState // guarded by mu
	// peers holds each running feed's cancel and a channel closed when
	// it has ended (stopPeer).
	peers map[jam.PeerKey]peerFeed // guarded by mu
}

// peerFeed is one peer's running feed.
type peerFeed struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newFeeds(log *slog.Logger, eng *engine.Engine) *feeds {
	ctx, cancel := context.WithCancel(context.Background())
	return &feeds{log: log.With("component", "feeds"), engine: eng, ctx: ctx, cancel: cancel, states: map[jam.PeerKey]band.ConnState{},
		peers: map[jam.PeerKey]peerFeed{}}
}

// start runs a peer's agent feed until stop.
func (f *feeds) start(ws jam.WorkspaceID, p store.Peer, c *band.Client) {
	key := p.Key
	feed, err := band.NewAgentFeed(band.AgentFeedConfig{Client: c, Logger: f.log}, string(p.AgentID), func(ev band.AgentEvent) {
		switch ev.Kind {
		case band.AgentMessage:
			if err := f.engine.Inbound(f.ctx, ws, key, *ev.Message); err != nil && f.ctx.Err() == nil {
				// Not acknowledged locally: Band still has it unprocessed
				// and the next catch-up replays it.
				f.log.Warn("inbound not spooled", "peer", key, "message", ev.Message.ID, "err", err)
			}
		case band.AgentRoomsListed:
			// Runs before any room is caught up: a room the agent is back
			// in is restored first, one it left while we were away retires.
			rooms := make([]jam.RoomID, 0, len(ev.Rooms))
			for _, r := range ev.Rooms {
				if id, err := jam.ParseUUID[jam.RoomID](r); err == nil {
					rooms = append(rooms, id)
				}
			}
			if f.onRoom != nil {
				for _, r := range rooms {
					f.onRoom(ws, key, r)
				}
			}
			if gone, err := f.engine.ReconcileRooms(f.ctx, ws, key, rooms, ev.ListedAt); err != nil {
				f.log.Warn("reconcile rooms", "peer", key, "err", err)
			} else if len(gone) > 0 {
				f.log.Info("retired rooms the agent left", "peer", key, "rooms", gone)
			}
		case band.AgentRoomAdded:
			if room, err := jam.ParseUUID[jam.RoomID](ev.Room); err == nil {
				if err := f.engine.RestoreRoom(f.ctx, ws, key, room); err != nil {
					f.log.Warn("restore room", "peer", key, "room", room, "err", err)
				}
				if f.onRoom != nil {
					f.onRoom(ws, key, room)
				}
			}
		case band.AgentRoomRemoved:
			if room, err := jam.ParseUUID[jam.RoomID](ev.Room); err == nil {
				// A failure leaves the rows for the next connect's
				// reconciliation to retire.
				if res, err := f.engine.RetireRoom(f.ctx, ws, key, room); err != nil {
					f.log.Warn("retire room", "peer", key, "room", room, "err", err)
				} else {
					f.log.Info("room retired", "peer", key, "room", room, "queued", res.Queued, "spooled", res.Spooled, "binding", res.Binding)
				}
			}
		case band.AgentState:
			f.mu.Lock()
			f.states[key] = ev.State
			f.mu.Unlock()
			if ev.Err != nil {
				f.log.Info("agent socket", "peer", key, "state", ev.State, "err", ev.Err)
			} else {
				f.log.Info("agent socket", "peer", key, "state", ev.State)
			}
			if f.onState != nil {
				f.onState(key, ev)
			}
		}
	})
	if err != nil {
		f.log.Error("agent feed", "peer", key, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	pf := peerFeed{cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	f.peers[key] = pf
	f.mu.Unlock()
	f.wg.Go(func() {
		defer close(pf.done)
		if err := feed.Run(ctx); err != nil {
			f.log.Warn("agent feed ended", "peer", key, "err", err)
		}
	})
}

// stopPeer ends a peer's feed and waits for it; its socket state is
// forgotten.
func (f *feeds) stopPeer(key jam.PeerKey) {
	f.mu.Lock()
	pf, ok := f.peers[key]
	delete(f.peers, key)
	delete(f.states, key)
	f.mu.Unlock()
	if ok {
		pf.cancel()
		<-pf.done
	}
}

func (f *feeds) state(key jam.PeerKey) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.states[key]; ok {
		return string(s)
	}
	return string(band.StateConnecting)
}

// stateCounts returns the number of agent sockets in each state.
func (f *feeds) stateCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, s := range f.states {
		out[string(s)]++
	}
	return out
}

func (f *feeds) stop(context.Context) error {
	f.cancel()
	f.wg.Wait()
	return nil
}

// scopeOf derives a peer scope from an agent name.
var scopeUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

func scopeOf(name string) string {
	s := strings.Trim(scopeUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-.")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// queueDepth counts the workspace's queued messages, routed and unrouted,
// for the metrics scrape. The store has no count query, so it lists the
// rows; a peer's queue is bounded (store.MaxQueuedPerPeer).
func (d *daemon) queueDepth(ctx context.Context) (routed, unrouted int, err error) {
	rows, err := d.store.QueueList(ctx, store.QueueListParams{WorkspaceID: d.workspace.ID})
	if err != nil {
		return 0, 0, err
	}
	for _, r := range rows {
		if r.Binding == "" {
			unrouted++
		} else {
			routed++
		}
	}
	return routed, unrouted, nil
}
