package postgres

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store/storetest"
)

// opener is the suite's [storetest.Opener]: a fresh database per call,
// and a new Store (its own pool) on it per handle.
func opener(t *testing.T) func(t *testing.T) *Store {
	u := migratedURL(t)
	return func(t *testing.T) *Store {
		s, err := Open(t.Context(), Config{URL: u})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
}

// TestStoretest runs the conformance suite's entry points of the
// aggregates this dialect implements.
func TestStoretest(t *testing.T) {
	storetest.CoreCases(t, opener)
	storetest.Workspaces(t, opener)
	storetest.Settings(t, opener)
	storetest.DaemonRuns(t, opener)
	storetest.Accounts(t, opener)
	storetest.Peers(t, opener)
	storetest.Bindings(t, opener)
	storetest.Spool(t, opener)
	storetest.Queue(t, opener)
	storetest.RoomRetirement(t, opener)
	storetest.Replies(t, opener)
	storetest.Retention(t, opener)
	storetest.Quarantine(t, opener)
	storetest.Events(t, opener)
	storetest.RoomCache(t, opener)
}
