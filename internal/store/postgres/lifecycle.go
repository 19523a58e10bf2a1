package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of removing a peer or an account. A peer's sessions, turns, leases
// and worktrees are history and stay; its settled tombstones stay too,
// so a message settled before is not taken again if the same Band agent
// is added back.
const (
	removeSpoolUsage = `SELECT COUNT(*), COALESCE(SUM(length(sealed)), 0) FROM spool WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeSpool      = `DELETE FROM spool WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeQueue      = `DELETE FROM queue WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeBindings   = `DELETE FROM bindings WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeRetired    = `DELETE FROM retired_rooms WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeIntents    = `DELETE FROM reply_intents WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeLinks      = `DELETE FROM reply_links WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removeTemplate   = `DELETE FROM runtime_templates WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	removePeer       = `DELETE FROM peers WHERE workspace_id = $1 AND profile = $2 AND scope = $3`

	accountPeers       = `SELECT scope FROM peers WHERE workspace_id = $1 AND profile = $2 ORDER BY scope`
	removeAccount      = `DELETE FROM accounts WHERE workspace_id = $1 AND profile = $2`
	removeCacheState   = `DELETE FROM room_cache_state WHERE workspace_id = $1 AND account_id = $2`
	removeCacheItems   = `DELETE FROM room_cache_items WHERE workspace_id = $1 AND account_id = $2`
	removeSystemMsgs   = `DELETE FROM room_system_messages WHERE workspace_id = $1 AND account_id = $2`
	removeAttentionAll = `DELETE FROM attention_items WHERE workspace_id = $1 AND account_id = $2`
)

// PeerRemove implements [store.Peers] in one READ COMMITTED transaction
// that first locks the peer's row (see BindingPut), so no move or binding
// change of the peer interleaves with its removal.
func (s *Store) PeerRemove(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.PeerRemoved, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return store.PeerRemoved{}, fmt.Errorf("remove peer %s: %w", key, err)
	}
	var out store.PeerRemoved
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		out = store.PeerRemoved{}
		ok, err := lockPeer(ctx, tx, ws, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: no peer %s", jam.ErrNotFound, key)
		}
		args := []any{ws, key.Profile, key.Scope}
		if err := tx.QueryRow(ctx, removeSpoolUsage, args...).Scan(&out.Spooled, &out.SpooledBytes); err != nil {
			return err
		}
		for _, step := range []struct {
			q string
			n *int
		}{{removeSpool, nil}, {removeQueue, &out.Queued}, {removeBindings, &out.Bindings}, {removeRetired, nil}, {removeIntents, nil}, {removeLinks, nil},
			{removeTemplate, &out.Templates}, {removePeer, nil}} {
			c, err := rowsAffected(ctx, tx, step.q, args...)
			if err != nil {
				return err
			}
			if step.n != nil {
				*step.n = int(c)
			}
		}
		return nil
	})
	if err != nil {
		return store.PeerRemoved{}, fmt.Errorf("remove peer %s: %w", key, err)
	}
	return out, nil
}

// AccountRemove implements [store.Accounts] in one READ COMMITTED
// transaction. The account's row is locked FOR UPDATE first, which waits
// for a PeerPut that holds it shared; the peers are read after, so a
// peer committed meanwhile is seen and refuses the removal
// (jam.ErrConflict) instead of failing its foreign key.
func (s *Store) AccountRemove(ctx context.Context, ws jam.WorkspaceID, profile string) error {
	if err := store.ValidateAccountKey(ws, profile); err != nil {
		return fmt.Errorf("remove account %s: %w", profile, err)
	}
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		id, err := accountID(ctx, tx, accountLockID, ws, profile)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, accountPeers, ws, profile)
		if err != nil {
			return err
		}
		scopes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var sc string
			err := r.Scan(&sc)
			return profile + "/" + sc, err
		})
		if err != nil {
			return err
		}
		if len(scopes) > 0 {
			return fmt.Errorf("%w: agents use account %s: %v (remove them first with jam agent remove)", jam.ErrConflict, profile, scopes)
		}
		for _, q := range []string{removeCacheState, removeCacheItems, removeSystemMsgs, removeAttentionAll} {
			if _, err := tx.Exec(ctx, q, ws, id); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, removeAccount, ws, profile)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove account %s: %w", profile, err)
	}
	return nil
}
