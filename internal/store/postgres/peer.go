package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Peers = (*Store)(nil)

// SQL of the peers table. A peer's account id is not stored: it is the id
// of the account of the peer's profile, joined in on every read.
const (
	peerUpsert = `INSERT INTO peers (workspace_id, profile, scope, agent_id, handle, name, key_sealed, connection_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (workspace_id, profile, scope) DO UPDATE SET
    agent_id = excluded.agent_id,
    handle = excluded.handle,
    name = excluded.name,
    key_sealed = excluded.key_sealed,
    connection_id = excluded.connection_id
RETURNING created_at`
	peerSelectColumns = `SELECT p.workspace_id, p.profile, p.scope, a.id, p.agent_id, p.handle, p.name, p.key_sealed, p.connection_id, p.created_at
FROM peers p JOIN accounts a ON a.workspace_id = p.workspace_id AND a.profile = p.profile`
	peerSelect    = peerSelectColumns + ` WHERE p.workspace_id = $1 AND p.profile = $2 AND p.scope = $3`
	peerSelectAll = peerSelectColumns + ` WHERE p.workspace_id = $1 ORDER BY p.profile, p.scope`
	// peerLock locks the peer's row against every other writer: binding
	// changes and removal of the peer take it (see binding.go).
	peerLock = `SELECT 1 FROM peers WHERE workspace_id = $1 AND profile = $2 AND scope = $3 FOR UPDATE`
)

// PeerPut implements [store.Peers] in one READ COMMITTED transaction.
// The account of the peer's profile must exist (jam.ErrNotFound) and be
// p.AccountID (jam.ErrConflict); it is read with a share lock, so it
// cannot be replaced or removed before the peer commits. An agent id that
// belongs to another peer of the workspace is the unique constraint's
// refusal (jam.ErrAlreadyExists). Replacing a peer keeps its CreatedAt.
func (s *Store) PeerPut(ctx context.Context, p store.Peer) (store.Peer, error) {
	p, err := p.Canonical()
	if err != nil {
		return store.Peer{}, fmt.Errorf("peer put %s: %w", p.Key, err)
	}
	created := p.CreatedAt
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		acct, err := accountID(ctx, tx, accountShareID, p.WorkspaceID, p.Key.Profile)
		if err != nil {
			return err
		}
		if acct != p.AccountID {
			return fmt.Errorf("%w: profile %q belongs to account %s, not %s", jam.ErrConflict, p.Key.Profile, acct, p.AccountID)
		}
		var c int64
		err = tx.QueryRow(ctx, peerUpsert, p.WorkspaceID, p.Key.Profile, p.Key.Scope,
			p.AgentID, p.Handle, p.Name, keySealed(p.KeySealed), p.ConnectionID, micros(p.CreatedAt)).Scan(&c)
		if pgCode(err) == codeUniqueViolation {
			return fmt.Errorf("agent %s is another peer: %w", p.AgentID, jam.ErrAlreadyExists)
		}
		created = fromMicros(c)
		return err
	})
	if err != nil {
		return store.Peer{}, fmt.Errorf("peer put %s: %w", p.Key, err)
	}
	p.CreatedAt = created
	return p, nil
}

// PeerGet implements [store.Peers].
func (s *Store) PeerGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.Peer, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return store.Peer{}, fmt.Errorf("peer get %s: %w", key, err)
	}
	p, err := scanPeer(s.pool.QueryRow(ctx, peerSelect, ws, key.Profile, key.Scope))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Peer{}, fmt.Errorf("peer get %s: %w", key, mapErr(err))
	}
	return p, nil
}

// PeerList implements [store.Peers].
func (s *Store) PeerList(ctx context.Context, ws jam.WorkspaceID) ([]store.Peer, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("peer list: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanPeer, peerSelectAll, ws)
	if err != nil {
		return nil, fmt.Errorf("peer list: %w", mapErr(err))
	}
	return out, nil
}

// lockPeer locks the peer's row inside tx; false when there is no peer.
func lockPeer(ctx context.Context, tx pgx.Tx, ws jam.WorkspaceID, key jam.PeerKey) (bool, error) {
	var one int
	err := tx.QueryRow(ctx, peerLock, ws, key.Profile, key.Scope).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
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
