package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Retention SQL.
const (
	retentionSettledSQL = `DELETE FROM settled WHERE settled_at < ?`
	retentionIntentsSQL = `DELETE FROM reply_intents
WHERE updated_at < ?
  AND NOT EXISTS (
    SELECT 1 FROM queue q
    WHERE q.workspace_id = reply_intents.workspace_id
      AND q.profile = reply_intents.profile
      AND q.scope = reply_intents.scope
      AND q.message_id = reply_intents.message_id)`
)

// RetentionPrune implements [store.Messaging].
func (s *Store) RetentionPrune(ctx context.Context, before time.Time) (store.RetentionPruned, error) {
	if before.IsZero() {
		return store.RetentionPruned{}, fmt.Errorf("retention prune: %w: zero time", jam.ErrInvalid)
	}
	var out store.RetentionPruned
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, retentionSettledSQL, before.UnixMicro())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		out.Settled = int(n)
		if res, err = tx.ExecContext(ctx, retentionIntentsSQL, before.UnixMicro()); err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		out.Intents = int(n)
		return nil
	})
	if err != nil {
		return store.RetentionPruned{}, fmt.Errorf("retention prune: %w", err)
	}
	return out, nil
}
