package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func demoConfig() store.TemplateConfig {
	return store.TemplateConfig{Harness: "acp", Command: []string{"jam", "demo-agent"}, Placement: jam.PlacementShared, Permission: "allow"}
}

// exerciseRuntime covers [store.Runtime].
func exerciseRuntime(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }
	template := func(t *testing.T, b *msgBundle) store.Template {
		t.Helper()
		tm, err := b.st.TemplatePut(t.Context(), store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: b.peer.Key, Desired: demoConfig(), CreatedAt: epoch})
		require.NoError(t, err)
		return tm
	}
	session := func(t *testing.T, b *msgBundle, tm store.Template, room jam.RoomID) store.Session {
		t.Helper()
		s, err := b.st.SessionCreate(t.Context(), store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key, Room: room, CreatedAt: epoch})
		require.NoError(t, err)
		return s
	}
	lease := func(t *testing.T, b *msgBundle, holder string) store.Lease {
		t.Helper()
		l, err := b.st.LeaseAcquire(t.Context(), store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: holder, Pid: 42, At: epoch})
		require.NoError(t, err)
		return l
	}
	enqueue := func(t *testing.T, b *msgBundle, s store.Session) store.Turn {
		t.Helper()
		tr, err := b.st.TurnEnqueue(t.Context(), store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Routing: jam.RoutingQueue, SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: epoch})
		require.NoError(t, err)
		return tr
	}

	t.Run("Template_desiredAndEffectiveGenerations", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		require.Equal(t, int64(1), tm.DesiredGeneration)
		require.Zero(t, tm.EffectiveGeneration)
		require.True(t, tm.Outstanding(), "nothing has run with the new template")
		require.Equal(t, demoConfig(), tm.Desired)

		_, err := b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: b.peer.Key, Desired: demoConfig(), CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "one template per peer")

		tm, err = b.st.TemplateApplied(ctx, b.ws, tm.ID, 1, epoch)
		require.NoError(t, err)
		require.False(t, tm.Outstanding())
		require.Empty(t, tm.PendingChange)
		require.Equal(t, demoConfig(), tm.Effective)

		// Two changes while nothing runs: both are pending, and applying
		// an older generation is refused.
		c := demoConfig()
		c.Model = "m1"
		_, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: c, Change: "model=m1", At: epoch})
		require.NoError(t, err)
		c.Permission = "reject"
		tm, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: c, Change: "permission=reject", At: epoch})
		require.NoError(t, err)
		require.Equal(t, int64(3), tm.DesiredGeneration)
		require.Equal(t, int64(1), tm.EffectiveGeneration)
		require.Equal(t, "model=m1; permission=reject", tm.PendingChange)
		require.Equal(t, "", tm.Effective.Model, "effective is what last ran")
		_, err = b.st.TemplateApplied(ctx, b.ws, tm.ID, 2, epoch)
		require.ErrorIs(t, err, jam.ErrConflict)
		got, err := b.st.TemplateForPeer(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		require.True(t, got.Outstanding(), "the pending change survives (a restart reads it back)")
		tm, err = b.st.TemplateApplied(ctx, b.ws, tm.ID, 3, epoch)
		require.NoError(t, err)
		require.Equal(t, c, tm.Effective)

		bad := demoConfig()
		bad.Placement = "everywhere"
		_, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: bad, Change: "x", At: epoch})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = b.st.TemplateGet(ctx, b.other, tm.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's template")
		list, err := b.st.TemplateList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("Session_oneOpenPerRoom", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		room := newUUID[jam.RoomID]()
		s := session(t, b, tm, room)
		require.Equal(t, jam.SessionOpen, s.Lifecycle)
		_, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key, Room: room, CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		other := session(t, b, tm, newUUID[jam.RoomID]())
		require.NotEqual(t, s.ID, other.ID)

		require.NoError(t, b.st.SessionSetThread(ctx, b.ws, s.ID, "demo-1234", epoch))
		got, err := b.st.SessionForRoom(ctx, b.ws, b.peer.Key, room)
		require.NoError(t, err)
		require.Equal(t, "demo-1234", got.ProviderThread)
		require.Equal(t, tm.ID, got.TemplateID)
		all, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, all, 2)
		_, err = b.st.SessionGet(ctx, b.other, s.ID)
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Session_overrides", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		plain := session(t, b, tm, newUUID[jam.RoomID]())
		require.True(t, plain.Overrides.IsZero(), "a session without overrides runs the template as is")
		ov := store.SessionOverrides{Command: []string{"agent", "--fast"}, Repo: "/srv/other"}
		s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
			Room: newUUID[jam.RoomID](), Overrides: ov, CreatedAt: epoch})
		require.NoError(t, err)
		require.Equal(t, ov, s.Overrides)
		all, err := b.st.SessionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, ov, all[1].Overrides, "read back by every query")
		require.True(t, all[0].Overrides.IsZero())
		for name, bad := range map[string]store.SessionOverrides{
			"relative repository": {Repo: "src/other"},
			"blank program":       {Command: []string{"", "x"}},
			"NUL in an argument":  {Command: []string{"agent", "a\x00b"}},
		} {
			_, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
				Room: newUUID[jam.RoomID](), Overrides: bad, CreatedAt: epoch})
			require.ErrorIs(t, err, jam.ErrInvalid, name)
		}
	})

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

	t.Run("Lease_generationsPerHolder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		a1, other := lease(t, b, "holder-a"), lease(t, b, "holder-b")
		a2 := lease(t, b, "holder-a")
		require.Equal(t, []int64{1, 1, 2}, []int64{a1.Generation, other.Generation, a2.Generation})
		require.ErrorIs(t, b.st.LeaseEnd(ctx, b.ws, a1.ID, "x", epoch), jam.ErrConflict, "replaced already")
		require.NoError(t, b.st.LeaseEnd(ctx, b.ws, a2.ID, jam.ReasonProcessExited, epoch))
		_, err := b.st.LeaseLive(ctx, b.ws, "holder-a")
		require.ErrorIs(t, err, jam.ErrNotFound)
		a3 := lease(t, b, "holder-a")
		require.Equal(t, int64(3), a3.Generation, "generations never go back")
		require.ErrorIs(t, b.st.LeaseEnd(ctx, b.ws, jam.New[jam.LeaseID](b.minter), "x", epoch), jam.ErrNotFound)
	})

	t.Run("Worktree_ownedBySession", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		s := session(t, b, tm, newUUID[jam.RoomID]())
		w := store.Worktree{ID: jam.New[jam.WorktreeID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Repo: "/src/repo", Path: "/data/wt/1", Branch: "jam/s1", State: store.WorktreeActive, CreatedAt: epoch}
		got, err := b.st.WorktreePut(ctx, w)
		require.NoError(t, err)
		require.Equal(t, w.Path, got.Path)
		w.Path, w.UpdatedAt = "/data/wt/moved", epoch.Add(time.Hour)
		got, err = b.st.WorktreePut(ctx, w)
		require.NoError(t, err)
		require.Equal(t, "/data/wt/moved", got.Path, "owned by id; the path is only where it is now")
		_, err = b.st.WorktreePut(ctx, store.Worktree{ID: jam.New[jam.WorktreeID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Path: "/x", State: store.WorktreeActive, CreatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		w.State = "lost"
		_, err = b.st.WorktreePut(ctx, w)
		require.ErrorIs(t, err, jam.ErrInvalid)
	})

	t.Run("Worktree_stateMovesAndList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tm := template(t, b)
		var ids []jam.WorktreeID
		for i := range 2 {
			s := session(t, b, tm, newUUID[jam.RoomID]())
			w := store.Worktree{ID: jam.New[jam.WorktreeID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Repo: "/src/repo", Path: fmt.Sprintf("/data/wt/%d", i),
				Branch: fmt.Sprintf("jam/s%d", i), State: store.WorktreeActive, CreatedAt: epoch.Add(time.Duration(i) * time.Second)}
			_, err := b.st.WorktreePut(ctx, w)
			require.NoError(t, err)
			ids = append(ids, w.ID)
		}
		list, err := b.st.WorktreeList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, ids, []jam.WorktreeID{list[0].ID, list[1].ID}, "oldest first")
		other, err := b.st.WorktreeList(ctx, jam.New[jam.WorkspaceID](b.minter))
		require.NoError(t, err)
		require.Empty(t, other, "another workspace sees none")

		at := epoch.Add(time.Hour)
		got, err := b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: ids[0], From: store.WorktreeActive, To: store.WorktreeArchived, At: at})
		require.NoError(t, err)
		require.Equal(t, store.WorktreeArchived, got.State)
		require.Equal(t, at.UnixMicro(), got.UpdatedAt.UnixMicro())
		require.Equal(t, "jam/s0", got.Branch, "the branch is kept")
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: ids[0], From: store.WorktreeActive, To: store.WorktreeRemoved, At: at})
		require.ErrorIs(t, err, jam.ErrConflict, "moves are conditional on the state")
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: ids[0], From: store.WorktreeArchived, To: "lost", At: at})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: jam.New[jam.WorkspaceID](b.minter), ID: ids[0], From: store.WorktreeArchived, To: store.WorktreeActive, At: at})
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's worktree is not found")
		_, err = b.st.WorktreeSetState(ctx, store.WorktreeSetStateParams{WorkspaceID: b.ws, ID: jam.New[jam.WorktreeID](b.minter), From: store.WorktreeActive, To: store.WorktreeArchived, At: at})
		require.ErrorIs(t, err, jam.ErrNotFound)
		list, err = b.st.WorktreeList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []string{store.WorktreeArchived, store.WorktreeActive}, []string{list[0].State, list[1].State})
	})
}
