package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

// coreCases covers what every open store offers: Info and Check.
func coreCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *testBundle { t.Helper(); return newTestBundle(t, open) }

	t.Run("Info", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		info, err := b.st.Info(t.Context())
		require.NoError(t, err)
		require.NotEmpty(t, info.Driver)
		require.NotEmpty(t, info.Location)
		require.GreaterOrEqual(t, info.SchemaVersion, 1)
	})

	t.Run("Check", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.st.Check(t.Context()))
	})
}
