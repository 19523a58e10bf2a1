package endtoend

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/bench/internal/measure"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "e2e") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestNumber(t *testing.T) {
	t.Parallel()
	n, ok := number(text("owner/bench", 42))
	require.True(t, ok)
	require.Equal(t, 42, n)
	_, ok = number("no number")
	require.False(t, ok)
}

// TestRuns runs both rigs briefly: every message posted is delivered and
// settled, none lost.
func TestRuns(t *testing.T) {
	t.Parallel()
	o := Options{Rate: 50, Duration: 300 * time.Millisecond, Posters: 2, Rooms: 2}
	for name, run := range map[string]func(context.Context, Options) ([]Result, error){"jam": RunJam, "hub": RunHub} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := o
			o.Dir = shortDir(t)
			res, err := run(t.Context(), o)
			require.NoError(t, err)
			require.Len(t, res, 2)
			for _, r := range res {
				require.Zero(t, r.Lost, "%s: lost", r.Load)
				require.Positive(t, r.Settlement.Count, "%s", r.Load)
				require.Equal(t, r.Settlement.Count, r.Delivery.Count, "%s", r.Load)
				require.LessOrEqual(t, r.Delivery.P50, r.Settlement.P50, "%s", r.Load)
			}
			require.Equal(t, Fixed, res[0].Load)
			require.Equal(t, Saturation, res[1].Load)
		})
	}
}

// BenchmarkEndToEnd reports the throughput and p99 latencies of jam and of
// the hub alone, at a fixed load of 20 msgs/s and at saturation. Each
// iteration is a whole run of 3 s per load on a fresh daemon or hub, so run
// it with -benchtime 1x.
//
// Run: (cd bench && go test -run '^$' -bench BenchmarkEndToEnd -benchtime 1x ./internal/endtoend/)
func BenchmarkEndToEnd(b *testing.B) {
	for name, run := range map[string]func(context.Context, Options) ([]Result, error){"jam": RunJam, "hub": RunHub} {
		b.Run("impl="+name, func(b *testing.B) {
			for range b.N {
				res, err := run(context.Background(), Options{Rate: 20, Duration: 3 * time.Second, Dir: shortDir(b)})
				require.NoError(b, err)
				for _, r := range res {
					b.ReportMetric(r.Settlement.PerSec, fmt.Sprintf("%s-msgs/s", r.Load))
					b.ReportMetric(measure.Ms(r.Delivery.P99), fmt.Sprintf("%s-deliver-p99-ms", r.Load))
					b.ReportMetric(measure.Ms(r.Settlement.P99), fmt.Sprintf("%s-settle-p99-ms", r.Load))
				}
			}
		})
	}
}
