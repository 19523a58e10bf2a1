package postgres

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// TestEventAppend_readerMissesNothing: while two handles append to one
// workspace, a reader that pages with the last sequence it saw (as a
// client resuming with ?after=SEQ does) ends up with every event: no
// sequence ever becomes visible below one already read.
func TestEventAppend_readerMissesNothing(t *testing.T) {
	w := newWorld(t)
	const perWriter = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			for range perWriter {
				if _, err := w.handle(i).EventAppend(t.Context(), []store.EventRecord{{WorkspaceID: w.ws, Kind: "test.event", CreatedAt: at}}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	seen := 0
	var after int64
	read := func() {
		evs, err := w.a.EventList(t.Context(), w.ws, after, store.MaxEventListLimit)
		require.NoError(t, err)
		for _, e := range evs {
			require.Greater(t, e.Seq, after)
			after = e.Seq
			seen++
		}
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		read()
	}
	read()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, 2*perWriter, seen, "events a resuming reader saw")
}

// TestEvents_sealedAtRest: with a Sealer the payload is stored sealed,
// bound to its sequence, and read back in the clear; the empty payload
// stays as it is.
func TestEvents_sealedAtRest(t *testing.T) {
	box, err := secret.LoadOrCreate(filepath.Join(t.TempDir(), "key"))
	require.NoError(t, err)
	_, u := openTest(t)
	s, err := Open(t.Context(), Config{URL: u, Sealer: box})
	require.NoError(t, err)
	defer s.Close()
	ws := jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil))
	seqs, err := s.EventAppend(t.Context(), []store.EventRecord{
		{WorkspaceID: ws, Kind: "a", Payload: json.RawMessage(`{"text":"hello secret"}`), CreatedAt: at},
		{WorkspaceID: ws, Kind: "b", CreatedAt: at},
	})
	require.NoError(t, err)
	var raw []byte
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT payload FROM events WHERE seq = $1`, seqs[0]).Scan(&raw))
	require.NotContains(t, string(raw), "hello secret")
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT payload FROM events WHERE seq = $1`, seqs[1]).Scan(&raw))
	require.Equal(t, "{}", string(raw))
	evs, err := s.EventList(t.Context(), ws, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.JSONEq(t, `{"text":"hello secret"}`, string(evs[0].Payload))
	require.Equal(t, "{}", string(evs[1].Payload))

	// Moved to another sequence, the value no longer opens.
	_, err = s.pool.Exec(t.Context(), `UPDATE events SET payload = (SELECT payload FROM events WHERE seq = $1) WHERE seq = $2`, seqs[0], seqs[1])
	require.NoError(t, err)
	_, err = s.EventList(t.Context(), ws, 0, 10)
	require.ErrorIs(t, err, secret.ErrCorrupt)
}

// TestRoomCacheApply_sameSequenceTwiceAtOnce: two writes of one new room
// at one sequence through two handles: one is accepted, the other is
// refused as at or below the watermark (jam.ErrConflict), never a
// duplicate key.
func TestRoomCacheApply_sameSequenceTwiceAtOnce(t *testing.T) {
	w := newWorld(t)
	for round := range 10 {
		room := newUUID[jam.RoomID]()
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				errs[i] = w.handle(i).RoomCacheApply(t.Context(), store.RoomCacheApplyParams{
					WorkspaceID: w.ws, AccountID: w.acct.ID, Room: room, Seq: 5, At: at,
					Upserts: []store.RoomCacheItem{{MessageID: newUUID[jam.PlatformMessageID](), Seq: 5, InsertedAt: at, Sealed: []byte("m")}},
				})
			})
		}
		close(start)
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, jam.ErrConflict, "round %d", round)
				failed++
			}
		}
		require.Equal(t, 1, failed, "round %d", round)
	}
}

// TestListenEvents_wakesOtherHandle: a listener on one handle is woken,
// with the workspace, by events committed through another, and by
// nothing else.
func TestListenEvents_wakesOtherHandle(t *testing.T) {
	w := newWorld(t)
	l, err := w.b.ListenEvents(t.Context())
	require.NoError(t, err)
	defer l.Close()

	_, err = w.a.EventAppend(t.Context(), []store.EventRecord{{WorkspaceID: w.ws, Kind: "x", CreatedAt: at}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, err := l.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, w.ws, ws)

	// Nothing else was committed: the next wait ends with its deadline.
	short, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel2()
	_, err = l.Wait(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A wait that ended with its context leaves the listener usable.
	_, err = w.a.EventAppend(t.Context(), []store.EventRecord{{WorkspaceID: w.ws, Kind: "y", CreatedAt: at}})
	require.NoError(t, err)
	ws, err = l.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, w.ws, ws)
}
