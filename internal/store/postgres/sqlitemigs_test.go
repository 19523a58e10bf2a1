package postgres

import (
	"io/fs"
	"os"
)

// sqliteMigrationsFS is the SQLite dialect's migrations directory.
func sqliteMigrationsFS() fs.FS { return os.DirFS("../sqlite/migrations") }
