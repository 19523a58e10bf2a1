package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
	"github.com/jamhq/jam/internal/store"
)

// Inbound makes one message from a peer's feed durable and schedules it.
// It returns once the message is fsynced in the spool (or found to be a
// duplicate); it blocks while the peer's spool is full, and while the disk
// refuses the write (see spoolRefused).
func (e *Engine) Inbound(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, m protocol.Message) error {
	if m.ID == "" {
		return fmt.Errorf("%w: inbound message without an id", jam.ErrInvalid)
	}
	msgID, err := jam.ParseUUID[jam.PlatformMessageID](m.ID)
	if err != nil {
		return err
	}
	room, err := jam.ParseUUID[jam.RoomID](m.ChatRoomID)
	if err != nil {
		return fmt.Errorf("inbound %s: %w", m.ID, err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("inbound %s: %w", m.ID, err)
	}
	entry := store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room, MessageID: msgID, Sealed: e.cfg.Sealer.Seal(raw, aad(ws, key, msgID)), ReceivedAt: e.cfg.Now()}
	_, appended, err := e.cfg.Spool.Push(ctx, entry)
	// The disk refused the write, or the store did not answer: nothing
	// was kept or acknowledged. Later
	// messages of the peer must not overtake this one, so Inbound holds
	// the peer's feed here until there is room or ctx ends (Band then
	// still holds the message, unacknowledged, and offers it again).
	wait := min(e.cfg.RetryMin, 100*time.Millisecond)
	// A store that does not answer (a PostgreSQL server down or
	// restarting) is held the same way: the write resumes when it does.
	refusals := 0
	for ; errors.Is(err, jam.ErrStorageFull) || errors.Is(err, jam.ErrUnavailable); refusals++ {
		if refusals == 0 {
			e.log.Warn("message not spooled; retrying until there is room", "peer", key, "room", room, "message", msgID, "err", err)
			e.emit(Event{Kind: EventSpoolRefused, Workspace: ws, Peer: key, Room: room, MessageID: msgID, Err: err})
		}
		t := time.NewTimer(wait)
		wait = min(wait*2, e.cfg.RetryMax)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("spool %s: %w", m.ID, err)
		case <-t.C:
		}
		_, appended, err = e.cfg.Spool.Push(ctx, entry)
	}
	if err != nil {
		return fmt.Errorf("spool %s: %w", m.ID, err)
	}
	if !appended {
		e.emit(Event{Kind: EventDuplicate, Workspace: ws, Peer: key, Room: room, MessageID: msgID})
		if refusals > 0 {
			// A write the store did not answer may have committed
			// (the connection died after the commit, before its
			// reply): the retry then finds the message spooled by
			// that write, and nothing else would wake its lane.
			e.wakeLane(store.Lane{WorkspaceID: ws, Peer: key, Room: room})
		}
		return nil
	}
	e.emit(Event{Kind: EventSpooled, Workspace: ws, Peer: key, Room: room, MessageID: msgID})
	e.wakeLane(store.Lane{WorkspaceID: ws, Peer: key, Room: room})
	return nil
}

// lane is one (peer, room) ordered lane. At most one goroutine runs it.
type lane struct {
	running bool // guarded by Engine.mu
	dirty   bool // guarded by Engine.mu: woken while running
}

// wakeLane makes sure the lane's goroutine runs.
func (e *Engine) wakeLane(l store.Lane) {
	e.mu.Lock()
	ln, ok := e.lanes[l]
	if !ok {
		ln = &lane{}
		e.lanes[l] = ln
	}
	if ln.running {
		ln.dirty = true
		e.mu.Unlock()
		return
	}
	ln.running = true
	e.mu.Unlock()
	if !e.spawn(func() { e.runLane(l, ln) }) {
		e.mu.Lock()
		ln.running = false
		e.mu.Unlock()
	}
}

// laneBatch is how many spooled entries a lane reads at a time.
const laneBatch = 64

