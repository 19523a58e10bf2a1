package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// worktreeCases covers [store.Worktrees].
func worktreeCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Worktree_ownedBySession", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		s := session(t, b, tm, newUUID[jam.RoomID]())
		w := store.Worktree{ID: jam.New[jam.WorktreeID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Repo: "/src/repo", Path: "/data/wt/1", Branch: "jam/s1", State: store.WorktreeActive, CreatedAt: epoch}
		got, err := b.st.WorktreePut(ctx, w)
		require.NoError(t, err)
		require.Equal(t, w.Path, got.Path)
		w.Path, w.UpdatedAt = "/data/wt/moved", epoch.Add(time.Hour)
		got, err = b.st.WorktreePut(ctx, w)
		require.NoError(t, err)
		require.Equal(t, "/data/wt/moved", got.Path, "owned by id; the path is only where it is now")
		_, err = b.st.WorktreePut(ctx, store.Worktree{ID: jam.New[jam.WorktreeID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Path: "/x", State: store.WorktreeActive, CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		w.State = "lost"
		_, err = b.st.WorktreePut(ctx, w)
		require.ErrorIs(t, err, jam.ErrInvalid)
	})

	t.Run("Worktree_stateMovesAndList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		var ids []jam.WorktreeID
		for i := range 2 {
			s := session(t, b, tm, newUUID[jam.RoomID]())
			w := store.Worktree{ID: jam.New[jam.WorktreeID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Repo: "/src/repo", Path: fmt.Sprintf("/data/wt/%d", i),
				Branch: fmt.Sprintf("jam/s%d", i), State: store.WorktreeActive, CreatedAt: epoch.Add(time.Duration(i) * time.Second)}
			_, err := b.st.WorktreePut(ctx, w)
			require.NoError(t, err)
			ids = append(ids, w.ID)
		}
		list, err := b.st.WorktreeList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, ids, []jam.WorktreeID{list[0].ID, list[1].ID}, "oldest first")
		other, err := b.st.WorktreeList(ctx, jam.New[jam.WorkspaceID](b.minter))
		require.NoError(t, err)
		require.Empty(t, other, "another workspace sees none")

		at := epoch.Add(time.Hour)
		got, err := b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: ids[0], From: store.WorktreeActive, To: store.WorktreeArchived, At: at})
		require.NoError(t, err)
		require.Equal(t, store.WorktreeArchived, got.State)
		require.Equal(t, at.UnixMicro(), got.UpdatedAt.UnixMicro())
		require.Equal(t, "jam/s0", got.Branch, "the branch is kept")
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: ids[0], From: store.WorktreeActive, To: store.WorktreeRemoved, At: at})
		require.ErrorIs(t, err, jam.ErrConflict, "moves are conditional on the state")
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: ids[0], From: store.WorktreeArchived, To: "lost", At: at})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: jam.New[jam.WorkspaceID](b.minter), ID: ids[0], From: store.WorktreeArchived, To: store.WorktreeActive, At: at})
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's worktree is not found")
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: jam.New[jam.WorktreeID](b.minter), From: store.WorktreeActive, To: store.WorktreeArchived, At: at})
		require.ErrorIs(t, err, jam.ErrNotFound)
		list, err = b.st.WorktreeList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []string{store.WorktreeArchived, store.WorktreeActive}, []string{list[0].State, list[1].State})
	})
}
