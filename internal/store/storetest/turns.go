package storetest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// turnCases covers [store.Turns].
func turnCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Turn_lifecycleJournalAndFencing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		s := session(t, b, tm, newUUID[jam.RoomID]())
		first, second := enqueue(t, b, s), enqueue(t, b, s)
		require.Equal(t, []int64{1, 2}, []int64{first.Seq, second.Seq})
		require.Equal(t, jam.TurnQueued, first.State)

		l1 := lease(t, b, string(tm.ID))
		require.Equal(t, int64(1), l1.Generation)
		move := func(tr store.Turn, from, to jam.TurnState, l store.Lease, reason string) (store.Turn, error) {
			return b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: from, To: to, Reason: reason, LeaseID: l.ID, LeaseGeneration: l.Generation, At: epoch.Add(time.Second),
				Execution: jam.New[jam.ExecutionID](b.minter)})
		}
		first, err := move(first, jam.TurnQueued, jam.TurnPreparing, l1, "")
		require.NoError(t, err)
		require.Equal(t, l1.ID, first.LeaseID)
		_, err = move(second, jam.TurnQueued, jam.TurnPreparing, l1, "")
		require.ErrorIs(t, err, jam.ErrConflict, "one active turn per session")
		first, err = move(first, jam.TurnPreparing, jam.TurnRunning, l1, "")
		require.NoError(t, err)
		_, err = move(first, jam.TurnPreparing, jam.TurnRunning, l1, "")
		require.ErrorIs(t, err, jam.ErrConflict, "not in From")
		_, err = move(first, jam.TurnRunning, jam.TurnQueued, l1, "")
		require.ErrorIs(t, err, jam.ErrInvalid, "no move back")

		// The process dies; the lease is replaced. The stale writer's
		// success is refused; the supervisor records the interruption.
		l2 := lease(t, b, string(tm.ID))
		require.Equal(t, int64(2), l2.Generation)
		live, err := b.st.LeaseLive(ctx, b.ws, string(tm.ID))
		require.NoError(t, err)
		require.Equal(t, l2.ID, live.ID)
		_, err = move(first, jam.TurnRunning, jam.TurnSucceeded, l1, "")
		require.ErrorIs(t, err, jam.ErrLeaseLost, "a stale generation cannot settle the turn")
		_, err = move(first, jam.TurnRunning, jam.TurnSucceeded, l2, "")
		require.ErrorIs(t, err, jam.ErrLeaseLost, "nor can the new lease take over a turn it did not run")
		first, err = move(first, jam.TurnRunning, jam.TurnInterrupted, l1, jam.ReasonProcessExited)
		require.NoError(t, err)
		require.Equal(t, jam.ReasonProcessExited, first.Reason)

		// The next turn runs on the new lease.
		_, err = move(second, jam.TurnQueued, jam.TurnPreparing, l1, "")
		require.ErrorIs(t, err, jam.ErrLeaseLost, "an ended lease cannot start a turn")
		second, err = move(second, jam.TurnQueued, jam.TurnPreparing, l2, "")
		require.NoError(t, err)
		second, err = move(second, jam.TurnPreparing, jam.TurnRunning, l2, "")
		require.NoError(t, err)
		second, err = move(second, jam.TurnRunning, jam.TurnSucceeded, l2, "")
		require.NoError(t, err)
		require.Equal(t, int64(2), second.LeaseGeneration)

		journal, err := b.st.TurnJournal(ctx, b.ws, first.ID)
		require.NoError(t, err)
		var steps []string
		for _, e := range journal {
			steps = append(steps, string(e.From)+">"+string(e.To))
		}
		require.Equal(t, []string{">queued", "queued>preparing", "preparing>running", "running>interrupted"}, steps)
		require.Equal(t, jam.ReasonProcessExited, journal[3].Reason)
		turns, err := b.st.TurnList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Equal(t, []jam.TurnState{jam.TurnInterrupted, jam.TurnSucceeded}, []jam.TurnState{turns[0].State, turns[1].State})

		// A queued turn may be cancelled without a lease.
		third := enqueue(t, b, s)
		third, err = b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: third.ID, From: jam.TurnQueued, To: jam.TurnCancelled, Reason: jam.ReasonCancelledByUser, At: epoch})
		require.NoError(t, err)
		require.Equal(t, jam.TurnCancelled, third.State)
	})

	t.Run("Turn_detailStoredBoundedAndJournalled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		s := session(t, b, tm, newUUID[jam.RoomID]())
		l := lease(t, b, string(tm.ID))
		move := func(tr store.Turn, from, to jam.TurnState, reason, detail string) (store.Turn, error) {
			return b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: from, To: to, Reason: reason, Detail: detail,
				LeaseID: l.ID, LeaseGeneration: l.Generation, At: epoch.Add(time.Second), Execution: jam.New[jam.ExecutionID](b.minter)})
		}

		// Only a move to a terminal state says why.
		tr := enqueue(t, b, s)
		_, err := move(tr, jam.TurnQueued, jam.TurnPreparing, "", "why not")
		require.ErrorIs(t, err, jam.ErrInvalid)
		tr, err = move(tr, jam.TurnQueued, jam.TurnPreparing, "", "")
		require.NoError(t, err)
		require.Empty(t, tr.Detail)
		const why = "start agent: exec: \"no-such-agent\": executable file not found in $PATH"
		tr, err = move(tr, jam.TurnPreparing, jam.TurnFailed, jam.ReasonHarnessError, "  "+why+"\n")
		require.NoError(t, err)
		require.Equal(t, jam.TurnFailed, tr.State)
		require.Equal(t, why, tr.Detail, "kept trimmed on the turn")
		got, err := b.st.TurnGet(ctx, b.ws, tr.ID)
		require.NoError(t, err)
		require.Equal(t, why, got.Detail)
		turns, err := b.st.TurnList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Equal(t, why, turns[0].Detail)
		journal, err := b.st.TurnJournal(ctx, b.ws, tr.ID)
		require.NoError(t, err)
		require.Len(t, journal, 3)
		require.Equal(t, []string{"", "", why}, []string{journal[0].Detail, journal[1].Detail, journal[2].Detail},
			"the journal entry of the move carries it, and only it")
		require.Equal(t, jam.ReasonHarnessError, journal[2].Reason)

		// A long detail with control characters and a rune across the
		// bound is cleaned and cut on a rune boundary.
		long := enqueue(t, b, s)
		raw := "bad\x1b[2Jthing\r\nline\ttwo\x00\xff " + strings.Repeat("é", store.TurnDetailMax)
		long, err = b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: long.ID, From: jam.TurnQueued, To: jam.TurnCancelled,
			Reason: jam.ReasonCancelledByUser, Detail: raw, At: epoch})
		require.NoError(t, err)
		require.LessOrEqual(t, len(long.Detail), store.TurnDetailMax)
		require.Greater(t, len(long.Detail), store.TurnDetailMax-8, "cut at the bound, not short of it")
		require.True(t, utf8.ValidString(long.Detail))
		require.True(t, strings.HasPrefix(long.Detail, "bad\uFFFD[2Jthing\uFFFD\nline\ttwo\uFFFD\uFFFD é"), long.Detail[:40])
		require.True(t, strings.HasSuffix(long.Detail, "é…"))
		journal, err = b.st.TurnJournal(ctx, b.ws, long.ID)
		require.NoError(t, err)
		require.Equal(t, long.Detail, journal[len(journal)-1].Detail)
	})
}
