package harness_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// TestKinds: every kind but acp and demo has a default command (its CLI, on PATH)
// and says how to install it; acp has none; demo is jamd's own
// executable; names are unique.
func TestKinds(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range harness.Kinds {
		require.False(t, seen[k.Name], "kind %s listed twice", k.Name)
		seen[k.Name] = true
		if k.Name == "acp" {
			require.Nil(t, k.Command)
			require.Nil(t, harness.DefaultCommand(k.Name))
			continue
		}
		if k.Name == "demo" {
			require.Nil(t, k.Command, "demo runs jamd's own executable")
			require.Equal(t, []string{"/usr/bin/jamd", "demo-agent"}, harness.BuiltinCommand(k.Name, "/usr/bin/jamd"))
			continue
		}
		require.Nil(t, harness.BuiltinCommand(k.Name, "/usr/bin/jamd"))
		require.Equal(t, []string{k.Name}, k.Command, "the CLI of %s", k.Name)
		require.Contains(t, k.Install, "npm install -g ")
		require.NotEmpty(t, k.CLI)
	}
	require.Equal(t, []string{"codex"}, harness.DefaultCommand("codex"))
	c := harness.DefaultCommand("codex")
	c[0] = "changed"
	require.Equal(t, []string{"codex"}, harness.DefaultCommand("codex"), "a copy")
	require.Nil(t, harness.DefaultCommand("nope"))
	_, ok := harness.KindOf("nope")
	require.False(t, ok)
}
