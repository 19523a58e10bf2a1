package engine

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// RemovePeer removes a peer jam no longer hosts: in one store transaction
// its spooled and queued messages, bindings, retired rooms, reply intents
// and template go with the peer (store.Messaging.PeerRemove), without any
// remote write, so its messages stay unsettled on Band. The engine then
// forgets the peer (its lanes' refusals too) and releases its spool
// budget. The peer's agent feed must be stopped first, so nothing new
// arrives for it; work still in flight for it finds its rows gone.
func (e *Engine) RemovePeer(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.PeerRemoved, error) {
	res, err := e.cfg.Store.PeerRemove(ctx, ws, key)
	if err != nil {
		return res, fmt.Errorf("remove peer %s: %w", key, err)
	}
	e.mu.Lock()
	delete(e.peers, peerRef{ws, key})
	for l := range e.refused {
		if l.WorkspaceID == ws && l.Peer == key {
			delete(e.refused, l)
		}
	}
	e.mu.Unlock()
	e.cfg.Spool.ReleaseN(ws, key, res.Spooled, res.SpooledBytes)
	e.wake.Notify()
	return res, nil
}