// runLane drains a lane in order. After a failure it waits with backoff
// and retries the same entry; new entries do not skip it.
func (e *Engine) runLane(l store.Lane, ln *lane) {
	ctx := e.ctx
	backoff := e.cfg.RetryMin
	// The backlog queued before Start goes first.
	select {
	case <-e.recovered:
	case <-ctx.Done():
		e.finishLane(ln)
		return
	}
	for {
		e.mu.Lock()
		ln.dirty = false
		e.mu.Unlock()
		entries, err := retryCorrupt(ctx, e, func() ([]store.SpoolEntry, error) {
			return e.cfg.Store.SpoolNext(ctx, l.WorkspaceID, l.Peer, l.Room, laneBatch)
		})
		if err == nil && len(entries) > 0 {
			err = e.processBatch(ctx, entries)
		}
		if ctx.Err() != nil {
			e.finishLane(ln)
			return
		}
		if err != nil {
			e.log.Warn("lane failed; retrying", "peer", l.Peer, "room", l.Room, "err", err, "in", backoff)
			e.emit(Event{Kind: EventLaneFailed, Workspace: l.WorkspaceID, Peer: l.Peer, Room: l.Room, Err: err})
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				e.finishLane(ln)
				return
			case <-t.C:
			}
			backoff = min(backoff*2, e.cfg.RetryMax)
			continue
		}
		backoff = e.cfg.RetryMin
		if len(entries) == laneBatch {
			continue
		}
		e.mu.Lock()
		if !ln.dirty {
			ln.running = false
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

func (e *Engine) finishLane(ln *lane) {
	e.mu.Lock()
	ln.running = false
	e.mu.Unlock()
}

// systemMarker matches content that is a system marker, "[system:…]".
var systemMarker = regexp.MustCompile(`^\s*\[system:[^\]]*\]\s*$`)

// processBatch routes spooled entries of one lane, in order. Entries move
// to the queue in one transaction per run of ordinary messages; a system
// marker first flushes the run before it, so the lane's order holds. It
// holds one of the active-lane slots while it works.
func (e *Engine) processBatch(ctx context.Context, entries []store.SpoolEntry) error {
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.slots }()

	en0 := entries[0]
	p, err := e.peer(en0.WorkspaceID, en0.Peer)
	if err != nil {
		return err // the peer is not running yet; its lanes wait for it
	}
	var run []store.QueueRow
	for _, en := range entries {
		// An entry that does not open or decode is quarantined and the
		// lane goes on: the entries after it keep their order.
		raw, err := e.cfg.Sealer.Open(en.Sealed, aad(en.WorkspaceID, en.Peer, en.MessageID))
		if err != nil {
			if qerr := e.quarantineSpool(ctx, en, fmt.Errorf("open: %w", err)); qerr != nil {
				return errors.Join(e.moveRun(ctx, p, run), qerr)
			}
			continue
		}
		var m protocol.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			if qerr := e.quarantineSpool(ctx, en, fmt.Errorf("decode: %w", err)); qerr != nil {
				return errors.Join(e.moveRun(ctx, p, run), qerr)
			}
			continue
		}
		if !en.MessageID.IsNotice() && systemMarker.MatchString(m.Content) {
			if err := e.moveRun(ctx, p, run); err != nil {
				return err
			}
			run = run[:0]
			if err := e.dropMarker(ctx, p, en); err != nil {
				return err
			}
			continue
		}
		addressed := p.rt.OwnerUserID != "" && strings.Contains(m.Content, mention.Token(string(p.rt.OwnerUserID)))
		m.Content = mention.Render(m.Content, p.lookup(ctx, string(en.Room)))
		rendered, err := json.Marshal(m)
		if err != nil {
			return errors.Join(e.moveRun(ctx, p, run), err)
		}
		sender, _ := jam.ParseUUID[jam.IdentityID](m.SenderID)
		run = append(run, store.QueueRow{
			Seq: en.Seq, WorkspaceID: en.WorkspaceID, Peer: en.Peer, Room: en.Room, MessageID: en.MessageID,
			SenderID: sender, AddressedToUser: addressed,
			Sealed: e.cfg.Sealer.Seal(rendered, aad(en.WorkspaceID, en.Peer, en.MessageID)), State: store.QueueQueued,
			ReceivedAt: en.ReceivedAt,
		})
	}
	return e.moveRun(ctx, p, run)
}

// dropMarker claims and settles a system marker on Band and drops it from
// the spool; it is never queued.
func (e *Engine) dropMarker(ctx context.Context, p *peerState, en store.SpoolEntry) error {
	if _, err := p.rt.Agent.AgentProcessing(ctx, string(en.Room), string(en.MessageID)); err != nil {
		return fmt.Errorf("claim system marker %s: %w", en.MessageID, err)
	}
	if _, err := p.rt.Agent.AgentProcessed(ctx, string(en.Room), string(en.MessageID)); err != nil {
		return fmt.Errorf("settle system marker %s: %w", en.MessageID, err)
	}
	if err := e.cfg.Store.SpoolDrop(ctx, en.Seq, e.cfg.Now()); err != nil && !errors.Is(err, jam.ErrNotFound) {
		return err
	}
	e.cfg.Spool.ReleaseN(en.WorkspaceID, en.Peer, 1, int64(len(en.Sealed)))
	e.emit(Event{Kind: EventSystemMarker, Workspace: en.WorkspaceID, Peer: en.Peer, Room: en.Room, MessageID: en.MessageID})
	return nil
}

// moveRun moves a run of entries to the queue in one transaction, then
// claims and delivers the routed ones in order.
func (e *Engine) moveRun(ctx context.Context, p *peerState, run []store.QueueRow) error {
	if len(run) == 0 {
		return nil
	}
	moved, err := e.cfg.Store.SpoolMoveBatch(ctx, run)
	if err != nil {
		return fmt.Errorf("enqueue %d messages: %w", len(run), err)
	}
	var unrouted bool
	for i, m := range moved {
		r := run[i]
		if m.Outcome != store.MoveMissing {
			e.cfg.Spool.ReleaseN(r.WorkspaceID, r.Peer, 1, int64(m.SpoolBytes))
		}
		base := Event{Workspace: r.WorkspaceID, Peer: r.Peer, Room: r.Room, MessageID: r.MessageID, Binding: m.Row.Binding}
		switch m.Outcome {
		case store.MoveMissing:
			// Moved by an earlier attempt of this lane.
		case store.MoveAlreadyQueued, store.MoveSettled:
			// Queued by an earlier arrival (its own flow delivers it), or
			// settled already: nothing more to do.
			base.Kind = EventDuplicate
			e.emit(base)
		case store.MoveRetired:
			base.Kind = EventDroppedRetired
			e.emit(base)
		case store.MoveQueued:
			if m.Row.Binding == "" {
				unrouted = true
				base.Kind = EventQueuedUnrouted
				e.emit(base)
				if why := e.refusal(store.Lane{WorkspaceID: r.WorkspaceID, Peer: r.Peer, Room: r.Room}); why != "" {
					// Its agent cannot serve the room: the person sees why.
					if err := e.Fail(ctx, r.WorkspaceID, r.Peer, r.MessageID, why); err != nil {
						e.log.Warn("unservable message not marked failed", "peer", r.Peer, "message", r.MessageID, "err", err)
					}
				}
				continue
			}
			base.Kind = EventQueued
			e.emit(base)
			e.claimAndDeliver(ctx, p, m.Row)
		}
	}
	if unrouted {
		e.wake.Notify()
	}
	return nil
}
