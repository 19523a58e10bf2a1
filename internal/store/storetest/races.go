package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// raceRounds is how many times each race is run: enough that an
// unguarded write interleaves at least once on two cores.
const raceRounds = 50

// race runs every fn on a goroutine of its own, releases them together
// and waits for all of them.
func race(fns ...func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() {
			<-start
			fn()
		})
	}
	close(start)
	wg.Wait()
}

// twoHandles opens two handles on one fresh database and builds the
// messaging fixture through the first.
func twoHandles(t *testing.T, db Opener[store.Store]) (b *msgBundle, other store.Store) {
	t.Helper()
	open := db(t)
	b = setupMessaging(t, open)
	return b, open(t)
}

// spoolRaces appends one message through two handles at once. The
// guarantee is the database's: a handle knows nothing of what the other
// appended, so only a constraint (or a check of the table inside the
// write) can keep the second copy out.
func spoolRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("SpoolAppend_sameMessageTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		handles := [2]store.Store{b.st, other}
		want := map[jam.PlatformMessageID]int64{}
		for round := range raceRounds {
			e := entry(b.ws, b.peer.Key, room)
			var res [2]store.SpoolAppendResult
			var errs [2]error
			race(
				func() { res[0], errs[0] = handles[0].SpoolAppend(ctx, []store.SpoolEntry{e}) },
				func() { res[1], errs[1] = handles[1].SpoolAppend(ctx, []store.SpoolEntry{e}) },
			)
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			require.NotEqual(t, res[0].Appended[0], res[1].Appended[0], "round %d: exactly one append of the message goes in", round)
			winner := 0
			if res[1].Appended[0] {
				winner = 1
			}
			want[e.MessageID] = res[winner].Seqs[0]

			// The loser never saw the message go in: appending it again
			// through the loser must still be refused.
			again, err := handles[1-winner].SpoolAppend(ctx, []store.SpoolEntry{e})
			require.NoError(t, err)
			require.False(t, again.Appended[0], "round %d: the other handle appends the message again", round)
		}

		// Every message is in the lane once, with the sequence its one
		// append reported.
		lane, err := other.SpoolNext(ctx, b.ws, b.peer.Key, room, 2*raceRounds)
		require.NoError(t, err)
		got := map[jam.PlatformMessageID]int64{}
		for _, e := range lane {
			_, dup := got[e.MessageID]
			require.False(t, dup, "message %s is spooled twice", e.MessageID)
			got[e.MessageID] = e.Seq
		}
		require.Equal(t, want, got)

		// Once moved, the message is queued once and refused by both.
		for _, e := range lane[:3] {
			_, err := b.st.SpoolMove(ctx, e.Seq, moveRow(e))
			require.NoError(t, err)
			for i, h := range handles {
				res, err := h.SpoolAppend(ctx, []store.SpoolEntry{e})
				require.NoError(t, err)
				require.False(t, res.Appended[0], "handle %d appends a queued message", i)
			}
		}
		rows := b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true})
		require.Len(t, rows, 3)
	})
}

// queueRaces marks one row through two handles at once: every delivery
// counts one attempt, none lost to another's write.
func queueRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("QueueMark_oneRowTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		row := b.queue(t, b.ws, b.peer.Key, newUUID[jam.RoomID]())
		handles := [2]store.Store{b.st, other}
		for round := range raceRounds {
			var errs [2]error
			mark := func(i int) func() {
				return func() {
					errs[i] = handles[i].QueueMark(ctx, store.QueueMarkParams{WorkspaceID: b.ws, Peer: b.peer.Key, MessageID: row.MessageID,
						State: store.QueueDelivered, At: epoch.Add(time.Duration(round) * time.Second)})
				}
			}
			race(mark(0), mark(1))
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			got, err := handles[round%2].QueueGet(ctx, b.ws, b.peer.Key, row.MessageID)
			require.NoError(t, err)
			require.Equal(t, store.QueueDelivered, got.State)
			require.Equal(t, 2*(round+1), got.Attempts, "round %d: every delivery counts one attempt", round)
			requireTime(t, epoch.Add(time.Duration(round)*time.Second), got.DeliveredAt)
		}
	})
}

// bindingRaces binds one room twice at once through two handles: one
// owner at the end, and every queued row of the room on it.
func bindingRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("BindingPut_oneRoomTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		const rowsPerRoom = 3
		for round := range raceRounds {
			room := newUUID[jam.RoomID]()
			var queued []jam.PlatformMessageID
			for range rowsPerRoom {
				queued = append(queued, b.queue(t, b.ws, b.peer.Key, room).MessageID)
			}
			// Every other round the room already has an owner, so both
			// binds steal it.
			if round%2 == 1 {
				b.putBinding(t, b.binding(b.ws, b.peer.Key, room, fmt.Sprintf("owner-%d", round)))
			}
			binds := [2]store.Binding{
				b.binding(b.ws, b.peer.Key, room, fmt.Sprintf("a-%d", round)),
				b.binding(b.ws, b.peer.Key, room, fmt.Sprintf("b-%d", round)),
			}
			var errs [2]error
			race(
				func() { _, errs[0] = handles[0].BindingPut(ctx, binds[0]) },
				func() { _, errs[1] = handles[1].BindingPut(ctx, binds[1]) },
			)
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)

			owner, err := other.BindingForRoom(ctx, b.ws, b.peer.Key, room)
			require.NoError(t, err, "round %d", round)
			require.Contains(t, []jam.BindingID{binds[0].ID, binds[1].ID}, owner.ID, "round %d", round)
			all, err := b.st.BindingList(ctx, b.ws, b.peer.Key)
			require.NoError(t, err)
			var ofRoom []jam.BindingID
			for _, bnd := range all {
				if bnd.Room == room {
					ofRoom = append(ofRoom, bnd.ID)
				}
			}
			require.Equal(t, []jam.BindingID{owner.ID}, ofRoom, "round %d: one binding owns the room", round)

			// Every row of the room is on the owner, once; none is left
			// unrouted or on a binding that lost.
			require.ElementsMatch(t, queued, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: owner.ID}), "round %d", round)
			require.ElementsMatch(t, queued, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Room: room}), "round %d", round)
			for _, bnd := range binds {
				if bnd.ID != owner.ID {
					require.Empty(t, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Binding: bnd.ID}), "round %d", round)
				}
			}
		}
		require.Empty(t, b.list(t, store.QueueListParams{WorkspaceID: b.ws, Unrouted: true}))
	})
}

