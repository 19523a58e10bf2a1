package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// templateCases covers [store.Templates].
func templateCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Template_desiredAndEffectiveGenerations", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		require.Equal(t, int64(1), tm.DesiredGeneration)
		require.Zero(t, tm.EffectiveGeneration)
		require.True(t, tm.Outstanding(), "nothing has run with the new template")
		require.Equal(t, demoConfig(), tm.Desired)

		_, err := b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: b.peer.Key, Desired: demoConfig(), CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "one template per peer")

		tm, err = b.st.TemplateApplied(ctx, b.ws, tm.ID, 1, epoch)
		require.NoError(t, err)
		require.False(t, tm.Outstanding())
		require.Empty(t, tm.PendingChange)
		require.Equal(t, demoConfig(), tm.Effective)

		// Two changes while nothing runs: both are pending, and applying
		// an older generation is refused.
		c := demoConfig()
		c.Model = "m1"
		_, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: c, Change: "model=m1", At: epoch})
		require.NoError(t, err)
		c.Permission = "reject"
		tm, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: c, Change: "permission=reject", At: epoch})
		require.NoError(t, err)
		require.Equal(t, int64(3), tm.DesiredGeneration)
		require.Equal(t, int64(1), tm.EffectiveGeneration)
		require.Equal(t, "model=m1; permission=reject", tm.PendingChange)
		require.Equal(t, "", tm.Effective.Model, "effective is what last ran")
		_, err = b.st.TemplateApplied(ctx, b.ws, tm.ID, 2, epoch)
		require.ErrorIs(t, err, jam.ErrConflict)
		got, err := b.st.TemplateForPeer(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.True(t, got.Outstanding(), "the pending change survives (a restart reads it back)")
		tm, err = b.st.TemplateApplied(ctx, b.ws, tm.ID, 3, epoch)
		require.NoError(t, err)
		require.Equal(t, c, tm.Effective)

		bad := demoConfig()
		bad.Placement = "everywhere"
		_, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: bad, Change: "x", At: epoch})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = b.st.TemplateGet(ctx, b.other, tm.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's template")
		list, err := b.st.TemplateList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 1)
	})
}
