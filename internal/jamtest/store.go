package jamtest

import (
	"os"
	"testing"

	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// EnvStore selects the store of the daemons tests start: unset or
// "sqlite" for the SQLite file in the data directory, "postgres" for a
// fresh database per daemon on the server of pgtest.EnvURL (a test is
// skipped, or fails with pgtest.EnvRequire=1, when that is unset). CI runs
// the daemon's end-to-end suites once per value.
const EnvStore = "JAM_TEST_STORE"

// TestStore returns the store value for one daemon of tb, as EnvStore
// selects: "sqlite", or the URL of a database created for tb and dropped
// when it ends. Any other value of EnvStore fails tb.
func TestStore(tb testing.TB) string {
	tb.Helper()
	switch v := os.Getenv(EnvStore); v {
	case "", config.DefaultStore:
		return config.DefaultStore
	case "postgres":
		return pgtest.URL(tb)
	default:
		tb.Fatalf("%s=%q: want sqlite or postgres", EnvStore, v)
		return ""
	}
}
