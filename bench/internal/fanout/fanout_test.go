package fanout

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	t.Parallel()
	res, err := Run(t.Context(), Options{Readers: 3, Stalled: true, Events: 3000, Dir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, 3000, res.Events)
	require.Positive(t, res.PerSec)
	require.InDelta(t, 3*res.PerSec, res.DeliveriesPerSec, 1e-6)
}

// BenchmarkFanout publishes b.N events to 1, 10 and 100 readers, and to
// 10 with a stalled eleventh.
//
// Run: (cd bench && go test -run '^$' -bench BenchmarkFanout ./internal/fanout/)
func BenchmarkFanout(b *testing.B) {
	for _, tc := range []Options{{Readers: 1}, {Readers: 10}, {Readers: 100}, {Readers: 10, Stalled: true}} {
		b.Run(fmt.Sprintf("subs=%d/stalled=%t", tc.Readers, tc.Stalled), func(b *testing.B) {
			tc.Events, tc.Dir = b.N, b.TempDir()
			res, err := Run(context.Background(), tc)
			require.NoError(b, err)
			b.ReportMetric(res.PerSec, "events/s")
			b.ReportMetric(res.DeliveriesPerSec, "deliveries/s")
			b.ReportMetric(float64(res.Resyncs), "resyncs")
		})
	}
}
