package spool

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// BenchmarkIngest measures durable ingest: P producers each push 1 KiB
// messages one at a time, waiting for each acknowledgement (fsynced)
// before the next, like the agent sockets feeding the spool. It reports
// acknowledged messages per second, the p50/p99 latency of one push,
// msgs/commit (the group-commit batch) and commit-ms (time per store
// commit), for this package over the real SQLite store (WAL,
// synchronous=FULL) in b.TempDir(), each message sealed (AES-256-GCM)
// before the push. It is here to profile the spool in place
// (-cpuprofile); the comparison with the seed's file-per-message spool and
// with NATS JetStream, measured the same way, is the ingest scenario of
// the bench module (bench/internal/ingest, BENCHMARKS.md).
//
// After each acknowledgement the producer releases the entry's budget, as
// the engine does once it moved the entry, so the spool never reaches its
// bound; the rows stay in the store, so the spool table and its indexes
// grow to tens of thousands of rows, more than a real spool holds.
//
// Run: go test -run '^$' -bench BenchmarkIngest -benchtime 3s ./internal/spool/
func BenchmarkIngest(b *testing.B) {
	for _, producers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			runIngest(b, producers, benchJam(b))
		})
	}
}

// runIngest runs b.N pushes over producers goroutines and reports the
// metrics. push returns the latency of the push alone.
func runIngest(b *testing.B, producers int, push func(producer int, payload []byte) (time.Duration, error)) {
	payload := make([]byte, 1<<10)
	_, _ = rand.Read(payload)
	var next atomic.Int64
	lat := make([][]time.Duration, producers)
	errs := make([]error, producers)
	var wg sync.WaitGroup

	b.ResetTimer()
	start := time.Now()
	for p := range producers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				d, err := push(p, payload)
				if err != nil {
					errs[p] = err
					return
				}
				lat[p] = append(lat[p], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for p, err := range errs {
		require.NoError(b, err, "producer %d", p)
	}

	all := slices.Concat(lat...)
	slices.Sort(all)
	ms := func(q float64) float64 {
		return float64(all[int(q*float64(len(all)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// benchJam returns a push into a started Spool over a fresh SQLite store.
func benchJam(b *testing.B) func(int, []byte) (time.Duration, error) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db")})
	require.NoError(b, err)
	counted := &commitCounter{Store: st}
	sp, err := New(Config{}, counted)
	require.NoError(b, err)
	require.NoError(b, sp.Start(ctx))
	b.Cleanup(func() {
		require.NoError(b, sp.Stop(ctx))
		require.NoError(b, st.Close())
		if n := counted.commits.Load(); n > 0 {
			b.ReportMetric(float64(counted.entries.Load())/float64(n), "msgs/commit")
			b.ReportMetric(float64(counted.busy.Load())/float64(n)/1e6, "commit-ms")
		}
	})
	box, err := secret.LoadOrCreate(filepath.Join(dir, "jam.key"))
	require.NoError(b, err)

	ws := jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil))
	peer := jam.PeerKey{Profile: "bench", Scope: "agent"}
	rooms := make([]jam.RoomID, 8)
	for i := range rooms {
		rooms[i] = newUUID[jam.RoomID]()
	}
	return func(producer int, payload []byte) (time.Duration, error) {
		msg := newUUID[jam.PlatformMessageID]()
		e := store.SpoolEntry{
			WorkspaceID: ws, Peer: peer, Room: rooms[producer%len(rooms)], MessageID: msg,
			Sealed: box.Seal(payload, []byte(msg)), ReceivedAt: time.Now(),
		}
		t0 := time.Now()
		_, appended, err := sp.Push(ctx, e)
		d := time.Since(t0)
		if err != nil {
			return d, err
		}
		if !appended {
			return d, fmt.Errorf("message %s reported as a duplicate", msg)
		}
		sp.Release(ws, peer, len(e.Sealed))
		return d, nil
	}
}

// commitCounter counts the store's commits, the entries they carried and
// the time spent in them.
type commitCounter struct {
	*sqlite.Store
	commits, entries atomic.Int64
	busy             atomic.Int64
}

func (c *commitCounter) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	c.commits.Add(1)
	c.entries.Add(int64(len(entries)))
	t0 := time.Now()
	defer func() { c.busy.Add(int64(time.Since(t0))) }()
	return c.Store.SpoolAppend(ctx, entries)
}
