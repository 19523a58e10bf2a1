package postgres

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store/storetest"
)

// sealedOpener is a [storetest.Opener] whose handles seal content with
// one daemon key, as jamd opens the store: a fresh database per call,
// a new Store (its own pool) on it per handle.
func sealedOpener(t *testing.T) func(t *testing.T) *Store {
	u := migratedURL(t)
	box, err := secret.LoadOrCreate(filepath.Join(t.TempDir(), "daemon.key"))
	require.NoError(t, err)
	return func(t *testing.T) *Store {
		s, err := Open(t.Context(), Config{URL: u, Sealer: box})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
}

// TestStoretest_runtime runs the conformance suite's entry points of the
// runtime aggregates, with sealed content columns.
func TestStoretest_runtime(t *testing.T) {
	storetest.Templates(t, sealedOpener)
	storetest.Sessions(t, sealedOpener)
	storetest.Worktrees(t, sealedOpener)
	storetest.Leases(t, sealedOpener)
	storetest.Turns(t, sealedOpener)
	storetest.SessionMessages(t, sealedOpener)
	storetest.TurnOutputs(t, sealedOpener)
	storetest.Executions(t, sealedOpener)
	storetest.RuntimeRetention(t, sealedOpener)
	storetest.Results(t, sealedOpener)
	storetest.Jobs(t, sealedOpener)
	storetest.Connections(t, sealedOpener)
	storetest.Delegations(t, sealedOpener)
}
