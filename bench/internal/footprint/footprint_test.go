package footprint

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain doubles as the child daemon when Run re-executes the test
// binary.
func TestMain(m *testing.M) {
	if dir := os.Getenv(ChildEnv); dir != "" {
		if err := Child(context.Background(), dir, os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "fp") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	empty, err := Run(t.Context(), Options{Dir: dir})
	require.NoError(t, err)
	loaded, err := Run(t.Context(), Options{Agents: 2, Rooms: 4, Idle: 100 * time.Millisecond, Dir: dir})
	require.NoError(t, err)
	require.Positive(t, empty.Figures.RSSKiB)
	require.Positive(t, loaded.Figures.RSSKiBAfterGC)
	require.Greater(t, loaded.Figures.Goroutines, empty.Figures.Goroutines, "each agent has a socket")
}
