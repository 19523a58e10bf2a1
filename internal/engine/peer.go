package engine

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
)

// peerRefreshInterval bounds how often a peer's index is re-read.
const peerRefreshInterval = 5 * time.Second

// peerState is a live peer and its cache of who is who: Band identities
// by id (for rendering mention tokens) and by handle (for resolving
// outbound mentions).
type peerState struct {
	rt PeerRuntime

	mu        sync.Mutex
	byID      map[string]protocol.Peer // guarded by mu
	refreshed time.Time                // guarded by mu
}

func newPeerState(rt PeerRuntime) *peerState {
	return &peerState{rt: rt, byID: map[string]protocol.Peer{}}
}

// refresh re-reads the peer index, at most once per interval unless forced.
func (p *peerState) refresh(ctx context.Context, force bool) {
	p.mu.Lock()
	fresh := time.Since(p.refreshed) < peerRefreshInterval
	p.mu.Unlock()
	if fresh && !force {
		return
	}
	peers, err := p.rt.Agent.AgentPeers(ctx)
	if err != nil {
		return // keep the old index; the lookup degrades to tokens
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range peers {
		p.byID[strings.ToLower(q.ID)] = q
	}
	p.refreshed = time.Now()
}

// remember adds room participants to the index.
func (p *peerState) remember(parts []protocol.Participant) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range parts {
		handle := ""
		if q.Handle != nil {
			handle = *q.Handle
		}
		if handle == "" {
			continue
		}
		p.byID[strings.ToLower(q.ID)] = protocol.Peer{ID: q.ID, Handle: handle, Name: q.Name, Type: q.Type}
	}
}

// lookup returns a function that maps an identity id to its handle for
// mention rendering. Unknown ids stay as tokens.
func (p *peerState) lookup(ctx context.Context, room string) func(id string) (string, bool) {
	p.refresh(ctx, false)
	known := func(id string) (string, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		q, ok := p.byID[strings.ToLower(id)]
		return q.Handle, ok && q.Handle != ""
	}
	var rosterRead bool
	return func(id string) (string, bool) {
		if h, ok := known(id); ok {
			return h, true
		}
		if id == strings.ToLower(string(p.rt.AgentID)) && p.rt.Handle != "" {
			return p.rt.Handle, true
		}
		if !rosterRead {
			rosterRead = true
			if parts, err := p.rt.Agent.AgentParticipants(ctx, room); err == nil {
				p.remember(parts)
			}
			return known(id)
		}
		return "", false
	}
}
