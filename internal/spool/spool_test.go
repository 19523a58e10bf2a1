package spool

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// faultStore is the real SQLite store with a hook in front of SpoolAppend,
// which can hold a commit (to build a batch behind it) or fail it. It
// records the message ids of every SpoolAppend call.
type faultStore struct {
	*sqlite.Store
	// BeforeAppendFunc, if set, runs before each SpoolAppend with the call's
	// number (from 1); an error fails the call without writing.
	BeforeAppendFunc func(ctx context.Context, call int) error

	mu    sync.Mutex
	calls [][]jam.PlatformMessageID // guarded by mu
}

func (f *faultStore) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	ids := make([]jam.PlatformMessageID, len(entries))
	for i, e := range entries {
		ids[i] = e.MessageID
	}
	f.mu.Lock()
	f.calls = append(f.calls, ids)
	n := len(f.calls)
	f.mu.Unlock()
	if f.BeforeAppendFunc != nil {
		if err := f.BeforeAppendFunc(ctx, n); err != nil {
			return store.SpoolAppendResult{}, err
		}
	}
	return f.Store.SpoolAppend(ctx, entries)
}

func (f *faultStore) appendCalls() [][]jam.PlatformMessageID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]jam.PlatformMessageID(nil), f.calls...)
}

// gate holds SpoolAppend call number `call` until it is opened, and tells
// when that call arrived. It respects the call's context.
type gate struct {
	call    int
	entered chan struct{}
	open    chan struct{}
	err     error // returned by the held call once opened
}

func newGate(call int) *gate {
	return &gate{call: call, entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gate) before(ctx context.Context, call int) error {
	if call != g.call {
		return nil
	}
	close(g.entered)
	select {
	case <-g.open:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

type testBundle struct {
	fs   *faultStore
	sp   *Spool
	ws   jam.WorkspaceID
	peer jam.PeerKey
	room jam.RoomID
}

// setup returns a spool over a fresh store; configure runs before Start.
// The spool is stopped and the store closed when t ends.
func setup(t *testing.T, cfg Config, configure func(b *testBundle)) *testBundle {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	b := &testBundle{
		fs:   &faultStore{Store: st},
		ws:   jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)),
		peer: jam.PeerKey{Profile: "p", Scope: "a"},
		room: newUUID[jam.RoomID](),
	}
	b.sp, err = New(cfg, b.fs)
	require.NoError(t, err)
	if configure != nil {
		configure(b)
	}
	require.NoError(t, b.sp.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, b.sp.Stop(context.Background())) })
	return b
}

func newUUID[T jam.UUID]() T {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return T(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

func (b *testBundle) entry(peer jam.PeerKey, size int) store.SpoolEntry {
	return store.SpoolEntry{
		WorkspaceID: b.ws, Peer: peer, Room: b.room, MessageID: newUUID[jam.PlatformMessageID](),
		Sealed: make([]byte, size), ReceivedAt: epoch,
	}
}

type pushResult struct {
	seq      int64
	appended bool
	err      error
}

// pushAsync pushes e in a goroutine the test waits for, and returns the
// channel its result arrives on.
func pushAsync(t *testing.T, ctx context.Context, sp *Spool, e store.SpoolEntry) <-chan pushResult {
	t.Helper()
	ch := make(chan pushResult, 1)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wg.Go(func() {
		seq, appended, err := sp.Push(ctx, e)
		ch <- pushResult{seq, appended, err}
	})
	return ch
}

// signal returns a hook that sends on the returned channel each time it
// runs.
func signal() (func(), chan struct{}) {
	ch := make(chan struct{}, 1024)
	return func() { ch <- struct{}{} }, ch
}

func requireBlocked(t *testing.T, ch <-chan pushResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("push returned while its peer was full: %+v", r)
	default:
	}
}

func TestSpool_Push_concurrentProducers(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	ctx := t.Context()
	const producers, each = 32, 25
	peers := []jam.PeerKey{{Profile: "p", Scope: "a"}, {Profile: "p", Scope: "b"}, {Profile: "q", Scope: "a"}}
	rooms := []jam.RoomID{newUUID[jam.RoomID](), newUUID[jam.RoomID](), newUUID[jam.RoomID]()}

	type pushed struct {
		e   store.SpoolEntry
		seq int64
	}
	results := make([][]pushed, producers)
	errs := make([]error, producers)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				e := b.entry(peers[(p+i)%len(peers)], 100+i)
				e.Room = rooms[p%len(rooms)]
				seq, appended, err := b.sp.Push(ctx, e)
				if err == nil && !appended {
					err = errors.New("a new message was reported as a duplicate")
				}
				if err != nil {
					errs[p] = err
					return
				}
				results[p] = append(results[p], pushed{e, seq})
			}
		})
	}
	wg.Wait()
	for p, err := range errs {
		require.NoError(t, err, "producer %d", p)
	}

	// Every acknowledged push is in the store exactly once, under its seq,
	// and each producer's pushes keep their order within a lane.
	seqs := map[int64]jam.PlatformMessageID{}
	for _, rs := range results {
		for _, r := range rs {
			_, dup := seqs[r.seq]
			require.False(t, dup, "seq %d acknowledged twice", r.seq)
			seqs[r.seq] = r.e.MessageID
		}
	}
	require.Len(t, seqs, producers*each)
	var stored int
	for _, peer := range peers {
		for _, room := range rooms {
			lane, err := b.fs.SpoolNext(ctx, b.ws, peer, room, producers*each)
			require.NoError(t, err)
			for _, e := range lane {
				require.Equal(t, seqs[e.Seq], e.MessageID, "seq %d", e.Seq)
			}
			stored += len(lane)
		}
	}
	require.Equal(t, producers*each, stored)

	// The counted usage matches the store.
	usage, err := b.fs.SpoolUsage(ctx)
	require.NoError(t, err)
	for _, u := range usage {
		entries, bytes := b.sp.Usage(u.WorkspaceID, u.Peer)
		require.Equal(t, u.Entries, entries, "peer %s", u.Peer)
		require.Equal(t, u.Bytes, bytes, "peer %s", u.Peer)
	}
}

