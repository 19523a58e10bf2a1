package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the peers table. A peer's account id is not stored: it is the id
// of the account of the peer's profile, joined in on every read.
const (
	peerUpsert = `INSERT INTO peers (workspace_id, profile, scope, agent_id, handle, name, key_sealed, connection_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, profile, scope) DO UPDATE SET
    agent_id = excluded.agent_id,
    handle = excluded.handle,
    name = excluded.name,
    key_sealed = excluded.key_sealed,
    connection_id = excluded.connection_id
RETURNING created_at`
	peerSelectColumns = `SELECT p.workspace_id, p.profile, p.scope, a.id, p.agent_id, p.handle, p.name, p.key_sealed, p.connection_id, p.created_at
FROM peers p JOIN accounts a ON a.workspace_id = p.workspace_id AND a.profile = p.profile`
	peerSelect    = peerSelectColumns + ` WHERE p.workspace_id = ? AND p.profile = ? AND p.scope = ?`
	peerSelectAll = peerSelectColumns + ` WHERE p.workspace_id = ? ORDER BY p.profile, p.scope`
	peerCount     = `SELECT COUNT(*) FROM peers WHERE workspace_id = ? AND profile = ? AND scope = ?`
)

// PeerPut implements [store.Messaging]. The account of the peer's profile
// must exist (jam.ErrNotFound) and be p.AccountID (jam.ErrConflict). An
// agent id that belongs to another peer of the workspace is
// jam.ErrAlreadyExists. Replacing a peer keeps its CreatedAt.
func (s *Store) PeerPut(ctx context.Context, p store.Peer) (store.Peer, error) {
	p, err := p.Canonical()
	if err != nil {
		return store.Peer{}, fmt.Errorf("peer put %s: %w", p.Key, err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		acct, err := accountID(ctx, tx, p.WorkspaceID, p.Key.Profile)
		if err != nil {
			return err
		}
		if acct != p.AccountID {
			return fmt.Errorf("%w: profile %q belongs to account %s, not %s", jam.ErrConflict, p.Key.Profile, acct, p.AccountID)
		}
		var created int64
		err = tx.QueryRowContext(ctx, peerUpsert, p.WorkspaceID, p.Key.Profile, p.Key.Scope,
			p.AgentID, p.Handle, p.Name, keySealed(p.KeySealed), p.ConnectionID, p.CreatedAt.UnixMicro()).Scan(&created)
		if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
			return fmt.Errorf("agent %s is another peer: %w", p.AgentID, jam.ErrAlreadyExists)
		}
		p.CreatedAt = fromMicros(created)
		return err
	})
	if err != nil {
		return store.Peer{}, fmt.Errorf("peer put %s: %w", p.Key, err)
	}
	return p, nil
}

// PeerGet implements [store.Messaging].
func (s *Store) PeerGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.Peer, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return store.Peer{}, fmt.Errorf("peer get %s: %w", key, err)
	}
	p, err := scanPeer(s.reader.QueryRowContext(ctx, peerSelect, ws, key.Profile, key.Scope))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Peer{}, fmt.Errorf("peer get %s: %w", key, err)
	}
	return p, nil
}

// PeerList implements [store.Messaging].
func (s *Store) PeerList(ctx context.Context, ws jam.WorkspaceID) ([]store.Peer, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("peer list: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanPeer, peerSelectAll, ws)
	if err != nil {
		return nil, fmt.Errorf("peer list: %w", err)
	}
	return out, nil
}

// peerExists reports whether the peer exists, inside tx so the answer
// holds until tx ends.
func peerExists(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, key jam.PeerKey) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, peerCount, ws, key.Profile, key.Scope).Scan(&n)
	return n > 0, err
}

func scanPeer(row scanner) (store.Peer, error) {
	var p store.Peer
	var created int64
	err := row.Scan(&p.WorkspaceID, &p.Key.Profile, &p.Key.Scope, &p.AccountID, &p.AgentID, &p.Handle, &p.Name, &p.KeySealed, &p.ConnectionID, &created)
	if err != nil {
		return store.Peer{}, err
	}
	if len(p.KeySealed) == 0 {
		p.KeySealed = nil
	}
	p.CreatedAt = fromMicros(created)
	return p, nil
}
