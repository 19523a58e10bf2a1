package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// workspaceCases covers [store.Workspaces].
func workspaceCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *testBundle { t.Helper(); return newTestBundle(t, open) }

	t.Run("WorkspaceEnsure_idempotentByName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := ensure(t, b, "alpha", epoch)
		second, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{
			ID: newID(b), Name: "alpha", At: epoch.Add(time.Hour),
		})
		require.NoError(t, err)
		requireWorkspace(t, first, second)

		list, err := b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("WorkspaceEnsure_retry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		p := store.WorkspaceEnsureParams{ID: newID(b), Name: "alpha", At: epoch}
		first, err := b.st.WorkspaceEnsure(t.Context(), p)
		require.NoError(t, err)
		again, err := b.st.WorkspaceEnsure(t.Context(), p)
		require.NoError(t, err)
		requireWorkspace(t, first, again)
	})

	t.Run("WorkspaceEnsure_idOfAnotherName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := ensure(t, b, "alpha", epoch)
		_, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: w.ID, Name: "beta", At: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
	})

	t.Run("WorkspaceGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := ensure(t, b, "alpha", epoch)
		got, err := b.st.WorkspaceGet(t.Context(), w.ID)
		require.NoError(t, err)
		requireWorkspace(t, w, got)

		_, err = b.st.WorkspaceGet(t.Context(), newID(b))
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("WorkspaceList_oldestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		list, err := b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		require.Empty(t, list)

		// Created out of time order, so the IDs' minting order (c, a, b)
		// differs from the creation times' order (a, b, c).
		ensure(t, b, "c", epoch.Add(2*time.Second))
		ensure(t, b, "a", epoch)
		ensure(t, b, "b", epoch.Add(time.Second))
		list, err = b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		var names []string
		for _, w := range list {
			names = append(names, w.Name)
		}
		require.Equal(t, []string{"a", "b", "c"}, names)
	})
	t.Run("Workspace_timesUTCMicroseconds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := ensure(t, b, "alpha", epoch)
		requireTime(t, epoch, w.CreatedAt)
		got, err := b.st.WorkspaceGet(t.Context(), w.ID)
		require.NoError(t, err)
		requireTime(t, epoch, got.CreatedAt)
	})

	basicInvalid(t, setup, "Workspace_invalidParams", "ensure ", "get ")
}
