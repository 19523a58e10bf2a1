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

// SQL of the bindings table. The queue statements that re-home rows when
// a binding changes are in queue.go.
const (
	bindingColumns = `id, workspace_id, profile, scope, room_id, alias, session_id, mode, created_at`
	bindingUpsert  = `INSERT INTO bindings (` + bindingColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    profile = excluded.profile,
    scope = excluded.scope,
    room_id = excluded.room_id,
    alias = excluded.alias,
    session_id = excluded.session_id,
    mode = excluded.mode`
	bindingSelectByID     = `SELECT ` + bindingColumns + ` FROM bindings WHERE id = ?`
	bindingSelect         = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = ? AND id = ?`
	bindingSelectForRoom  = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ?`
	bindingSelectIDOfRoom = `SELECT id FROM bindings WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ?`
	bindingSelectAll      = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = ? ORDER BY profile, scope, alias`
	bindingSelectOfPeer   = `SELECT ` + bindingColumns + ` FROM bindings WHERE workspace_id = ? AND profile = ? AND scope = ? ORDER BY alias`
	bindingDelete         = `DELETE FROM bindings WHERE workspace_id = ? AND id = ?`
)

// BindingPut implements [store.Messaging]. In one transaction it:
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
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		ok, err := peerExists(ctx, tx, b.WorkspaceID, b.Peer)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("peer %s: %w", b.Peer, jam.ErrNotFound)
		}
		old, err := scanBinding(tx.QueryRowContext(ctx, bindingSelectByID, b.ID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case old.WorkspaceID != b.WorkspaceID:
			return fmt.Errorf("id %s names a binding of another workspace: %w", b.ID, jam.ErrAlreadyExists)
		case old.Peer != b.Peer || old.Room != b.Room:
			if _, err := tx.ExecContext(ctx, queueUnrouteBinding, b.WorkspaceID, b.ID); err != nil {
				return err
			}
		}
		var owner jam.BindingID
		err = tx.QueryRowContext(ctx, bindingSelectIDOfRoom, b.WorkspaceID, b.Peer.Profile, b.Peer.Scope, b.Room).Scan(&owner)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case owner != b.ID:
			if _, err := tx.ExecContext(ctx, bindingDelete, b.WorkspaceID, owner); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, bindingUpsert, b.ID, b.WorkspaceID, b.Peer.Profile, b.Peer.Scope,
			b.Room, b.Alias, b.SessionID, b.Mode, b.CreatedAt.UnixMicro())
		if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
			return fmt.Errorf("alias %q is another binding of peer %s: %w", b.Alias, b.Peer, jam.ErrAlreadyExists)
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, queueRehomeRoom, b.ID, b.WorkspaceID, b.Peer.Profile, b.Peer.Scope, b.Room)
		if err != nil {
			return err
		}
		moved, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("binding put %s: %w", b.ID, err)
	}
	return int(moved), nil
}

// BindingGet implements [store.Messaging].
func (s *Store) BindingGet(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) (store.Binding, error) {
	if err := store.ValidateBindingKey(ws, id); err != nil {
		return store.Binding{}, fmt.Errorf("binding get %s: %w", id, err)
	}
	b, err := scanBinding(s.reader.QueryRowContext(ctx, bindingSelect, ws, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Binding{}, fmt.Errorf("binding get %s: %w", id, err)
	}
	return b, nil
}

// BindingForRoom implements [store.Messaging].
func (s *Store) BindingForRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (store.Binding, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return store.Binding{}, fmt.Errorf("binding for room %s: %w", room, err)
	}
	room, err := parseUUID(room)
	if err != nil {
		return store.Binding{}, fmt.Errorf("binding for room %s: %w", room, err)
	}
	b, err := scanBinding(s.reader.QueryRowContext(ctx, bindingSelectForRoom, ws, key.Profile, key.Scope, room))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Binding{}, fmt.Errorf("binding for room %s: %w", room, err)
	}
	return b, nil
}

// BindingList implements [store.Messaging]: by peer, then alias.
func (s *Store) BindingList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]store.Binding, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("binding list: %w", err)
	}
	var out []store.Binding
	var err error
	if key.IsZero() {
		out, err = queryAll(ctx, s.reader, scanBinding, bindingSelectAll, ws)
	} else {
		if err := key.Validate(); err != nil {
			return nil, fmt.Errorf("binding list: %w", err)
		}
		out, err = queryAll(ctx, s.reader, scanBinding, bindingSelectOfPeer, ws, key.Profile, key.Scope)
	}
	if err != nil {
		return nil, fmt.Errorf("binding list: %w", err)
	}
	return out, nil
}

// BindingDelete implements [store.Messaging]: the binding's queue rows move
// to the unrouted bucket in the same transaction.
func (s *Store) BindingDelete(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) error {
	if err := store.ValidateBindingKey(ws, id); err != nil {
		return fmt.Errorf("binding delete %s: %w", id, err)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, bindingDelete, ws, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return jam.ErrNotFound
		}
		_, err = tx.ExecContext(ctx, queueUnrouteBinding, ws, id)
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
