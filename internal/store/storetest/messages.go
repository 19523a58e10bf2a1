package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// messageCases covers [store.SessionMessages].
func messageCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("Message_routingNotesAndSteer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		s := session(t, b, tm, newUUID[jam.RoomID]())
		msg := func(requested, routing jam.Routing, text string) store.SessionMessage {
			return store.SessionMessage{ID: jam.New[jam.MessageID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Requested: requested, Routing: routing, Text: text, CreatedAt: epoch}
		}
		// A note is stored alone: no turn.
		note, tr, err := b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingNote, jam.RoutingNote, "use tabs")})
		require.NoError(t, err)
		require.Zero(t, tr)
		require.Equal(t, int64(1), note.Seq)
		require.True(t, note.Pending())
		turns, err := b.st.TurnList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Empty(t, turns, "a note starts no turn")

		// A queue message and its turn are one transaction.
		q, tr, err := b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingQueue, jam.RoutingQueue, "fix it"),
			Turn: store.Turn{ID: jam.New[jam.TurnID](b.minter)}})
		require.NoError(t, err)
		require.Equal(t, int64(2), q.Seq)
		require.Equal(t, tr.ID, q.TurnID)
		require.Equal(t, q.ID, tr.MessageID)
		require.Equal(t, jam.TurnQueued, tr.State)
		require.Empty(t, tr.SourceMessageID, "sent directly: nothing to settle on Band")
		journal, err := b.st.TurnJournal(ctx, b.ws, tr.ID)
		require.NoError(t, err)
		require.Len(t, journal, 1)

		// A Band message is a queue message without text of its own.
		band := msg(jam.RoutingQueue, jam.RoutingQueue, "")
		band.SourceMessageID = newUUID[jam.PlatformMessageID]()
		bm, bt, err := b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: band, Turn: store.Turn{ID: jam.New[jam.TurnID](b.minter)}})
		require.NoError(t, err)
		require.Equal(t, band.SourceMessageID, bt.SourceMessageID)
		require.Equal(t, bm.ID, bt.MessageID)

		// Refusals: no text, a routing that cannot take effect, steering
		// a turn that is not running.
		_, _, err = b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingNote, jam.RoutingNote, "")})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, _, err = b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingQueue, jam.RoutingNote, "x")})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, _, err = b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingSteer, jam.RoutingSteer, "faster"), SteeredTurn: tr.ID})
		require.ErrorIs(t, err, jam.ErrConflict, "the turn is queued, not running")
		other := msg(jam.RoutingNote, jam.RoutingNote, "x")
		other.SessionID = jam.New[jam.SessionID](b.minter)
		_, _, err = b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: other})
		require.ErrorIs(t, err, jam.ErrNotFound)

		// The turn moving to running consumes the pending note, once.
		l := lease(t, b, string(tm.ID))
		move := func(id jam.TurnID, from, to jam.TurnState, notes ...jam.MessageID) (store.Turn, error) {
			return b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: id, From: from, To: to, LeaseID: l.ID, LeaseGeneration: l.Generation,
				At: epoch.Add(time.Second), ConsumeNotes: notes, Execution: jam.New[jam.ExecutionID](b.minter)})
		}
		_, err = move(tr.ID, jam.TurnQueued, jam.TurnPreparing, note.ID)
		require.ErrorIs(t, err, jam.ErrInvalid, "only the move to running consumes notes")
		_, err = move(tr.ID, jam.TurnQueued, jam.TurnPreparing)
		require.NoError(t, err)
		_, err = move(tr.ID, jam.TurnPreparing, jam.TurnRunning, note.ID, q.ID)
		require.ErrorIs(t, err, jam.ErrConflict, "a queue message is not a note")
		got, err := b.st.MessageGet(ctx, b.ws, note.ID)
		require.NoError(t, err)
		require.True(t, got.Pending(), "the refused move consumed nothing")
		_, err = move(tr.ID, jam.TurnPreparing, jam.TurnRunning, note.ID)
		require.NoError(t, err)
		got, err = b.st.MessageGet(ctx, b.ws, note.ID)
		require.NoError(t, err)
		require.False(t, got.Pending())
		require.Equal(t, tr.ID, got.TurnID)
		require.True(t, epoch.Add(time.Second).Truncate(time.Microsecond).Equal(got.ConsumedAt), "consumed when the turn started running")

		// Steering reaches the running turn.
		st, none, err := b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingSteer, jam.RoutingSteer, "faster"), SteeredTurn: tr.ID})
		require.NoError(t, err)
		require.Zero(t, none)
		require.Equal(t, tr.ID, st.TurnID)
		// A steer that was queued says so.
		sq, sqt, err := b.st.MessageAccept(ctx, store.MessageAcceptParams{Message: msg(jam.RoutingSteer, jam.RoutingQueue, "then this"), Turn: store.Turn{ID: jam.New[jam.TurnID](b.minter)}})
		require.NoError(t, err)
		require.Equal(t, jam.RoutingSteer, sq.Requested)
		require.Equal(t, jam.RoutingQueue, sq.Routing)
		require.Equal(t, sq.ID, sqt.MessageID)

		// A turn that answers the message again (a retry) is linked to it.
		retry, err := b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Routing: jam.RoutingQueue, MessageID: q.ID, CreatedAt: epoch})
		require.NoError(t, err)
		require.Equal(t, q.ID, retry.MessageID)
		_, err = b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Routing: jam.RoutingQueue, MessageID: note.ID, CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrInvalid, "a note has no turn of its own")

		all, err := b.st.MessageList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		var seqs []int64
		var routings []jam.Routing
		for _, m := range all {
			seqs = append(seqs, m.Seq)
			routings = append(routings, m.Routing)
		}
		require.Equal(t, []int64{1, 2, 3, 4, 5}, seqs)
		require.Equal(t, []jam.Routing{jam.RoutingNote, jam.RoutingQueue, jam.RoutingQueue, jam.RoutingSteer, jam.RoutingQueue}, routings)
		require.Equal(t, retry.ID, all[1].TurnID, "the message names its latest turn")
		_, err = b.st.MessageGet(ctx, "ws_other", q.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's message is not found")
	})
}
