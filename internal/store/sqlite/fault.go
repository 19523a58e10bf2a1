package sqlite

import (
	"errors"
	"fmt"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
)

// storageFault classifies a failed write: one the disk refused wraps
// jam.ErrStorageFull, so callers (and the control API's catalogue) can
// tell "there is no room or no write access" from a bug. SQLite reports a
// full disk (ENOSPC) as SQLITE_FULL, any other failed write — a file at
// its size limit (EFBIG), a vanished or read-only directory — as one of
// the SQLITE_IOERR_* codes, and a database it may not write as
// SQLITE_READONLY_* or SQLITE_CANTOPEN. In each case SQLite has rolled
// the transaction back, and the connection stays usable: the next write
// succeeds once there is room.
func storageFault(err error) error {
	var e *msqlite.Error
	if err == nil || errors.Is(err, jam.ErrStorageFull) || !errors.As(err, &e) {
		return err
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("%w: %w", jam.ErrStorageFull, err)
	}
	return err
}
