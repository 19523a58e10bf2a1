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
// duplicate); it blocks while the peer's spool is full.
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
	if err != nil {
		return fmt.Errorf("spool %s: %w", m.ID, err)
	}
	if !appended {
		e.emit(Event{Kind: EventDuplicate, Workspace: ws, Peer: key, Room: room, MessageID: msgID})
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
	for {
		e.mu.Lock()
		ln.dirty = false
		e.mu.Unlock()
		entries, err := e.cfg.Store.SpoolNext(ctx, l.WorkspaceID, l.Peer, l.Room, laneBatch)
		if err == nil {
			for _, en := range entries {
				if err = e.processEntry(ctx, en); err != nil {
					break
				}
			}
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

// processEntry routes one spooled entry. It holds one of the active-lane
// slots while it works.
func (e *Engine) processEntry(ctx context.Context, en store.SpoolEntry) error {
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.slots }()

	p, err := e.peer(en.WorkspaceID, en.Peer)
	if err != nil {
		return err // the peer is not running yet; its lanes wait for it
	}
	raw, err := e.cfg.Sealer.Open(en.Sealed, aad(en.WorkspaceID, en.Peer, en.MessageID))
	if err != nil {
		return fmt.Errorf("open spool entry %d: %w", en.Seq, err)
	}
	var m protocol.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("decode spool entry %d: %w", en.Seq, err)
	}
	base := Event{Workspace: en.WorkspaceID, Peer: en.Peer, Room: en.Room, MessageID: en.MessageID}

	if systemMarker.MatchString(m.Content) {
		if _, err := p.rt.Agent.AgentProcessing(ctx, string(en.Room), string(en.MessageID)); err != nil {
			return fmt.Errorf("claim system marker %s: %w", en.MessageID, err)
		}
		if _, err := p.rt.Agent.AgentProcessed(ctx, string(en.Room), string(en.MessageID)); err != nil {
			return fmt.Errorf("settle system marker %s: %w", en.MessageID, err)
		}
		if err := e.cfg.Store.SpoolDrop(ctx, en.Seq, e.cfg.Now()); err != nil && !errors.Is(err, jam.ErrNotFound) {
			return err
		}
		e.cfg.Spool.Release(en.WorkspaceID, en.Peer, len(en.Sealed))
		base.Kind = EventSystemMarker
		e.emit(base)
		return nil
	}

	addressed := p.rt.OwnerUserID != "" && strings.Contains(m.Content, mention.Token(string(p.rt.OwnerUserID)))
	m.Content = mention.Render(m.Content, p.lookup(ctx, string(en.Room)))
	rendered, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sender, _ := jam.ParseUUID[jam.IdentityID](m.SenderID)
	row, err := e.cfg.Store.SpoolMove(ctx, en.Seq, store.QueueRow{
		WorkspaceID: en.WorkspaceID, Peer: en.Peer, Room: en.Room, MessageID: en.MessageID,
		SenderID: sender, AddressedToUser: addressed,
		Sealed: e.cfg.Sealer.Seal(rendered, aad(en.WorkspaceID, en.Peer, en.MessageID)), State: store.QueueQueued,
		ReceivedAt: en.ReceivedAt,
	})
	if errors.Is(err, jam.ErrNotFound) {
		return nil // already moved by an earlier attempt
	}
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", en.MessageID, err)
	}
	e.cfg.Spool.Release(en.WorkspaceID, en.Peer, len(en.Sealed))
	if row.Seq != en.Seq {
		// Already queued by an earlier arrival (its own flow delivers it),
		// or already settled (a zero row): nothing more to do.
		base.Kind = EventDuplicate
		e.emit(base)
		return nil
	}
	base.Binding = row.Binding
	if row.Binding == "" {
		base.Kind = EventQueuedUnrouted
		e.emit(base)
		e.wake.Notify()
		return nil
	}
	base.Kind = EventQueued
	e.emit(base)
	e.claimAndDeliver(ctx, p, row)
	return nil
}