func TestSpool_Push_concurrentPushesShareACommit(t *testing.T) {
	t.Parallel()
	const waiting = 16
	g := newGate(1)
	sending, sent := signal()
	b := setup(t, Config{}, func(b *testBundle) {
		b.fs.BeforeAppendFunc = g.before
		b.sp.sendingHook = sending
	})
	ctx := t.Context()

	first := pushAsync(t, ctx, b.sp, b.entry(b.peer, 10))
	<-sent
	<-g.entered // the writer holds the first commit
	var rest []<-chan pushResult
	for range waiting {
		rest = append(rest, pushAsync(t, ctx, b.sp, b.entry(b.peer, 10)))
	}
	for range waiting {
		<-sent // every other push is handing its entry to the busy writer
	}
	close(g.open)

	for _, ch := range append(rest, first) {
		r := <-ch
		require.NoError(t, r.err)
		require.True(t, r.appended)
	}
	calls := b.fs.appendCalls()
	require.Len(t, calls[0], 1)
	require.Less(t, len(calls), 1+waiting, "the pushes queued behind a commit share the next one: %d calls", len(calls))
}

func TestSpool_Push_backpressure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		size int
	}{
		{"entry bound", Config{MaxEntriesPerPeer: 2}, 10},
		{"byte bound", Config{MaxBytesPerPeer: 100}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			waitingHook, waiting := signal()
			b := setup(t, tt.cfg, func(b *testBundle) { b.sp.waitingHook = waitingHook })
			ctx := t.Context()
			for range 2 {
				_, appended, err := b.sp.Push(ctx, b.entry(b.peer, tt.size))
				require.NoError(t, err)
				require.True(t, appended)
			}

			blocked := pushAsync(t, ctx, b.sp, b.entry(b.peer, tt.size))
			<-waiting // the third push waits for room

			// Other peers keep flowing (up to their own bound) while this
			// one is full.
			other := jam.PeerKey{Profile: "p", Scope: "other"}
			for range 2 {
				_, appended, err := b.sp.Push(ctx, b.entry(other, tt.size))
				require.NoError(t, err)
				require.True(t, appended)
			}
			requireBlocked(t, blocked)
			entries, bytes := b.sp.Usage(b.ws, b.peer)
			require.Equal(t, 2, entries)
			require.Equal(t, int64(2*tt.size), bytes)

			// Freeing one entry lets exactly the waiting push in.
			b.sp.Release(b.ws, b.peer, tt.size)
			r := <-blocked
			require.NoError(t, r.err)
			require.True(t, r.appended)
			entries, bytes = b.sp.Usage(b.ws, b.peer)
			require.Equal(t, 2, entries)
			require.Equal(t, int64(2*tt.size), bytes)
		})
	}
}

