package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// retBundle is a session with a live lease, for turns to run on.
type retBundle struct {
	*execBundle
	l   store.Lease
	sec int
}

func setupRetention(t *testing.T, open func(t *testing.T) store.Store) *retBundle {
	t.Helper()
	b := &retBundle{execBundle: setupExecutions(t, open)}
	b.l = b.lease(t, 7)
	return b
}

// step moves tr from one state to the next on the bundle's lease.
func (b *retBundle) step(t *testing.T, tr jam.TurnID, from, to jam.TurnState, notes ...jam.MessageID) {
	t.Helper()
	b.sec++
	p := store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr, From: from, To: to, LeaseID: b.l.ID, LeaseGeneration: b.l.Generation,
		At: epoch.Add(time.Duration(b.sec) * time.Second), ConsumeNotes: notes}
	if from == jam.TurnQueued && to == jam.TurnPreparing {
		p.Execution = jam.New[jam.ExecutionID](b.minter)
	}
	_, err := b.st.TurnTransition(t.Context(), p)
	require.NoError(t, err)
}

// run takes a queued turn to running and stores text as its output, in
// batches of at most a MiB.
func (b *retBundle) run(t *testing.T, tr jam.TurnID, text string, notes ...jam.MessageID) {
	t.Helper()
	b.step(t, tr, jam.TurnQueued, jam.TurnPreparing)
	b.step(t, tr, jam.TurnPreparing, jam.TurnRunning, notes...)
	for n := 1; text != ""; n++ {
		part := text[:min(len(text), 1<<20)]
		text = text[len(part):]
		_, err := b.st.TurnOutputAppend(t.Context(), store.TurnOutputAppendParams{WorkspaceID: b.ws, TurnID: tr, LeaseID: b.l.ID, LeaseGeneration: b.l.Generation,
			Batch: n, Updates: []store.OutputUpdate{textUpdate("text", part)}, At: epoch})
		require.NoError(t, err)
	}
}

// finished runs a new turn to state with output text.
func (b *retBundle) finished(t *testing.T, state jam.TurnState, text string) store.Turn {
	t.Helper()
	tr := b.enqueue(t)
	b.run(t, tr.ID, text)
	b.step(t, tr.ID, jam.TurnRunning, state)
	return tr
}

func (b *retBundle) prune(t *testing.T, p store.RuntimePruneParams) store.RuntimePruned {
	t.Helper()
	if p.MaxOutputBytes == 0 {
		p.MaxOutputBytes = store.DefaultMaxOutputBytes
	}
	if p.KeepMessages == 0 {
		p.KeepMessages = store.DefaultKeepMessages
	}
	if p.KeepTurns == 0 {
		p.KeepTurns = store.DefaultKeepTurns
	}
	n, err := b.st.RuntimePrune(t.Context(), p)
	require.NoError(t, err)
	return n
}

func (b *retBundle) turnIDs(t *testing.T) []jam.TurnID {
	t.Helper()
	turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
	require.NoError(t, err)
	var out []jam.TurnID
	for _, tr := range turns {
		out = append(out, tr.ID)
	}
	return out
}

