package sqlite

import (
	"context"
	"time"
)

// checkpointLoop checkpoints the WAL every interval until ctx ends.
// Failures are logged rather than returned: nothing waits on the loop, the
// WAL stays valid when a checkpoint fails, and the next tick retries.
func (s *Store) checkpointLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.checkpointTick(ctx); err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "wal checkpoint", "err", err)
		}
	}
}

// checkpointTick is one scheduled checkpoint: PASSIVE, or TRUNCATE once the
// WAL has outgrown the configured size.
func (s *Store) checkpointTick(ctx context.Context) error {
	return s.checkpoint(ctx, s.db.WALSize() > s.truncateBytes)
}

// checkpoint copies committed WAL frames into the database file; see
// [sqlitedb.DB.Checkpoint].
func (s *Store) checkpoint(ctx context.Context, truncate bool) error {
	return s.db.Checkpoint(ctx, truncate)
}
