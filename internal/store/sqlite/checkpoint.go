package sqlite

import (
	"context"
	"fmt"
	"os"
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
	return s.checkpoint(ctx, s.walSize() > s.truncateBytes)
}

// walSize returns the size of the -wal file, 0 if there is none.
func (s *Store) walSize() int64 {
	fi, err := os.Stat(s.path + "-wal")
	if err != nil {
		// Missing means empty. Unreadable also counts as small: the
		// PASSIVE checkpoint that follows still runs.
		return 0
	}
	return fi.Size()
}

// checkpoint copies committed WAL frames into the database file. PASSIVE
// copies what it can without waiting for anyone. TRUNCATE waits (up to the
// busy timeout) for the writer and readers, copies everything and empties
// the -wal file; it reports an error if a reader still blocked it.
func (s *Store) checkpoint(ctx context.Context, truncate bool) error {
	mode := "PASSIVE"
	if truncate {
		mode = "TRUNCATE"
	}
	// The result row is (busy, wal frames, frames checkpointed).
	var busy, walFrames, done int
	err := s.ckpt.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &walFrames, &done)
	if err != nil {
		return fmt.Errorf("wal checkpoint %s: %w", mode, err)
	}
	if busy != 0 {
		return fmt.Errorf("wal checkpoint %s: blocked by another connection (%d of %d frames copied)", mode, done, walFrames)
	}
	return nil
}
