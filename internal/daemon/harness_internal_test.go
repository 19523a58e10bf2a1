package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// TestHarnesses_registered: owned agents can run the plain acp kind and
// the named ACP kinds and codex, and every registered harness is a kind of
// harness.Kinds, so its default command and install hint are known.
func TestHarnesses_registered(t *testing.T) {
	t.Parallel()
	names := harnesses.Names()
	require.Subset(t, names, []string{"acp", "codex", "copilot", "opencode"})
	for _, n := range names {
		_, ok := harness.KindOf(n)
		require.True(t, ok, "harness %s is not in harness.Kinds", n)
		h, err := harnesses.Get(n)
		require.NoError(t, err)
		require.Equal(t, n, h.Manifest().Harness)
	}
}