func TestSpool_Push_waitEndsWithContext(t *testing.T) {
	t.Parallel()
	waitingHook, waiting := signal()
	b := setup(t, Config{MaxEntriesPerPeer: 1}, func(b *testBundle) { b.sp.waitingHook = waitingHook })
	_, _, err := b.sp.Push(t.Context(), b.entry(b.peer, 10))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	blocked := pushAsync(t, ctx, b.sp, b.entry(b.peer, 10))
	<-waiting
	cancel()
	r := <-blocked
	require.ErrorIs(t, r.err, context.Canceled)
	entries, _ := b.sp.Usage(b.ws, b.peer)
	require.Equal(t, 1, entries, "a push that gave up holds no room")
}

func TestSpool_Push_oversizedEntryWhenEmpty(t *testing.T) {
	t.Parallel()
	waitingHook, waiting := signal()
	b := setup(t, Config{MaxBytesPerPeer: 10}, func(b *testBundle) { b.sp.waitingHook = waitingHook })
	ctx := t.Context()
	big := b.entry(b.peer, 25)
	_, appended, err := b.sp.Push(ctx, big)
	require.NoError(t, err)
	require.True(t, appended, "an empty peer admits an entry above the byte bound")

	next := pushAsync(t, ctx, b.sp, b.entry(b.peer, 1))
	<-waiting
	b.sp.Release(b.ws, b.peer, len(big.Sealed))
	r := <-next
	require.NoError(t, r.err)
	require.True(t, r.appended)
}

func TestSpool_Push_duplicates(t *testing.T) {
	t.Parallel()
	g := newGate(1)
	sending, sent := signal()
	b := setup(t, Config{}, func(b *testBundle) {
		b.fs.BeforeAppendFunc = g.before
		b.sp.sendingHook = sending
	})
	ctx := t.Context()

	// Two pushes of one message in one batch: one is new.
	hold := pushAsync(t, ctx, b.sp, b.entry(b.peer, 5))
	<-sent
	<-g.entered
	e := b.entry(b.peer, 7)
	one, two := pushAsync(t, ctx, b.sp, e), pushAsync(t, ctx, b.sp, e)
	<-sent
	<-sent
	close(g.open)
	require.NoError(t, (<-hold).err)
	r1, r2 := <-one, <-two
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)
	require.True(t, r1.appended != r2.appended, "exactly one of the two is new: %+v %+v", r1, r2)
	seq := max(r1.seq, r2.seq)

	// Pushing it again later, and after it left the spool, is a duplicate.
	_, appended, err := b.sp.Push(ctx, e)
	require.NoError(t, err)
	require.False(t, appended)
	entries, bytes := b.sp.Usage(b.ws, b.peer)
	require.Equal(t, 2, entries, "duplicates return their room")
	require.Equal(t, int64(12), bytes)

	_, err = b.fs.SpoolMove(ctx, seq, store.QueueRow{WorkspaceID: b.ws, Sealed: []byte("x")})
	require.NoError(t, err)
	b.sp.Release(b.ws, b.peer, len(e.Sealed))
	_, appended, err = b.sp.Push(ctx, e)
	require.NoError(t, err)
	require.False(t, appended, "a queued message is a duplicate")
	entries, _ = b.sp.Usage(b.ws, b.peer)
	require.Equal(t, 1, entries)
}

func TestSpool_Push_failedCommitFailsItsBatchOnly(t *testing.T) {
	t.Parallel()
	g := newGate(1)
	sending, sent := signal()
	boom := errors.New("disk on fire")
	b := setup(t, Config{}, func(b *testBundle) {
		b.fs.BeforeAppendFunc = func(ctx context.Context, call int) error {
			if err := g.before(ctx, call); err != nil {
				return err
			}
			if call == 2 {
				return boom
			}
			return nil
		}
		b.sp.sendingHook = sending
	})
	ctx := t.Context()

	hold := pushAsync(t, ctx, b.sp, b.entry(b.peer, 10))
	<-sent
	<-g.entered
	const queued = 6
	pushes := map[jam.PlatformMessageID]<-chan pushResult{}
	for range queued {
		e := b.entry(b.peer, 10)
		pushes[e.MessageID] = pushAsync(t, ctx, b.sp, e)
	}
	for range queued {
		<-sent
	}
	close(g.open)
	require.NoError(t, (<-hold).err)
	got := map[jam.PlatformMessageID]pushResult{}
	for id, ch := range pushes {
		got[id] = <-ch
	}

	// Every push of the failed call failed; every other one is stored.
	calls := b.fs.appendCalls()
	require.GreaterOrEqual(t, len(calls), 2)
	failed := map[jam.PlatformMessageID]bool{}
	for _, id := range calls[1] {
		failed[id] = true
	}
	for id, r := range got {
		if failed[id] {
			require.ErrorIs(t, r.err, boom)
			require.False(t, r.appended)
			continue
		}
		require.NoError(t, r.err)
		require.True(t, r.appended)
	}
	usage, err := b.fs.SpoolUsage(ctx)
	require.NoError(t, err)
	require.Len(t, usage, 1)
	require.Equal(t, 1+queued-len(failed), usage[0].Entries)
	entries, _ := b.sp.Usage(b.ws, b.peer)
	require.Equal(t, usage[0].Entries, entries, "failed pushes return their room")

	// The next batch proceeds, and a failed message can be pushed again.
	for id := range failed {
		e := b.entry(b.peer, 10)
		e.MessageID = id
		_, appended, err := b.sp.Push(ctx, e)
		require.NoError(t, err)
		require.True(t, appended)
	}
}

