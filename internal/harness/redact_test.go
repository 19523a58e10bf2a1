package harness_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// TestRedactEnv hides the template's values in an agent's error text:
// longer values first, and not values too short to be credentials.
func TestRedactEnv(t *testing.T) {
	t.Parallel()
	base := errors.New(`initialize: key sk-abc123456 rejected; token sk-abc and DEBUG=1; exit status 1`)
	got := harness.RedactEnv(base, []string{"1", "sk-abc", "sk-abc123456"})
	require.Equal(t, `initialize: key [redacted] rejected; token [redacted] and DEBUG=1; exit status 1`, got.Error())
	require.ErrorIs(t, got, base, "the cause stays reachable")
	require.NoError(t, harness.RedactEnv(nil, []string{"secret"}))
	require.Same(t, base, harness.RedactEnv(base, nil))
}
