package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// leaseCases covers [store.Leases].
func leaseCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Lease_generationsPerHolder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		a1, other := lease(t, b, "holder-a"), lease(t, b, "holder-b")
		a2 := lease(t, b, "holder-a")
		require.Equal(t, []int64{1, 1, 2}, []int64{a1.Generation, other.Generation, a2.Generation})
		require.ErrorIs(t, b.st.LeaseEnd(ctx, b.ws, a1.ID, "x", epoch), jam.ErrConflict, "replaced already")
		require.NoError(t, b.st.LeaseEnd(ctx, b.ws, a2.ID, jam.ReasonProcessExited, epoch))
		_, err := b.st.LeaseLive(ctx, b.ws, "holder-a")
		require.ErrorIs(t, err, jam.ErrNotFound)
		a3 := lease(t, b, "holder-a")
		require.Equal(t, int64(3), a3.Generation, "generations never go back")
		require.ErrorIs(t, b.st.LeaseEnd(ctx, b.ws, jam.New[jam.LeaseID](b.minter), "x", epoch), jam.ErrNotFound)
	})
}
