package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of removing a peer or an account. A peer's sessions, turns, leases
// and worktrees are history and stay; its settled tombstones stay too,
// so a message settled before is not taken again if the same Band agent
// is added back.
const (
	removeSpoolUsage = `SELECT COUNT(*), COALESCE(SUM(length(sealed)), 0) FROM spool WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeSpool      = `DELETE FROM spool WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeQueue      = `DELETE FROM queue WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeBindings   = `DELETE FROM bindings WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeRetired    = `DELETE FROM retired_rooms WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeIntents    = `DELETE FROM reply_intents WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeLinks      = `DELETE FROM reply_links WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removeTemplate   = `DELETE FROM runtime_templates WHERE workspace_id = ? AND profile = ? AND scope = ?`
	removePeer       = `DELETE FROM peers WHERE workspace_id = ? AND profile = ? AND scope = ?`

	accountPeers       = `SELECT scope FROM peers WHERE workspace_id = ? AND profile = ? ORDER BY scope`
	removeAccount      = `DELETE FROM accounts WHERE workspace_id = ? AND profile = ?`
	removeCacheState   = `DELETE FROM room_cache_state WHERE workspace_id = ? AND account_id = ?`
	removeCacheItems   = `DELETE FROM room_cache_items WHERE workspace_id = ? AND account_id = ?`
	removeSystemMsgs   = `DELETE FROM room_system_messages WHERE workspace_id = ? AND account_id = ?`
	removeAttentionAll = `DELETE FROM attention_items WHERE workspace_id = ? AND account_id = ?`
)

// PeerRemove implements [store.Messaging].
func (s *Store) PeerRemove(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.PeerRemoved, error) {
	if err := store.ValidateScope(ws, key); err != nil {
		return store.PeerRemoved{}, fmt.Errorf("remove peer %s: %w", key, err)
	}
	var out store.PeerRemoved
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		ok, err := peerExists(ctx, tx, ws, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: no peer %s", jam.ErrNotFound, key)
		}
		args := []any{ws, key.Profile, key.Scope}
		if err := tx.QueryRowContext(ctx, removeSpoolUsage, args...).Scan(&out.Spooled, &out.SpooledBytes); err != nil {
			return err
		}
		count := func(q string, n *int) error {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			c, err := res.RowsAffected()
			if n != nil {
				*n = int(c)
			}
			return err
		}
		for _, step := range []struct {
			q string
			n *int
		}{{removeSpool, nil}, {removeQueue, &out.Queued}, {removeBindings, &out.Bindings}, {removeRetired, nil}, {removeIntents, nil}, {removeLinks, nil},
			{removeTemplate, &out.Templates}, {removePeer, nil}} {
			if err := count(step.q, step.n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.PeerRemoved{}, fmt.Errorf("remove peer %s: %w", key, err)
	}
	return out, nil
}

// AccountRemove implements [store.Messaging].
func (s *Store) AccountRemove(ctx context.Context, ws jam.WorkspaceID, profile string) error {
	if err := store.ValidateAccountKey(ws, profile); err != nil {
		return fmt.Errorf("remove account %s: %w", profile, err)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		id, err := accountID(ctx, tx, ws, profile)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, accountPeers, ws, profile)
		if err != nil {
			return err
		}
		var scopes []string
		for rows.Next() {
			var sc string
			if err := rows.Scan(&sc); err != nil {
				rows.Close()
				return err
			}
			scopes = append(scopes, profile+"/"+sc)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(scopes) > 0 {
			return fmt.Errorf("%w: agents use account %s: %v (remove them first with jam agent remove)", jam.ErrConflict, profile, scopes)
		}
		for _, q := range []string{removeCacheState, removeCacheItems, removeSystemMsgs, removeAttentionAll} {
			if _, err := tx.ExecContext(ctx, q, ws, id); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, removeAccount, ws, profile)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove account %s: %w", profile, err)
	}
	return nil
}
