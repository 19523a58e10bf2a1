package measure

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	lat := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(lat, 2*time.Second)
	require.Equal(t, 100, s.Count)
	require.InDelta(t, 50.0, s.PerSec, 1e-9)
	require.Equal(t, 50*time.Millisecond, s.P50)
	require.Equal(t, 99*time.Millisecond, s.P99)
	require.Equal(t, 100*time.Millisecond, s.Max)

	require.Equal(t, Stats{Elapsed: time.Second}, Summarize(nil, time.Second))
	require.Equal(t, time.Duration(7), Quantile([]time.Duration{7}, 0.99))
}

func TestRecorder(t *testing.T) {
	t.Parallel()
	var r Recorder
	r.Add(time.Millisecond)
	r.AddAll([]time.Duration{3 * time.Millisecond, 2 * time.Millisecond})
	require.Equal(t, 3, r.Count())
	s := r.Stats(time.Second)
	require.Equal(t, 2*time.Millisecond, s.P50)
	require.Equal(t, 3*time.Millisecond, s.Max)
}
