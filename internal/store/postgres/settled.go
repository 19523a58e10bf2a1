package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the settled table: one tombstone per message settled on Band.
// Spool appends consult it (spool.go) so a replayed message is never
// spooled or queued again.
const (
	settledInsert = `INSERT INTO settled (workspace_id, profile, scope, message_id, settled_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING`
	settledCount = `SELECT COUNT(*) FROM settled WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND message_id = $4`
)

// insertSettled records a tombstone; an existing one keeps its time.
func insertSettled(ctx context.Context, q querier, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, at time.Time) error {
	_, err := q.Exec(ctx, settledInsert, ws, key.Profile, key.Scope, msg, micros(at))
	return err
}

// isSettled reports whether msg has a tombstone.
func isSettled(ctx context.Context, q querier, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (bool, error) {
	var n int
	err := q.QueryRow(ctx, settledCount, ws, key.Profile, key.Scope, msg).Scan(&n)
	return n > 0, err
}

// MessageSettled implements [store.Queue].
func (s *Store) MessageSettled(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (bool, error) {
	msg, err := store.ValidateMessageKey(ws, key, msg)
	if err != nil {
		return false, fmt.Errorf("message settled %s: %w", msg, err)
	}
	ok, err := isSettled(ctx, s.pool, ws, key, msg)
	if err != nil {
		return false, fmt.Errorf("message settled %s: %w", msg, mapErr(err))
	}
	return ok, nil
}
