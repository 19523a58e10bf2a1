package postgres

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func (w *world) entry(room jam.RoomID) store.SpoolEntry {
	return store.SpoolEntry{WorkspaceID: w.ws, Peer: w.peer.Key, Room: room, MessageID: newUUID[jam.PlatformMessageID](),
		Sealed: []byte("sealed-message"), ReceivedAt: at}
}

func (w *world) spool(t *testing.T, n int, room jam.RoomID) []int64 {
	t.Helper()
	entries := make([]store.SpoolEntry, n)
	for i := range entries {
		entries[i] = w.entry(room)
	}
	res, err := w.a.SpoolAppend(t.Context(), entries)
	require.NoError(t, err)
	for i := range entries {
		require.True(t, res.Appended[i])
	}
	return res.Seqs
}

// TestSpoolAppend_sameMessageTwiceAtOnce: one message appended through
// two handles at once is stored once.
func TestSpoolAppend_sameMessageTwiceAtOnce(t *testing.T) {
	w := newWorld(t)
	room := newUUID[jam.RoomID]()
	for round := range 10 {
		e := w.entry(room)
		var res [2]store.SpoolAppendResult
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				res[i], errs[i] = w.handle(i).SpoolAppend(t.Context(), []store.SpoolEntry{w.entry(room), e})
			})
		}
		close(start)
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		require.True(t, res[0].Appended[1] != res[1].Appended[1], "round %d: appended %v and %v", round, res[0].Appended[1], res[1].Appended[1])
	}
}

// TestSpoolMove_racesBindingPut: entries of a room moved through one
// handle while another binds the room all end on the binding: a move
// never routes to the unrouted bucket after the bind re-homed the room.
func TestSpoolMove_racesBindingPut(t *testing.T) {
	w := newWorld(t)
	for round := range 6 {
		room := newUUID[jam.RoomID]()
		seqs := w.spool(t, 20, room)
		bnd := w.binding(room, "r"+string(rune('a'+round)))
		var moveErr, bindErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			for _, seq := range seqs {
				if _, err := w.a.SpoolMove(t.Context(), seq, store.QueueRow{WorkspaceID: w.ws, Sealed: []byte("q")}); err != nil {
					moveErr = err
					return
				}
			}
		})
		wg.Go(func() {
			<-start
			_, bindErr = w.b.BindingPut(t.Context(), bnd)
		})
		close(start)
		wg.Wait()
		require.NoError(t, moveErr)
		require.NoError(t, bindErr)
		rows, err := w.a.QueueList(t.Context(), store.QueueListParams{WorkspaceID: w.ws, Peer: w.peer.Key, Room: room})
		require.NoError(t, err)
		require.Len(t, rows, len(seqs))
		for _, r := range rows {
			require.Equal(t, bnd.ID, r.Binding, "round %d: row %d", round, r.Seq)
		}
	}
}

// TestSpoolMove_queueBoundAcrossHandles: moves of one peer through two
// handles at once never leave it more than MaxQueuedPerPeer rows.
func TestSpoolMove_queueBoundAcrossHandles(t *testing.T) {
	w := newWorld(t)
	const limit = 5
	for _, st := range []*Store{w.a, w.b} {
		st.maxQueued = limit
	}
	room := newUUID[jam.RoomID]()
	seqs := w.spool(t, 4*limit, room)
	var wg sync.WaitGroup
	var errs [2][]error
	start := make(chan struct{})
	for i := range 2 {
		wg.Go(func() {
			<-start
			for j := i; j < len(seqs); j += 2 {
				_, err := w.handle(i).SpoolMove(t.Context(), seqs[j], store.QueueRow{WorkspaceID: w.ws, Sealed: []byte("q")})
				errs[i] = append(errs[i], err)
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range errs {
		for _, err := range errs[i] {
			if err != nil {
				require.ErrorIs(t, err, jam.ErrUnavailable)
			}
		}
	}
	rows, err := w.a.QueueList(t.Context(), store.QueueListParams{WorkspaceID: w.ws, Peer: w.peer.Key})
	require.NoError(t, err)
	require.Len(t, rows, limit)
}

// TestReplyIntentPut_sameIntentTwiceAtOnce: the first put of one intent
// through two handles at once records it once, and neither fails.
func TestReplyIntentPut_sameIntentTwiceAtOnce(t *testing.T) {
	w := newWorld(t)
	for round := range 10 {
		r := store.ReplyIntent{WorkspaceID: w.ws, Peer: w.peer.Key, Room: newUUID[jam.RoomID](),
			MessageID: newUUID[jam.PlatformMessageID](), Sealed: []byte("reply"), Parts: 2, State: store.ReplyPending, CreatedAt: at}
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				errs[i] = w.handle(i).ReplyIntentPut(t.Context(), r)
			})
		}
		close(start)
		wg.Wait()
		require.NoError(t, errs[0], "round %d", round)
		require.NoError(t, errs[1], "round %d", round)
	}
}
