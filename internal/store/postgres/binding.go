package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Bindings = (*Store)(nil)

// SQL of the bindings table, and of the queue statements that re-home
// rows when a binding changes.
const (
	bindingColumns = `id, workspace_id, profile, scope, room_id, alias, session_id, mode, created_at`
	bindingUpsert  = `INSERT INTO bindings (` + bindingColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
    profile = excluded.profile,
    scope = excluded.scope,
    room_id = excluded.room_id,
    alias = excluded.alias,
    session_id = excluded.session_id,
    mode = excluded.mode`
	bindingSelectByID     = `SELECT ` + bindingColumns + ` FROM bindings WHERE id = $1`
	bindingSelect         = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = $1 AND id = $2`
	bindingSelectForRoom  = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4`
	bindingSelectIDOfRoom = `SELECT id FROM bindings WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4`
	bindingSelectAll      = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = $1 ORDER BY profile, scope, alias`
	bindingSelectOfPeer   = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = $1 AND profile = $2 AND scope = $3 ORDER BY alias`
	bindingSelectPeerOf   = `SELECT profile, scope FROM bindings WHERE workspace_id = $1 AND id = $2`
	bindingDelete         = `DELETE FROM bindings WHERE workspace_id = $1 AND id = $2`
	// bindingAliasKey is the unique constraint of a peer's aliases.
	bindingAliasKey = "bindings_workspace_id_profile_scope_alias_key"

	// queueUnrouteBinding sends a binding's rows to the unrouted bucket.
	queueUnrouteBinding = `UPDATE queue SET binding_id = '' WHERE workspace_id = $1 AND binding_id = $2`
	// queueRehomeRoom gives every row of a (peer, room) to the binding that
	// now owns it: the previous owner's rows and the unrouted ones.
	queueRehomeRoom = `UPDATE queue SET binding_id = $1
WHERE workspace_id = $2 AND profile = $3 AND scope = $4 AND room_id = $5 AND binding_id <> $1`
)

// BindingPut implements [store.Bindings] in one READ COMMITTED
// transaction that first locks the peer's row FOR UPDATE (and, when an
// update in place moves the binding from another peer, that peer's row
// too). Every write that decides which binding a queue row belongs to
// takes that lock (BindingPut, BindingDelete, PeerRemove, RoomRetire
// FOR UPDATE; spool moves FOR NO KEY UPDATE, see spool.go), so two
// binds of one room run one after the other: the second reads the first's binding as the room's owner and steals it,
// instead of both reading "no owner". Under the lock, and each statement
// reading what committed before it, the transaction:
//
//  1. sends the binding's rows to the unrouted bucket if an update in place
//     moves it to another (peer, room) — its rows belong to the old room;
//  2. deletes the binding that owned (peer, room) before, if any (the
//     steal path);
//  3. writes the binding (CreatedAt is kept on an update);
//  4. moves every queue row of (peer, room) that is not on the binding —
//     the previous owner's and the unrouted ones — to it, and returns how
//     many moved.
//
// The peer must exist (jam.ErrNotFound). An id used by a binding of
// another workspace, or an alias another binding of the peer holds, is
// jam.ErrAlreadyExists.
func (s *Store) BindingPut(ctx context.Context, b store.Binding) (int, error) {
	b, err := b.Canonical()
	if err != nil {
		return 0, fmt.Errorf("binding put %s: %w", b.ID, err)
	}
	var moved int64
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		moved = 0
		ok, err := lockPeer(ctx, tx, b.WorkspaceID, b.Peer)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("peer %s: %w", b.Peer, jam.ErrNotFound)
		}
		old, err := scanBinding(tx.QueryRow(ctx, bindingSelectByID, b.ID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case old.WorkspaceID != b.WorkspaceID:
			return fmt.Errorf("id %s names a binding of another workspace: %w", b.ID, jam.ErrAlreadyExists)
		case old.Peer != b.Peer || old.Room != b.Room:
			if old.Peer != b.Peer {
				if _, err := lockPeer(ctx, tx, old.WorkspaceID, old.Peer); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, queueUnrouteBinding, b.WorkspaceID, b.ID); err != nil {
				return err
			}
		}
		var owner jam.BindingID
		err = tx.QueryRow(ctx, bindingSelectIDOfRoom, b.WorkspaceID, b.Peer.Profile, b.Peer.Scope, b.Room).Scan(&owner)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case owner != b.ID:
			if _, err := tx.Exec(ctx, bindingDelete, b.WorkspaceID, owner); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, bindingUpsert, b.ID, b.WorkspaceID, b.Peer.Profile, b.Peer.Scope,
			b.Room, b.Alias, b.SessionID, b.Mode, micros(b.CreatedAt))
		if constraintOf(err) == bindingAliasKey {
			return fmt.Errorf("alias %q is another binding of peer %s: %w", b.Alias, b.Peer, jam.ErrAlreadyExists)
		}
		if err != nil {
			return err
		}
		moved, err = rowsAffected(ctx, tx, queueRehomeRoom, b.ID, b.WorkspaceID, b.Peer.Profile, b.Peer.Scope, b.Room)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("binding put %s: %w", b.ID, err)
	}
	return int(moved), nil
}

// BindingGet implements [store.Bindings].
func (s *Store) BindingGet(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) (store.Binding, error) {
	if err := store.ValidateBindingKey(ws, id); err != nil {
		return store.Binding{}, fmt.Errorf("binding get %s: %w", id, err)
	}
	b, err := scanBinding(s.pool.QueryRow(ctx, bindingSelect, ws, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Binding{}, fmt.Errorf("binding get %s: %w", id, mapErr(err))
	}
	return b, nil
}

// BindingForRoom implements [store.Bindings].
func (s *Store) BindingForRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (store.Binding, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return store.Binding{}, fmt.Errorf("binding for room %s: %w", room, err)
	}
	room, err := parseUUID(room)
	if err != nil {
		return store.Binding{}, fmt.Errorf("binding for room %s: %w", room, err)
	}
	b, err := scanBinding(s.pool.QueryRow(ctx, bindingSelectForRoom, ws, key.Profile, key.Scope, room))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Binding{}, fmt.Errorf("binding for room %s: %w", room, mapErr(err))
	}
	return b, nil
}

// BindingList implements [store.Bindings]: by peer, then alias.
func (s *Store) BindingList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]store.Binding, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("binding list: %w", err)
	}
	var out []store.Binding
	var err error
	if key.IsZero() {
		out, err = queryAll(ctx, s.pool, scanBinding, bindingSelectAll, ws)
	} else {
		if err := key.Validate(); err != nil {
			return nil, fmt.Errorf("binding list: %w", err)
		}
		out, err = queryAll(ctx, s.pool, scanBinding, bindingSelectOfPeer, ws, key.Profile, key.Scope)
	}
	if err != nil {
		return nil, fmt.Errorf("binding list: %w", mapErr(err))
	}
	return out, nil
}

// BindingDelete implements [store.Bindings]: under the lock of the
// binding's peer (see BindingPut), the binding goes and its queue rows
// move to the unrouted bucket, in one READ COMMITTED transaction.
func (s *Store) BindingDelete(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) error {
	if err := store.ValidateBindingKey(ws, id); err != nil {
		return fmt.Errorf("binding delete %s: %w", id, err)
	}
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var key jam.PeerKey
		err := tx.QueryRow(ctx, bindingSelectPeerOf, ws, id).Scan(&key.Profile, &key.Scope)
		if errors.Is(err, pgx.ErrNoRows) {
			return jam.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := lockPeer(ctx, tx, ws, key); err != nil {
			return err
		}
		n, err := rowsAffected(ctx, tx, bindingDelete, ws, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return jam.ErrNotFound
		}
		_, err = tx.Exec(ctx, queueUnrouteBinding, ws, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("binding delete %s: %w", id, err)
	}
	return nil
}

func scanBinding(row scanner) (store.Binding, error) {
	var b store.Binding
	var created int64
	err := row.Scan(&b.ID, &b.WorkspaceID, &b.Peer.Profile, &b.Peer.Scope, &b.Room, &b.Alias, &b.SessionID, &b.Mode, &created)
	if err != nil {
		return store.Binding{}, err
	}
	b.CreatedAt = fromMicros(created)
	return b, nil
}
