package sqlitedb

import (
	"context"
	"fmt"
	"os"
)

// Checkpoint copies committed WAL frames into the database file, on
// [DB.Checkpointer]. PASSIVE copies what it can without waiting for
// anyone. TRUNCATE waits (up to the busy timeout) for the writer and
// readers, copies everything and empties the -wal file; it reports an
// error if a reader still blocked it.
func (d *DB) Checkpoint(ctx context.Context, truncate bool) error {
	mode := "PASSIVE"
	if truncate {
		mode = "TRUNCATE"
	}
	if d.Checkpointer == nil {
		return fmt.Errorf("wal checkpoint %s: opened without ManualCheckpoint", mode)
	}
	// The result row is (busy, wal frames, frames checkpointed).
	var busy, walFrames, done int
	err := d.Checkpointer.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &walFrames, &done)
	if err != nil {
		return fmt.Errorf("wal checkpoint %s: %w", mode, err)
	}
	if busy != 0 {
		return fmt.Errorf("wal checkpoint %s: blocked by another connection (%d of %d frames copied)", mode, done, walFrames)
	}
	return nil
}

// WALSize returns the size of the -wal file, 0 if there is none.
func (d *DB) WALSize() int64 {
	fi, err := os.Stat(d.Path + "-wal")
	if err != nil {
		// Missing means empty. Unreadable also counts as small: a PASSIVE
		// checkpoint still runs.
		return 0
	}
	return fi.Size()
}
