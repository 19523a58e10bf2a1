package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// queueRows queues n messages of one peer in one room of a fresh store.
func queueRows(t testing.TB, n int) (*Store, jam.WorkspaceID, jam.PeerKey, []jam.PlatformMessageID) {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "jam.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	ws, key, room := benchPeer(t, st)
	ids := make([]jam.PlatformMessageID, n)
	for i := 0; i < n; i += spoolInsertMax {
		var entries []store.SpoolEntry
		for j := i; j < min(i+spoolInsertMax, n); j++ {
			ids[j] = jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", j+1))
			entries = append(entries, store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room, MessageID: ids[j], Sealed: make([]byte, 256), ReceivedAt: time.Now()})
		}
		res, err := st.SpoolAppend(ctx, entries)
		require.NoError(t, err)
		rows := make([]store.QueueRow, len(entries))
		for j, e := range entries {
			rows[j] = store.QueueRow{Seq: res.Seqs[j], WorkspaceID: ws, Sealed: e.Sealed}
		}
		_, err = st.SpoolMoveBatch(ctx, rows)
		require.NoError(t, err)
	}
	return st, ws, key, ids
}

// TestQueueMark_concurrentMarksAllLand marks many rows from many
// goroutines at once, as the engine's lanes do: every mark is committed
// and reported, a mark of a missing row fails alone, and the batches it
// shared with others still commit.
func TestQueueMark_concurrentMarksAllLand(t *testing.T) {
	t.Parallel()
	st, ws, key, ids := queueRows(t, 200)
	ctx := t.Context()
	missing := jam.PlatformMessageID("0190a1b2-0000-4000-8000-999999999999")
	var wg sync.WaitGroup
	errs := make([]error, len(ids)+1)
	for i, id := range append(ids[:len(ids):len(ids)], missing) {
		wg.Go(func() {
			err := st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: id, State: store.QueueClaimed, At: time.Now()})
			if err == nil {
				err = st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: id, State: store.QueueDelivered, At: time.Now()})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs[:len(ids)] {
		require.NoError(t, err, "mark %d", i)
	}
	require.ErrorIs(t, errs[len(ids)], jam.ErrNotFound)
	for _, id := range ids {
		r, err := st.QueueGet(ctx, ws, key, id)
		require.NoError(t, err)
		require.Equal(t, store.QueueDelivered, r.State)
		require.Equal(t, 1, r.Attempts)
	}
	require.False(t, st.marks.leading, "the lead is given up once the queue is empty")
	require.Empty(t, st.marks.queue)
}

// TestQueueMark_batchFailsTogether: a transaction that fails fails every
// mark in it, and a cancelled caller is refused before it is queued.
func TestQueueMark_batchFailsTogether(t *testing.T) {
	t.Parallel()
	st, ws, key, ids := queueRows(t, 3)
	ctx := t.Context()
	reqs := []*markReq{
		{query: queueMarkClaimed, msg: ids[0], args: []any{store.QueueClaimed, time.Now().UnixMicro(), ws, key.Profile, key.Scope, ids[0]}},
		{query: "UPDATE no_such_table SET x = 1", msg: ids[1]},
	}
	for _, r := range reqs {
		r.done = make(chan struct{})
	}
	st.commitMarks(ctx, reqs)
	for _, r := range reqs {
		require.Error(t, r.err)
	}
	got, err := st.QueueGet(ctx, ws, key, ids[0])
	require.NoError(t, err)
	require.Equal(t, store.QueueQueued, got.State, "the failed batch's other mark was rolled back")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = st.QueueMark(cancelled, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: ids[2], State: store.QueueClaimed, At: time.Now()})
	require.ErrorIs(t, err, context.Canceled)
}

// BenchmarkQueueMark marks rows from 8 goroutines at once, as 8 engine
// lanes do: through QueueMark (marks committed together) and one
// transaction each (what QueueMark did before), side by side. Each commit
// is a durable fsync; the figure is marks/s.
func BenchmarkQueueMark(b *testing.B) {
	const lanes = 8
	for _, mode := range []string{"one-at-a-time", "grouped"} {
		b.Run(mode, func(b *testing.B) {
			st, ws, key, ids := queueRows(b, max(b.N, lanes))
			ctx := context.Background()
			next := make(chan jam.PlatformMessageID, len(ids))
			for _, id := range ids {
				next <- id
			}
			close(next)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range lanes {
				wg.Go(func() {
					for id := range next {
						var err error
						if mode == "grouped" {
							err = st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: id, State: store.QueueClaimed, At: time.Now()})
						} else {
							_, err = st.writer.ExecContext(ctx, queueMarkClaimed, store.QueueClaimed, time.Now().UnixMicro(), ws, key.Profile, key.Scope, id)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(len(ids))/time.Since(start).Seconds(), "marks/s")
		})
	}
}
