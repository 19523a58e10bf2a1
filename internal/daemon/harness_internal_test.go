package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// TestRuntimeConfig_harnessFromTheRegistry: the harness key is checked
// against the registered harnesses (acp by default), an unknown one is
// invalid and the error names the known ones; the permission policy is
// the harness-neutral one.
func TestRuntimeConfig_harnessFromTheRegistry(t *testing.T) {
	t.Parallel()
	c, err := runtimeConfig(&wire.AgentRuntime{Command: []string{"agent"}})
	require.NoError(t, err)
	require.Equal(t, "acp", c.Harness)
	require.Equal(t, "reject", c.Permission)
	_, err = runtimeConfig(&wire.AgentRuntime{Harness: "codex", Command: []string{"agent"}})
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, `harness "codex" (want acp)`)
	_, err = runtimeConfig(&wire.AgentRuntime{Command: []string{"agent"}, Permission: "maybe"})
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.Equal(t, []string{"acp"}, harnesses.Names())
}
