package postgres

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// migrated is a database with this build's schema, made on first use
// (migratedURL) and dropped when the test process ends; a run that needs
// none (a fuzz worker, a run without a server) makes none.
var migrated struct {
	once sync.Once
	name string
	drop func() error
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if migrated.drop != nil {
		if err := migrated.drop(); err != nil {
			fmt.Fprintln(os.Stderr, "drop migrated template:", err)
		}
	}
	os.Exit(code)
}

// migratedURL is a fresh database with this build's schema applied,
// copied from the migrated template.
func migratedURL(t *testing.T) string {
	t.Helper()
	pgtest.ServerURL(t) // skips (or fails) without a server
	migrated.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		migrated.name, migrated.drop, migrated.err = pgtest.Template(ctx, func(u string) error {
			s, err := Open(ctx, Config{URL: u})
			if err != nil {
				return err
			}
			return s.Close()
		})
	})
	if migrated.err != nil {
		t.Fatalf("migrated template: %v", migrated.err)
	}
	return pgtest.FromTemplate(t, migrated.name)
}
