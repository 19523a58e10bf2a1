// Package measure records latencies and turns them into the figures the
// benchmarks report: a rate and the 50th and 99th percentiles.
package measure

import (
	"slices"
	"sync"
	"time"
)

// Recorder collects latencies from many goroutines.
type Recorder struct {
	mu  sync.Mutex
	lat []time.Duration // guarded by mu
}

// Add records one latency.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	r.lat = append(r.lat, d)
	r.mu.Unlock()
}

// AddAll records several latencies at once (one lock for a producer's
// whole run).
func (r *Recorder) AddAll(ds []time.Duration) {
	r.mu.Lock()
	r.lat = append(r.lat, ds...)
	r.mu.Unlock()
}

// Count returns how many latencies were recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lat)
}

// Stats summarises the recorded latencies over elapsed.
func (r *Recorder) Stats(elapsed time.Duration) Stats {
	r.mu.Lock()
	lat := slices.Clone(r.lat)
	r.mu.Unlock()
	return Summarize(lat, elapsed)
}

// Stats are the figures of one run.
type Stats struct {
	Count   int           `json:"count"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// PerSec is Count over Elapsed.
	PerSec float64       `json:"per_sec"`
	P50    time.Duration `json:"p50_ns"`
	P99    time.Duration `json:"p99_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Summarize computes Stats from lat (which it sorts) over elapsed.
func Summarize(lat []time.Duration, elapsed time.Duration) Stats {
	s := Stats{Count: len(lat), Elapsed: elapsed}
	if elapsed > 0 {
		s.PerSec = float64(len(lat)) / elapsed.Seconds()
	}
	if len(lat) == 0 {
		return s
	}
	slices.Sort(lat)
	s.P50, s.P99, s.Max = Quantile(lat, 0.50), Quantile(lat, 0.99), lat[len(lat)-1]
	return s
}

// Quantile returns the q-quantile (0..1) of sorted, by the nearest-rank
// method.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Ms expresses d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
