package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Retention = (*Store)(nil)

// Retention SQL.
const (
	retentionSettledSQL = `DELETE FROM settled WHERE settled_at < $1`
	retentionIntentsSQL = `DELETE FROM reply_intents
WHERE updated_at < $1
  AND NOT EXISTS (
    SELECT 1 FROM queue q
    WHERE q.workspace_id = reply_intents.workspace_id
      AND q.profile = reply_intents.profile
      AND q.scope = reply_intents.scope
      AND q.message_id = reply_intents.message_id)`
)

// RetentionPrune implements [store.Retention] in one transaction.
func (s *Store) RetentionPrune(ctx context.Context, before time.Time) (store.RetentionPruned, error) {
	if before.IsZero() {
		return store.RetentionPruned{}, fmt.Errorf("retention prune: %w: zero time", jam.ErrInvalid)
	}
	var out store.RetentionPruned
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		n, err := rowsAffected(ctx, tx, retentionSettledSQL, micros(before))
		if err != nil {
			return err
		}
		out.Settled = int(n)
		if n, err = rowsAffected(ctx, tx, retentionIntentsSQL, micros(before)); err != nil {
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
