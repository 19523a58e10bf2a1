package postgres

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// openTwo opens two Stores on one fresh database, as two daemons would.
func openTwo(t *testing.T) (*Store, *Store) {
	t.Helper()
	a, u := openTest(t)
	b, err := Open(t.Context(), Config{URL: u})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return a, b
}

var at = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// TestDaemonRunStart_concurrentOnOneNode: runs started at once on one
// node through two handles form one chain: exactly one has no previous
// run and no two name the same one.
func TestDaemonRunStart_concurrentOnOneNode(t *testing.T) {
	a, b := openTwo(t)
	const n = 16
	prev := make([]*store.DaemonRun, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			<-start
			res, err := st.DaemonRunStart(t.Context(), store.DaemonRunStartParams{Node: "n1", PID: i + 1, Version: "v", At: at})
			prev[i], errs[i] = res.Previous, err
		})
	}
	close(start)
	wg.Wait()
	seen := map[int64]bool{}
	firsts := 0
	for i := range n {
		require.NoError(t, errs[i])
		if prev[i] == nil {
			firsts++
			continue
		}
		require.False(t, seen[prev[i].ID], "run %d is the previous run of two", prev[i].ID)
		seen[prev[i].ID] = true
	}
	require.Equal(t, 1, firsts, "runs without a previous one")
}

// TestWorkspaceEnsure_concurrentSameName: ensures of one name through two
// handles at once all return the one workspace that won.
func TestWorkspaceEnsure_concurrentSameName(t *testing.T) {
	a, b := openTwo(t)
	m := jam.NewMinter(nil, nil)
	const n = 8
	got := make([]store.Workspace, n)
	errs := make([]error, n)
	ids := make([]jam.WorkspaceID, n)
	for i := range ids {
		ids[i] = jam.New[jam.WorkspaceID](m)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			<-start
			got[i], errs[i] = st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: ids[i], Name: "alpha", At: at})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, got[0].ID, got[i].ID)
	}
	list, err := a.WorkspaceList(t.Context())
	require.NoError(t, err)
	require.Len(t, list, 1)
}
