package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the settled table: one tombstone per message settled on Band.
// Spool appends consult it (spool.go) so a replayed message is never
// spooled or queued again.
const (
	settledInsert = `INSERT INTO settled (workspace_id, profile, scope, message_id, settled_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`
	settledCount = `SELECT COUNT(*) FROM settled WHERE workspace_id = ? AND profile = ? AND scope = ? AND message_id = ?`
)

// insertSettled records a tombstone; an existing one keeps its time.
func insertSettled(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, at time.Time) error {
	_, err := tx.ExecContext(ctx, settledInsert, ws, key.Profile, key.Scope, msg, at.UnixMicro())
	return err
}

// isSettled reports whether msg has a tombstone, inside tx.
func isSettled(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, settledCount, ws, key.Profile, key.Scope, msg).Scan(&n)
	return n > 0, err
}

// MessageSettled implements [store.Messaging].
func (s *Store) MessageSettled(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (bool, error) {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return false, fmt.Errorf("message settled %s: %w", msg, err)
	}
	var n int
	if err := s.reader.QueryRowContext(ctx, settledCount, ws, key.Profile, key.Scope, msg).Scan(&n); err != nil {
		return false, fmt.Errorf("message settled %s: %w", msg, err)
	}
	return n > 0, nil
}
