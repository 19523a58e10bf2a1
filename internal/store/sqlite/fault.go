package sqlite

import "github.com/jamhq/jam/internal/sqlitedb"

// storageFault classifies a failed write: one the disk refused wraps
// jam.ErrStorageFull. See [sqlitedb.StorageFault].
func storageFault(err error) error { return sqlitedb.StorageFault(err) }
