package postgres

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// migrated is a database with this build's schema, made once per test
// process when a server is configured; testURL copies it.
var migrated string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv(pgtest.EnvURL) != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		name, drop, err := pgtest.Template(ctx, func(u string) error {
			s, err := Open(ctx, Config{URL: u})
			if err != nil {
				return err
			}
			return s.Close()
		})
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "migrated template:", err)
			return 1
		}
		migrated = name
		defer func() {
			if err := drop(); err != nil {
				fmt.Fprintln(os.Stderr, "drop migrated template:", err)
			}
		}()
	}
	return m.Run()
}

// migratedURL is a fresh database with this build's schema applied.
func migratedURL(t *testing.T) string {
	t.Helper()
	return pgtest.FromTemplate(t, migrated)
}
