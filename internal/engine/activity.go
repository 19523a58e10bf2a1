package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/working"
)

// activity keeps the working indicator of attached agents: a (peer, room)
// is working from the moment the agent takes a delivered message of the
// room from its inbox until the last message it took there is settled
// (or the room is retired). Each such span is one epoch of the room's
// publisher, so a late end of an older span never clears a newer one.
type activity struct {
	set *working.Set

	mu   sync.Mutex
	held map[working.Key]*heldRoom // guarded by mu
}

type heldRoom struct {
	epoch uint64
	msgs  map[jam.PlatformMessageID]bool
}

func newActivity(e *Engine) *activity {
	a := &activity{held: map[working.Key]*heldRoom{}}
	if e.cfg.NoActivity {
		return a
	}
	a.set = working.NewSet(func(k working.Key) *working.Publisher {
		return working.New(working.Config{
			Reporter: activityReporter{e: e, key: k}, Room: k.Room, Logger: e.log,
			Interval: e.cfg.ActivityInterval,
		})
	})
	return a
}

func activityKey(ws jam.WorkspaceID, peer jam.PeerKey, room jam.RoomID) working.Key {
	return working.Key{Agent: string(ws) + "|" + peer.String(), Room: string(room)}
}

// taken records that the agent took these inbox items.
func (a *activity) taken(ws jam.WorkspaceID, items []InboxItem) {
	if a.set == nil {
		return
	}
	var begin []working.Key
	a.mu.Lock()
	for _, it := range items {
		if it.Binding == "" || it.MessageID.IsNotice() {
			continue // unrouted rows are not the agent's work; notices never touch Band
		}
		k := activityKey(ws, it.Peer, it.Room)
		h := a.held[k]
		if h == nil {
			h = &heldRoom{msgs: map[jam.PlatformMessageID]bool{}}
			a.held[k] = h
			begin = append(begin, k)
		}
		h.msgs[it.MessageID] = true
	}
	a.mu.Unlock()
	for _, k := range begin {
		epoch := a.set.Begin(k)
		a.mu.Lock()
		if h := a.held[k]; h != nil && h.epoch == 0 {
			h.epoch = epoch
		}
		a.mu.Unlock()
	}
}

// released records that a message left the queue; all = the whole room.
func (a *activity) released(ws jam.WorkspaceID, peer jam.PeerKey, room jam.RoomID, msg jam.PlatformMessageID, all bool) {
	if a.set == nil {
		return
	}
	k := activityKey(ws, peer, room)
	a.mu.Lock()
	h := a.held[k]
	if h == nil {
		a.mu.Unlock()
		return
	}
	delete(h.msgs, msg)
	if len(h.msgs) > 0 && !all {
		a.mu.Unlock()
		return
	}
	delete(a.held, k)
	epoch := h.epoch
	a.mu.Unlock()
	if epoch != 0 {
		a.set.End(k, epoch)
	}
}

// close clears every open indicator, within the publishers' drain bound.
func (a *activity) close() {
	if a.set != nil {
		a.set.Close()
	}
}

// activityReporter reports through the peer's Band client.
type activityReporter struct {
	e   *Engine
	key working.Key
}

func (r activityReporter) AgentActivity(ctx context.Context, room string, working bool) error {
	r.e.mu.Lock()
	var agent Agent
	for ref, p := range r.e.peers {
		if string(ref.ws)+"|"+ref.key.String() == r.key.Agent {
			agent = p.rt.Agent
		}
	}
	r.e.mu.Unlock()
	if agent == nil {
		return errors.New("peer is not running")
	}
	return agent.AgentActivity(ctx, room, working)
}

// Working opens the working indicator of (peer, room) for a span of work
// (an owned runtime's turn) and returns the function that closes it.
func (e *Engine) Working(ws jam.WorkspaceID, peer jam.PeerKey, room jam.RoomID) (end func()) {
	if e.act.set == nil {
		return func() {}
	}
	k := activityKey(ws, peer, room)
	epoch := e.act.set.Begin(k)
	return func() { e.act.set.End(k, epoch) }
}
