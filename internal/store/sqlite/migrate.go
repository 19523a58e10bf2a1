package sqlite

import (
	"embed"

	"github.com/jamhq/jam/internal/sqlitedb"
	"github.com/jamhq/jam/internal/store"
)

// migrationFS holds this dialect's migrations, numbered like every other
// dialect's.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations converts migs for [sqlitedb.Open], which applies them.
func migrations(migs []store.Migration) []sqlitedb.Migration {
	out := make([]sqlitedb.Migration, len(migs))
	for i, m := range migs {
		out[i] = sqlitedb.Migration(m)
	}
	return out
}