// turnRaces writes with a lease after its replacement, through another
// handle than the one that replaced it: the fence is in the database, not
// in what either handle remembers.
func turnRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("TurnTransition_staleLeaseTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, stale := twoHandles(t, db)
		ctx := t.Context()
		tm := template(t, b)
		s := session(t, b, tm, newUUID[jam.RoomID]())
		holder := string(tm.ID)
		l := lease(t, b, holder)
		at := epoch
		move := func(st store.Store, tr jam.TurnID, from, to jam.TurnState, l store.Lease, reason string) (store.Turn, error) {
			at = at.Add(time.Second)
			return st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr, From: from, To: to, Reason: reason,
				LeaseID: l.ID, LeaseGeneration: l.Generation, At: at, Execution: jam.New[jam.ExecutionID](b.minter)})
		}
		running := func(l store.Lease) store.Turn {
			t.Helper()
			tr := enqueue(t, b, s)
			_, err := move(b.st, tr.ID, jam.TurnQueued, jam.TurnPreparing, l, "")
			require.NoError(t, err)
			tr, err = move(b.st, tr.ID, jam.TurnPreparing, jam.TurnRunning, l, "")
			require.NoError(t, err)
			return tr
		}
		replace := func() (store.Lease, error) {
			return b.st.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: holder, Pid: 42, At: epoch})
		}
		// staleRefused checks what the stale lease l can still do to tr
		// once its replacement has committed: nothing.
		staleRefused := func(round int, tr jam.TurnID, l store.Lease) {
			t.Helper()
			before := turnSnapshot(t, b, tr)
			_, err := move(stale, tr, jam.TurnRunning, jam.TurnSucceeded, l, "")
			require.ErrorIs(t, err, jam.ErrLeaseLost, "round %d: a move on a replaced lease", round)
			require.Equal(t, before, turnSnapshot(t, b, tr), "round %d: a refused move changes nothing", round)
			// The supervisor records the interruption, on the lease the
			// turn ran on; then the stale lease cannot write its output.
			_, err = move(b.st, tr, jam.TurnRunning, jam.TurnInterrupted, l, jam.ReasonProcessExited)
			require.NoError(t, err, "round %d", round)
			_, err = stale.TurnOutputAppend(ctx, store.TurnOutputAppendParams{WorkspaceID: b.ws, TurnID: tr, LeaseID: l.ID, LeaseGeneration: l.Generation,
				Batch: 1, Updates: []store.OutputUpdate{{Kind: "text", Text: "late"}}, At: at})
			require.ErrorIs(t, err, jam.ErrLeaseLost, "round %d: output of an ended turn", round)
			out, err := b.st.TurnOutput(ctx, b.ws, tr)
			require.NoError(t, err)
			require.Empty(t, out, "round %d", round)
			err = stale.LeaseEnd(ctx, b.ws, l.ID, "exited", at)
			require.ErrorIs(t, err, jam.ErrConflict, "round %d: the replaced lease has ended already", round)
		}
		for round := range raceRounds {
			// The supervisor replaces the lease while the old process
			// reports success through its own handle: either the success
			// commits first, or it is refused and changes nothing.
			tr := running(l)
			before := turnSnapshot(t, b, tr.ID)
			var next store.Lease
			var acqErr, staleErr error
			race(
				func() { next, acqErr = replace() },
				func() { _, staleErr = move(stale, tr.ID, jam.TurnRunning, jam.TurnSucceeded, l, "") },
			)
			require.NoError(t, acqErr, "round %d", round)
			if staleErr != nil {
				require.ErrorIs(t, staleErr, jam.ErrLeaseLost, "round %d", round)
				require.Equal(t, before, turnSnapshot(t, b, tr.ID), "round %d: a refused move changes nothing", round)
				staleRefused(round, tr.ID, l)
			}

			// Once the replacement has certainly committed, the stale
			// lease is refused whatever its handle saw.
			tr = running(next)
			after, err := replace()
			require.NoError(t, err)
			staleRefused(round, tr.ID, next)
			l = after
		}
	})
}

// turnRow is what a refused move must leave as it was.
type turnRow struct {
	Turn    store.Turn
	Journal int
}

func turnSnapshot(t *testing.T, b *msgBundle, id jam.TurnID) turnRow {
	t.Helper()
	tr, err := b.st.TurnGet(t.Context(), b.ws, id)
	require.NoError(t, err)
	j, err := b.st.TurnJournal(t.Context(), b.ws, id)
	require.NoError(t, err)
	return turnRow{tr, len(j)}
}
