package ingest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/bench/internal/measure"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFileSpool(t *testing.T) {
	t.Parallel()
	f, err := newFileSpool(t.TempDir(), "agent", 2, 1<<20)
	require.NoError(t, err)
	p1, err := f.push("peer", "room", []byte("one"))
	require.NoError(t, err)
	p2, err := f.push("peer", "room", []byte("two"))
	require.NoError(t, err)
	require.Equal(t, filepath.Dir(p1), filepath.Dir(p2), "one directory per (peer, room)")
	got, err := os.ReadFile(p2)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	fi, err := os.Stat(p1)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	entries, bytes, err := f.usage()
	require.NoError(t, err)
	require.Equal(t, 2, entries)
	require.Equal(t, int64(6), bytes)

	// At the bound, a push waits until a file is consumed.
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := f.push("peer", "other room", []byte("three"))
		done <- err
	})
	require.NoError(t, f.remove(p1))
	require.NoError(t, <-done)
	wg.Wait()
	entries, _, err = f.usage()
	require.NoError(t, err)
	require.Equal(t, 2, entries)
}

// TestTargets pushes a few messages through every target.
func TestTargets(t *testing.T) {
	t.Parallel()
	for _, name := range Targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg, err := Open(t.Context(), name, t.TempDir())
			require.NoError(t, err)
			defer func() { require.NoError(t, tg.Close()) }()
			res, err := Run(t.Context(), tg, Options{Producers: 4, Count: 40})
			require.NoError(t, err)
			require.Equal(t, 40, res.Count)
			require.Positive(t, res.PerSec)
			require.Positive(t, res.P50)
			require.GreaterOrEqual(t, res.P99, res.P50)
		})
	}
	t.Run("duration", func(t *testing.T) {
		t.Parallel()
		tg, err := Open(t.Context(), FileSpool, t.TempDir())
		require.NoError(t, err)
		res, err := Run(t.Context(), tg, Options{Producers: 2, Duration: 50 * time.Millisecond})
		require.NoError(t, err)
		require.Positive(t, res.Count)
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		_, err := Open(t.Context(), "nope", t.TempDir())
		require.ErrorContains(t, err, "unknown target")
	})
}

// BenchmarkIngest measures durable ingest (see the package doc) for each
// target and 1, 8 and 64 producers, reporting msgs/s and the p50/p99
// latency of one acknowledged push.
//
// Run: (cd bench && go test -run '^$' -bench BenchmarkIngest -benchtime 3s ./internal/ingest/)
func BenchmarkIngest(b *testing.B) {
	for _, name := range Targets {
		for _, producers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("impl=%s/producers=%d", name, producers), func(b *testing.B) {
				ctx := context.Background()
				tg, err := Open(ctx, name, b.TempDir())
				require.NoError(b, err)
				defer func() { require.NoError(b, tg.Close()) }()
				b.ResetTimer()
				res, err := Run(ctx, tg, Options{Producers: producers, Count: b.N})
				b.StopTimer()
				require.NoError(b, err)
				b.ReportMetric(res.PerSec, "msgs/s")
				b.ReportMetric(measure.Ms(res.P50), "p50-ms")
				b.ReportMetric(measure.Ms(res.P99), "p99-ms")
				for k, v := range res.Extra {
					b.ReportMetric(v, k)
				}
			})
		}
	}
}
