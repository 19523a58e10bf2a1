package daemon

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/connection"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Band keys live in connections of provider band: an account's person
// key in the one its row names (connection.BandAccountName), an agent's
// in its peer's (connection.BandAgentName). jam makes, rotates and
// removes them with the account or agent; the daemon seals no Band key
// itself any more. A row written before connections held them (its
// ConnectionID "", its key in KeySealed under accountAAD or peerAAD) is
// moved onto one at start (moveLegacyKeys), and read from KeySealed
// until then.

// accountKey returns the person key of an account.
func (m *messaging) accountKey(ctx context.Context, a store.Account) ([]byte, error) {
	if a.ConnectionID != "" {
		return m.d.connections().BandSecret(ctx, a.WorkspaceID, a.ConnectionID)
	}
	return m.box.Open(a.KeySealed, accountAAD(a.WorkspaceID, a.Profile))
}

// peerKey returns the key of a peer's agent.
func (m *messaging) peerKey(ctx context.Context, p store.Peer) ([]byte, error) {
	if p.ConnectionID != "" {
		return m.d.connections().BandSecret(ctx, p.WorkspaceID, p.ConnectionID)
	}
	return m.box.Open(p.KeySealed, peerAAD(p.WorkspaceID, p.Key))
}

// moveLegacyKeys moves every account and peer of the workspace whose key
// is still sealed in its row onto a band connection: the key is opened
// with its old associated data, the connection of the row's name set to
// it (connection.Service.SetBand: added, or, after a stop between the two
// writes, the one already made reused or rotated), then the row written
// with the connection id and no sealed key. Each step can run again, so a
// start after a kill anywhere ends with one live connection per key. A
// key that does not open (another daemon key) is logged and its row left
// as it was: that account or agent cannot start, as before the move.
func (m *messaging) moveLegacyKeys(ctx context.Context) error {
	d := m.d
	ws := d.workspace.ID
	svc := d.connections()
	accts, err := d.store.AccountList(ctx, ws)
	if err != nil {
		return fmt.Errorf("move band keys: %w", err)
	}
	var na, np int
	for _, a := range accts {
		if a.ConnectionID != "" {
			continue
		}
		key, err := m.box.Open(a.KeySealed, accountAAD(ws, a.Profile))
		if err != nil {
			m.log.Warn("account key not moved onto a connection: it does not open", "account", a.Profile, "err", err)
			continue
		}
		c, err := svc.SetBand(ctx, ws, "", connection.BandAccountName(a.Profile), key)
		if err != nil {
			return fmt.Errorf("move the key of account %s: %w", a.Profile, err)
		}
		a.ConnectionID, a.KeySealed = c.ID, nil
		if _, err := d.store.AccountPut(ctx, a); err != nil {
			return fmt.Errorf("move the key of account %s: %w", a.Profile, err)
		}
		na++
	}
	peers, err := d.store.PeerList(ctx, ws)
	if err != nil {
		return fmt.Errorf("move band keys: %w", err)
	}
	for _, p := range peers {
		if p.ConnectionID != "" {
			continue
		}
		key, err := m.box.Open(p.KeySealed, peerAAD(ws, p.Key))
		if err != nil {
			m.log.Warn("agent key not moved onto a connection: it does not open", "peer", p.Key, "err", err)
			continue
		}
		c, err := svc.SetBand(ctx, ws, "", connection.BandAgentName(p.Key), key)
		if err != nil {
			return fmt.Errorf("move the key of agent %s: %w", p.Key, err)
		}
		p.ConnectionID, p.KeySealed = c.ID, nil
		if _, err := d.store.PeerPut(ctx, p); err != nil {
			return fmt.Errorf("move the key of agent %s: %w", p.Key, err)
		}
		np++
	}
	if na+np > 0 {
		m.log.Info(fmt.Sprintf("moved %d account and %d agent keys onto connections", na, np), "accounts", na, "agents", np)
	}
	return nil
}

// removeBandKey removes the band connection of an account or agent just
// removed. A failure leaves the connection, unused: a later account or
// agent of the name takes it over, and jam connection remove removes it.
func (d *daemon) removeBandKey(ctx context.Context, id jam.ConnectionID, what string) {
	if id == "" {
		return
	}
	if err := d.connections().RemoveBand(ctx, d.workspace.ID, id); err != nil {
		d.log.Warn("the removed "+what+"'s band connection stays", "connection", id, "err", err)
	}
}