// runtimeRetentionCases covers [store.RuntimeRetention].
func runtimeRetentionCases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("RuntimePrune_keepsNewestTurnsAndEveryLiveOne", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t, open)
		ctx := t.Context()
		t1 := b.finished(t, jam.TurnSucceeded, "first answer")
		t2 := b.finished(t, jam.TurnFailed, "second answer")
		t3 := b.enqueue(t) // old, but still waiting: never pruned
		t4 := b.finished(t, jam.TurnSucceeded, "fourth answer")
		t5 := b.enqueue(t)
		b.run(t, t5.ID, "running now")

		// Another session's turns are bounded on their own.
		s2, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: b.tm.ID, Peer: b.peer.Key,
			Room: newUUID[jam.RoomID](), CreatedAt: epoch})
		require.NoError(t, err)
		other := &retBundle{execBundle: &execBundle{msgBundle: b.msgBundle, tm: b.tm, sess: s2}, l: b.l}
		o1 := other.finished(t, jam.TurnSucceeded, "other")

		n := b.prune(t, store.RuntimePruneParams{KeepTurns: 2})
		require.Equal(t, 2, n.Turns, "%+v", n)
		require.Equal(t, 2, n.Executions)
		require.Equal(t, 2, n.Output)
		require.Equal(t, 2*4, n.Journal, "queued, preparing, running, and the end, for each")
		require.Equal(t, []jam.TurnID{t3.ID, t4.ID, t5.ID}, b.turnIDs(t))
		for _, gone := range []jam.TurnID{t1.ID, t2.ID} {
			_, err := b.st.TurnGet(ctx, b.ws, gone)
			require.ErrorIs(t, err, jam.ErrNotFound)
			out, err := b.st.TurnOutput(ctx, b.ws, gone)
			require.NoError(t, err)
			require.Empty(t, out)
			require.Empty(t, b.executions(t, gone))
			journal, err := b.st.TurnJournal(ctx, b.ws, gone)
			require.NoError(t, err)
			require.Empty(t, journal)
		}
		for _, kept := range []jam.TurnID{t4.ID, t5.ID} {
			out, err := b.st.TurnOutput(ctx, b.ws, kept)
			require.NoError(t, err)
			require.Len(t, out, 1, "a kept turn keeps its output")
			require.Len(t, b.executions(t, kept), 1)
		}
		require.Equal(t, []jam.TurnID{o1.ID}, other.turnIDs(t))

		// Nothing more to prune: a second pass deletes nothing.
		require.Zero(t, b.prune(t, store.RuntimePruneParams{KeepTurns: 2}).Total())

		// Numbering goes on after the newest kept turn; a newer turn
		// pushes t4 past the bound.
		t6 := b.enqueue(t)
		require.Equal(t, t5.Seq+1, t6.Seq)
		require.Equal(t, 1, b.prune(t, store.RuntimePruneParams{KeepTurns: 2}).Turns)
		require.Equal(t, []jam.TurnID{t3.ID, t5.ID, t6.ID}, b.turnIDs(t))
	})

	t.Run("RuntimePrune_boundsSessionOutput", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t, open)
		ctx := t.Context()
		big := strings.Repeat("x", 3<<20)
		oldest := b.finished(t, jam.TurnSucceeded, big)
		middle := b.finished(t, jam.TurnSucceeded, big)
		newest := b.finished(t, jam.TurnInterrupted, big)

		n := b.prune(t, store.RuntimePruneParams{MaxOutputBytes: store.TurnOutputMaxBytes})
		require.Equal(t, 3, n.Output, "the oldest turn's three batches: %+v", n)
		require.Zero(t, n.Turns, "the turns stay; only their output goes")
		out, err := b.st.TurnOutput(ctx, b.ws, oldest.ID)
		require.NoError(t, err)
		require.Empty(t, out)
		for _, kept := range []jam.TurnID{middle.ID, newest.ID} {
			out, err := b.st.TurnOutput(ctx, b.ws, kept)
			require.NoError(t, err)
			require.Len(t, out, 3)
		}
		require.Equal(t, []jam.TurnID{oldest.ID, middle.ID, newest.ID}, b.turnIDs(t))
	})

	t.Run("RuntimePrune_sessionMessagesOnlyOnceOver", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t, open)
		ctx := t.Context()
		msg := func(routing jam.Routing, text string) store.SessionMessage {
			return store.SessionMessage{ID: jam.New[jam.MessageID](b.minter), WorkspaceID: b.ws, SessionID: b.sess.ID, Requested: routing, Routing: routing, Text: text, CreatedAt: epoch}
		}
		accept := func(m store.SessionMessage) (store.SessionMessage, store.Turn) {
			p := store.MessageAcceptParams{Message: m}
			if m.Routing == jam.RoutingQueue {
				p.Turn = store.Turn{ID: jam.New[jam.TurnID](b.minter)}
			}
			got, tr, err := b.st.MessageAccept(ctx, p)
			require.NoError(t, err)
			return got, tr
		}
		used, _ := accept(msg(jam.RoutingNote, "use tabs"))
		asked, answer := accept(msg(jam.RoutingQueue, "fix it"))
		pending, _ := accept(msg(jam.RoutingNote, "and spaces"))
		waiting, later := accept(msg(jam.RoutingQueue, "then this"))
		b.run(t, answer.ID, "done", used.ID)
		b.step(t, answer.ID, jam.TurnRunning, jam.TurnSucceeded)
		ids := func() []jam.MessageID {
			ms, err := b.st.MessageList(ctx, b.ws, b.sess.ID)
			require.NoError(t, err)
			var out []jam.MessageID
			for _, m := range ms {
				out = append(out, m.ID)
			}
			return out
		}

		// The consumed note goes; the question stays while its answer
		// is kept, the pending note and the waiting question always.
		n := b.prune(t, store.RuntimePruneParams{KeepMessages: 1})
		require.Equal(t, 1, n.Messages, "%+v", n)
		require.Equal(t, []jam.MessageID{asked.ID, pending.ID, waiting.ID}, ids())

		// Once the answer is pruned, the question goes too.
		n = b.prune(t, store.RuntimePruneParams{KeepMessages: 1, KeepTurns: 1})
		require.Equal(t, 1, n.Turns)
		require.Equal(t, 1, n.Messages)
		require.Equal(t, []jam.MessageID{pending.ID, waiting.ID}, ids())
		require.Equal(t, []jam.TurnID{later.ID}, b.turnIDs(t))
	})

	t.Run("RuntimePrune_validates", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t, open)
		for _, p := range []store.RuntimePruneParams{
			{KeepTurns: 0, KeepMessages: 1, MaxOutputBytes: store.DefaultMaxOutputBytes},
			{KeepTurns: 1, KeepMessages: 0, MaxOutputBytes: store.DefaultMaxOutputBytes},
			{KeepTurns: 1, KeepMessages: 1, MaxOutputBytes: store.TurnOutputMaxBytes - 1},
		} {
			_, err := b.st.RuntimePrune(t.Context(), p)
			require.ErrorIs(t, err, jam.ErrInvalid, "%+v", p)
		}
	})
}