func TestSpool_Start_loadsUsage(t *testing.T) {
	t.Parallel()
	waitingHook, waiting := signal()
	var prefilled []store.SpoolEntry
	b := setup(t, Config{MaxEntriesPerPeer: 3}, func(b *testBundle) {
		prefilled = []store.SpoolEntry{b.entry(b.peer, 10), b.entry(b.peer, 20), b.entry(jam.PeerKey{Profile: "p", Scope: "b"}, 5)}
		_, err := b.fs.Store.SpoolAppend(t.Context(), prefilled)
		require.NoError(t, err)
		b.sp.waitingHook = waitingHook
	})
	entries, bytes := b.sp.Usage(b.ws, b.peer)
	require.Equal(t, 2, entries)
	require.Equal(t, int64(30), bytes)

	_, _, err := b.sp.Push(t.Context(), b.entry(b.peer, 1))
	require.NoError(t, err)
	blocked := pushAsync(t, t.Context(), b.sp, b.entry(b.peer, 1))
	<-waiting // the loaded entries count against the bound
	b.sp.Release(b.ws, b.peer, len(prefilled[0].Sealed))
	require.NoError(t, (<-blocked).err)
}

func TestSpool_Push_invalid(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	tests := []struct {
		name   string
		mutate func(e *store.SpoolEntry)
	}{
		{"workspace", func(e *store.SpoolEntry) { e.WorkspaceID = "ws_x" }},
		{"zero peer", func(e *store.SpoolEntry) { e.Peer = jam.PeerKey{} }},
		{"peer", func(e *store.SpoolEntry) { e.Peer.Scope = "a/b" }},
		{"room", func(e *store.SpoolEntry) { e.Room = "" }},
		{"message", func(e *store.SpoolEntry) { e.MessageID = "m" }},
		{"empty sealed", func(e *store.SpoolEntry) { e.Sealed = nil }},
		{"zero time", func(e *store.SpoolEntry) { e.ReceivedAt = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := b.entry(b.peer, 10)
			tt.mutate(&e)
			_, _, err := b.sp.Push(t.Context(), e)
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
	t.Cleanup(func() {
		require.Empty(t, b.fs.appendCalls(), "an invalid entry never reaches a batch")
	})
}

func TestSpool_lifecycle(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *faultStore {
		t.Helper()
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return &faultStore{Store: st}
	}
	entry := store.SpoolEntry{
		WorkspaceID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Peer: jam.PeerKey{Profile: "p", Scope: "a"},
		Room: newUUID[jam.RoomID](), MessageID: newUUID[jam.PlatformMessageID](), Sealed: []byte("x"), ReceivedAt: epoch,
	}

	t.Run("stop before start", func(t *testing.T) {
		t.Parallel()
		sp, err := New(Config{}, open(t))
		require.NoError(t, err)
		require.NoError(t, sp.Stop(t.Context()))
		require.NoError(t, sp.Stop(t.Context()))
		require.ErrorIs(t, sp.Start(t.Context()), jam.ErrStopping)
		_, _, err = sp.Push(t.Context(), entry)
		require.ErrorIs(t, err, jam.ErrStopping)
	})

	t.Run("push before start", func(t *testing.T) {
		t.Parallel()
		sp, err := New(Config{}, open(t))
		require.NoError(t, err)
		_, _, err = sp.Push(t.Context(), entry)
		require.ErrorIs(t, err, jam.ErrUnavailable)
	})

	t.Run("start twice", func(t *testing.T) {
		t.Parallel()
		sp, err := New(Config{}, open(t))
		require.NoError(t, err)
		require.NoError(t, sp.Start(t.Context()))
		require.ErrorIs(t, sp.Start(t.Context()), jam.ErrConflict)
		require.NoError(t, sp.Stop(t.Context()))
		require.NoError(t, sp.Stop(t.Context()), "stop twice")
		_, _, err = sp.Push(t.Context(), entry)
		require.ErrorIs(t, err, jam.ErrStopping)
	})

	t.Run("start fails on the store", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		require.NoError(t, st.Close())
		sp, err := New(Config{}, st)
		require.NoError(t, err)
		require.Error(t, sp.Start(t.Context()))
	})

	t.Run("start outlives its context", func(t *testing.T) {
		t.Parallel()
		sp, err := New(Config{}, open(t))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		require.NoError(t, sp.Start(ctx))
		cancel()
		_, appended, err := sp.Push(t.Context(), entry)
		require.NoError(t, err)
		require.True(t, appended)
		require.NoError(t, sp.Stop(t.Context()))
	})
}

func TestSpool_Stop_failsPushesInFlight(t *testing.T) {
	t.Parallel()
	g := newGate(1)
	sending, sent := signal()
	waitingHook, waiting := signal()
	b := setup(t, Config{MaxEntriesPerPeer: 2}, func(b *testBundle) {
		b.fs.BeforeAppendFunc = g.before
		b.sp.sendingHook = sending
		b.sp.waitingHook = waitingHook
	})
	ctx := t.Context()

	committing := pushAsync(t, ctx, b.sp, b.entry(b.peer, 1))
	<-sent
	<-g.entered
	handing := pushAsync(t, ctx, b.sp, b.entry(b.peer, 1)) // blocked on the busy writer
	<-sent
	waitingForRoom := pushAsync(t, ctx, b.sp, b.entry(b.peer, 1)) // the peer is full
	<-waiting

	stopped := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { stopped <- b.sp.Stop(context.Background()) })
	for _, ch := range []<-chan pushResult{handing, waitingForRoom} {
		r := <-ch
		require.ErrorIs(t, r.err, jam.ErrStopping)
	}
	select {
	case err := <-stopped:
		t.Fatalf("stop returned before the commit in flight: %v", err)
	default:
	}

	// The batch being committed finishes and is acknowledged.
	close(g.open)
	r := <-committing
	require.NoError(t, r.err)
	require.True(t, r.appended)
	require.NoError(t, <-stopped)
	wg.Wait()
	_, _, err := b.sp.Push(ctx, b.entry(b.peer, 1))
	require.ErrorIs(t, err, jam.ErrStopping)
}

func TestSpool_Stop_contextEndsAbortsTheCommit(t *testing.T) {
	t.Parallel()
	g := newGate(1) // never opened
	b := setup(t, Config{}, func(b *testBundle) { b.fs.BeforeAppendFunc = g.before })
	pending := pushAsync(t, t.Context(), b.sp, b.entry(b.peer, 1))
	<-g.entered

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, b.sp.Stop(ctx), context.Canceled)
	r := <-pending
	require.ErrorIs(t, r.err, jam.ErrStopping)
	require.False(t, r.appended)
}

func TestSpool_Release_unbalanced(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	b.sp.Release(b.ws, b.peer, 10) // nothing spooled: ignored, logged
	entries, bytes := b.sp.Usage(b.ws, b.peer)
	require.Zero(t, entries)
	require.Zero(t, bytes)

	_, _, err := b.sp.Push(t.Context(), b.entry(b.peer, 10))
	require.NoError(t, err)
	b.sp.Release(b.ws, b.peer, 50) // more bytes than spooled: clamped
	entries, bytes = b.sp.Usage(b.ws, b.peer)
	require.Zero(t, entries)
	require.Zero(t, bytes)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cfg := Config{}.withDefaults()
	require.NoError(t, cfg.validate())
	require.Equal(t, 4096, cfg.MaxEntriesPerPeer)
	require.Equal(t, int64(64<<20), cfg.MaxBytesPerPeer)
	require.Equal(t, 256, cfg.MaxBatch)
	require.NotNil(t, cfg.Logger)

	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative entries", Config{MaxEntriesPerPeer: -1}},
		{"negative bytes", Config{MaxBytesPerPeer: -1}},
		{"negative batch", Config{MaxBatch: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg, &faultStore{})
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
	_, err := New(Config{}, nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
}
