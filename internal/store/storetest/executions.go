package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// execBundle is a session of one template, ready for turns.
type execBundle struct {
	*msgBundle
	tm   store.Template
	sess store.Session
}

func setupExecutions(t *testing.T, open func(t *testing.T) store.Store) *execBundle {
	t.Helper()
	b := &execBundle{msgBundle: setupMessaging(t, open)}
	var err error
	b.tm, err = b.st.TemplatePut(t.Context(), store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: b.peer.Key, Desired: demoConfig(), CreatedAt: epoch})
	require.NoError(t, err)
	b.sess, err = b.st.SessionCreate(t.Context(), store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: b.tm.ID, Peer: b.peer.Key,
		Room: newUUID[jam.RoomID](), CreatedAt: epoch})
	require.NoError(t, err)
	return b
}

// lease starts the template's next lease, run by process pid.
func (b *execBundle) lease(t *testing.T, pid int) store.Lease {
	t.Helper()
	l, err := b.st.LeaseAcquire(t.Context(), store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: string(b.tm.ID), Pid: pid, At: epoch})
	require.NoError(t, err)
	return l
}

func (b *execBundle) enqueue(t *testing.T) store.Turn {
	t.Helper()
	tr, err := b.st.TurnEnqueue(t.Context(), store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: b.sess.ID, Routing: jam.RoutingQueue,
		SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: epoch})
	require.NoError(t, err)
	return tr
}

// move moves tr on l at epoch plus sec seconds, starting execution exec
// when the move is to preparing.
func (b *execBundle) move(t *testing.T, tr jam.TurnID, from, to jam.TurnState, l store.Lease, reason string, exec jam.ExecutionID, sec int) error {
	t.Helper()
	_, err := b.st.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr, From: from, To: to, Reason: reason,
		LeaseID: l.ID, LeaseGeneration: l.Generation, At: epoch.Add(time.Duration(sec) * time.Second), Execution: exec})
	return err
}

func (b *execBundle) executions(t *testing.T, tr jam.TurnID) []store.Execution {
	t.Helper()
	out, err := b.st.ExecutionList(t.Context(), b.ws, tr)
	require.NoError(t, err)
	return out
}

// executionCases covers [store.Executions]: the executions a turn's moves
// record, the usage an execution's end records and the report that sums it.
func executionCases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Execution_oneAttemptRecordedWithTheTurn", func(t *testing.T) {
		t.Parallel()
		b := setupExecutions(t, open)
		ctx := t.Context()
		tr := b.enqueue(t)
		require.Empty(t, b.executions(t, tr.ID), "a queued turn has not been attempted")
		l1 := b.lease(t, 101)
		l2 := b.lease(t, 202) // the first process was replaced

		// Refused moves to preparing record nothing: no execution id, a
		// malformed one, a stale lease generation.
		err := b.move(t, tr.ID, jam.TurnQueued, jam.TurnPreparing, l2, "", "", 1)
		require.ErrorIs(t, err, jam.ErrInvalid, "the move that starts an attempt names it")
		err = b.move(t, tr.ID, jam.TurnQueued, jam.TurnPreparing, l2, "", "exec_nope", 1)
		require.ErrorIs(t, err, jam.ErrInvalid)
		stale := jam.New[jam.ExecutionID](b.minter)
		err = b.move(t, tr.ID, jam.TurnQueued, jam.TurnPreparing, l1, "", stale, 1)
		require.ErrorIs(t, err, jam.ErrLeaseLost)
		require.Empty(t, b.executions(t, tr.ID), "a refused move leaves no execution behind")
		got, err := b.st.TurnGet(ctx, b.ws, tr.ID)
		require.NoError(t, err)
		require.Equal(t, jam.TurnQueued, got.State)

		exec := jam.New[jam.ExecutionID](b.minter)
		require.NoError(t, b.move(t, tr.ID, jam.TurnQueued, jam.TurnPreparing, l2, "", exec, 2))
		execs := b.executions(t, tr.ID)
		require.Len(t, execs, 1)
		e := execs[0]
		require.Equal(t, exec, e.ID)
		require.Equal(t, b.ws, e.WorkspaceID)
		require.Equal(t, b.sess.ID, e.SessionID)
		require.Equal(t, tr.ID, e.TurnID)
		require.Equal(t, l2.ID, e.LeaseID)
		require.Equal(t, int64(2), e.LeaseGeneration)
		require.Equal(t, 202, e.Pid, "the lease's process")
		require.Equal(t, store.ExecutionRunning, e.State)
		require.Empty(t, e.Outcome)
		require.Empty(t, e.Reason)
		requireTime(t, epoch.Add(2*time.Second), e.StartedAt)
		require.True(t, e.EndedAt.IsZero())

		// Later moves of the active turn carry no new attempt.
		require.NoError(t, b.move(t, tr.ID, jam.TurnPreparing, jam.TurnRunning, l2, "", jam.New[jam.ExecutionID](b.minter), 3))
		require.Len(t, b.executions(t, tr.ID), 1)

		// A refused end leaves the attempt running; the accepted one ends
		// it in the same transaction as the turn.
		err = b.move(t, tr.ID, jam.TurnRunning, jam.TurnSucceeded, l1, "end_turn", "", 4)
		require.ErrorIs(t, err, jam.ErrLeaseLost)
		require.Equal(t, store.ExecutionRunning, b.executions(t, tr.ID)[0].State)
		require.NoError(t, b.move(t, tr.ID, jam.TurnRunning, jam.TurnSucceeded, l2, "end_turn", "", 5))
		execs = b.executions(t, tr.ID)
		require.Len(t, execs, 1)
		e = execs[0]
		require.Equal(t, store.ExecutionEnded, e.State)
		require.Equal(t, jam.TurnSucceeded, e.Outcome)
		require.Equal(t, "end_turn", e.Reason)
		requireTime(t, epoch.Add(5*time.Second), e.EndedAt)
		requireTime(t, epoch.Add(2*time.Second), e.StartedAt)

		// An execution id names one attempt: reusing it is refused, and
		// the turn that tried stays queued.
		next := b.enqueue(t)
		err = b.move(t, next.ID, jam.TurnQueued, jam.TurnPreparing, l2, "", exec, 6)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		got, err = b.st.TurnGet(ctx, b.ws, next.ID)
		require.NoError(t, err)
		require.Equal(t, jam.TurnQueued, got.State, "the turn's move was rolled back with the execution")
		require.Empty(t, b.executions(t, next.ID))

		other, err := b.st.ExecutionList(ctx, b.other, tr.ID)
		require.NoError(t, err)
		require.Empty(t, other, "another workspace sees none")
	})

	t.Run("Execution_endsWithTheTurnsTerminalMove", func(t *testing.T) {
		t.Parallel()
		type step struct {
			from, to jam.TurnState
			reason   string
		}
		tests := []struct {
			name      string
			steps     []step
			leaseDies bool // the lease ends before the last step
			outcome   jam.TurnState
			reason    string
		}{
			{name: "succeeded", steps: []step{{jam.TurnPreparing, jam.TurnRunning, ""}, {jam.TurnRunning, jam.TurnSucceeded, "end_turn"}},
				outcome: jam.TurnSucceeded, reason: "end_turn"},
			{name: "failed while preparing", steps: []step{{jam.TurnPreparing, jam.TurnFailed, "message_gone"}},
				outcome: jam.TurnFailed, reason: "message_gone"},
			{name: "cancelled", steps: []step{{jam.TurnPreparing, jam.TurnRunning, ""}, {jam.TurnRunning, jam.TurnCancelling, jam.ReasonCancelledByUser},
				{jam.TurnCancelling, jam.TurnCancelled, jam.ReasonCancelledByUser}}, outcome: jam.TurnCancelled, reason: jam.ReasonCancelledByUser},
			{name: "interrupted after the lease died", steps: []step{{jam.TurnPreparing, jam.TurnRunning, ""}, {jam.TurnRunning, jam.TurnInterrupted, jam.ReasonProcessExited}},
				leaseDies: true, outcome: jam.TurnInterrupted, reason: jam.ReasonProcessExited},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setupExecutions(t, open)
				l := b.lease(t, 7)
				tr := b.enqueue(t)
				require.NoError(t, b.move(t, tr.ID, jam.TurnQueued, jam.TurnPreparing, l, "", jam.New[jam.ExecutionID](b.minter), 1))
				for i, s := range tt.steps {
					last := i == len(tt.steps)-1
					if last && tt.leaseDies {
						require.NoError(t, b.st.LeaseEnd(t.Context(), b.ws, l.ID, jam.ReasonProcessExited, epoch.Add(time.Minute)))
					}
					require.Equal(t, store.ExecutionRunning, b.executions(t, tr.ID)[0].State, "running until the turn ends (before %s)", s.to)
					require.NoError(t, b.move(t, tr.ID, s.from, s.to, l, s.reason, "", 2+i))
				}
				execs := b.executions(t, tr.ID)
				require.Len(t, execs, 1)
				require.Equal(t, store.ExecutionEnded, execs[0].State)
				require.Equal(t, tt.outcome, execs[0].Outcome)
				require.Equal(t, tt.reason, execs[0].Reason)
				requireTime(t, epoch.Add(time.Duration(1+len(tt.steps))*time.Second), execs[0].EndedAt)
			})
		}
	})

	t.Run("Execution_onePerAttemptAcrossLeases", func(t *testing.T) {
		t.Parallel()
		b := setupExecutions(t, open)
		ctx := t.Context()
		// A queued turn cancelled before any attempt has no execution.
		never := b.enqueue(t)
		_, err := b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: never.ID, From: jam.TurnQueued, To: jam.TurnCancelled,
			Reason: jam.ReasonCancelledByUser, At: epoch})
		require.NoError(t, err)
		require.Empty(t, b.executions(t, never.ID))

		// The process dies mid-turn: the turn ends interrupted on the old
		// lease, and the turn that answers its message again runs on the
		// next one.
		l1 := b.lease(t, 11)
		first, second := b.enqueue(t), b.enqueue(t)
		require.NoError(t, b.move(t, first.ID, jam.TurnQueued, jam.TurnPreparing, l1, "", jam.New[jam.ExecutionID](b.minter), 1))
		require.NoError(t, b.move(t, first.ID, jam.TurnPreparing, jam.TurnRunning, l1, "", "", 2))
		l2 := b.lease(t, 22)
		require.NoError(t, b.move(t, first.ID, jam.TurnRunning, jam.TurnInterrupted, l1, jam.ReasonProcessExited, "", 3))
		require.NoError(t, b.move(t, second.ID, jam.TurnQueued, jam.TurnPreparing, l2, "", jam.New[jam.ExecutionID](b.minter), 4))
		require.NoError(t, b.move(t, second.ID, jam.TurnPreparing, jam.TurnRunning, l2, "", "", 5))
		require.NoError(t, b.move(t, second.ID, jam.TurnRunning, jam.TurnSucceeded, l2, "end_turn", "", 6))

		for _, c := range []struct {
			turn    jam.TurnID
			lease   store.Lease
			pid     int
			outcome jam.TurnState
			reason  string
		}{{first.ID, l1, 11, jam.TurnInterrupted, jam.ReasonProcessExited}, {second.ID, l2, 22, jam.TurnSucceeded, "end_turn"}} {
			execs := b.executions(t, c.turn)
			require.Len(t, execs, 1, "one attempt of %s", c.turn)
			e := execs[0]
			require.Equal(t, []any{c.lease.ID, c.lease.Generation, c.pid, store.ExecutionEnded, c.outcome, c.reason},
				[]any{e.LeaseID, e.LeaseGeneration, e.Pid, e.State, e.Outcome, e.Reason})
		}
		require.NotEqual(t, b.executions(t, first.ID)[0].ID, b.executions(t, second.ID)[0].ID)
	})

	t.Run("ExecutionUsage_storedWithTheEnd", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			end  jam.TurnState
			u    *store.ExecutionUsage
			want store.ExecutionUsage
		}{
			{name: "reported cost", end: jam.TurnSucceeded,
				u:    &store.ExecutionUsage{InputTokens: 1200, OutputTokens: 345, CachedTokens: 6789, ReasoningTokens: 12, CostMicros: 4321, CostKnown: true, Model: "claude-sonnet-4-5"},
				want: store.ExecutionUsage{InputTokens: 1200, OutputTokens: 345, CachedTokens: 6789, ReasoningTokens: 12, CostMicros: 4321, CostKnown: true, Model: "claude-sonnet-4-5"}},
			{name: "estimated cost", end: jam.TurnFailed,
				u:    &store.ExecutionUsage{InputTokens: 1, OutputTokens: 2, CostMicros: 3, CostKnown: true, CostEstimated: true, Model: "gpt-5"},
				want: store.ExecutionUsage{InputTokens: 1, OutputTokens: 2, CostMicros: 3, CostKnown: true, CostEstimated: true, Model: "gpt-5"}},
			{name: "unknown cost", end: jam.TurnInterrupted,
				u:    &store.ExecutionUsage{InputTokens: 10, OutputTokens: 20, Model: "unpriced"},
				want: store.ExecutionUsage{InputTokens: 10, OutputTokens: 20, Model: "unpriced"}},
			{name: "known cost of zero", end: jam.TurnSucceeded,
				u:    &store.ExecutionUsage{InputTokens: 5, CostKnown: true},
				want: store.ExecutionUsage{InputTokens: 5, CostKnown: true}},
			{name: "nothing reported", end: jam.TurnSucceeded},
			{name: "zero usage", end: jam.TurnCancelled, u: &store.ExecutionUsage{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setupExecutions(t, open)
				ln := b.lane(t, b.peer.Key, newUUID[jam.RoomID](), b.templates())
				if tt.end == jam.TurnCancelled {
					// Cancelled passes through cancelling, which carries no usage.
					tr := b.runTurn(t, ln, jam.TurnCancelling, epoch, nil)
					_, err := b.st.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr, From: jam.TurnCancelling, To: jam.TurnCancelled,
						LeaseID: ln.lease.ID, LeaseGeneration: ln.lease.Generation, At: epoch, Usage: tt.u})
					require.NoError(t, err)
					require.Equal(t, tt.want, b.executions(t, tr)[0].Usage)
					return
				}
				tr := b.runTurn(t, ln, tt.end, epoch, tt.u)
				execs := b.executions(t, tr)
				require.Len(t, execs, 1)
				require.Equal(t, store.ExecutionEnded, execs[0].State)
				require.Equal(t, tt.want, execs[0].Usage)
			})
		}
	})

	t.Run("ExecutionUsage_refused", func(t *testing.T) {
		t.Parallel()
		b := setupExecutions(t, open)
		ln := b.lane(t, b.peer.Key, newUUID[jam.RoomID](), b.templates())
		tr, err := b.st.TurnEnqueue(t.Context(), store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: ln.sess.ID, Routing: jam.RoutingQueue,
			SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: epoch})
		require.NoError(t, err)
		p := store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: jam.TurnQueued, To: jam.TurnPreparing, Execution: jam.New[jam.ExecutionID](b.minter),
			LeaseID: ln.lease.ID, LeaseGeneration: ln.lease.Generation, At: epoch, Usage: &store.ExecutionUsage{InputTokens: 1}}
		_, err = b.st.TurnTransition(t.Context(), p)
		require.ErrorIs(t, err, jam.ErrInvalid, "only a terminal move carries usage")
		p.Usage = nil
		_, err = b.st.TurnTransition(t.Context(), p)
		require.NoError(t, err)
		for _, bad := range []store.ExecutionUsage{
			{InputTokens: -1}, {OutputTokens: -1}, {CachedTokens: -1}, {ReasoningTokens: -1},
			{CostMicros: -1, CostKnown: true}, {CostMicros: 5}, {CostEstimated: true}, {Model: "a\x00b"}, {Model: strings.Repeat("m", store.UsageModelMax+1)},
		} {
			_, err = b.st.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: jam.TurnPreparing, To: jam.TurnFailed,
				LeaseID: ln.lease.ID, LeaseGeneration: ln.lease.Generation, At: epoch, Usage: &bad})
			require.ErrorIs(t, err, jam.ErrInvalid, "%+v", bad)
		}
		got := b.executions(t, tr.ID)
		require.Equal(t, store.ExecutionRunning, got[0].State, "a refused end changes nothing")
		require.Zero(t, got[0].Usage)
		// A fenced-out end writes no usage either.
		_, err = b.st.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: jam.TurnPreparing, To: jam.TurnFailed,
			LeaseID: ln.lease.ID, LeaseGeneration: ln.lease.Generation + 1, At: epoch, Usage: &store.ExecutionUsage{InputTokens: 9}})
		require.ErrorIs(t, err, jam.ErrLeaseLost)
		require.Zero(t, b.executions(t, tr.ID)[0].Usage)
	})

	t.Run("ExecutionUsage_neverRewritten", func(t *testing.T) {
		t.Parallel()
		b := setupExecutions(t, open)
		ctx := t.Context()
		ln := b.lane(t, b.peer.Key, newUUID[jam.RoomID](), b.templates())
		first := store.ExecutionUsage{InputTokens: 100, OutputTokens: 7, CostMicros: 90, CostKnown: true, Model: "m1"}
		tr := b.runTurn(t, ln, jam.TurnFailed, epoch, &first)
		// The turn is ended: no move of it is accepted, so its usage stays.
		for _, to := range []jam.TurnState{jam.TurnSucceeded, jam.TurnInterrupted, jam.TurnCancelled} {
			_, err := b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr, From: jam.TurnFailed, To: to,
				LeaseID: ln.lease.ID, LeaseGeneration: ln.lease.Generation, At: epoch.Add(time.Second), Usage: &store.ExecutionUsage{InputTokens: 1}})
			require.Error(t, err)
		}
		// Another turn's end on the same lease leaves it too.
		b.runTurn(t, ln, jam.TurnSucceeded, epoch.Add(time.Second), &store.ExecutionUsage{InputTokens: 5})
		require.Equal(t, first, b.executions(t, tr)[0].Usage)
	})

	t.Run("UsageReport_groupsInTheQuery", func(t *testing.T) {
		t.Parallel()
		b := setupExecutions(t, open)
		ctx := t.Context()
		tms := b.templates()
		other := b.putPeer(t, b.ws, b.acct, "b").Key
		r1, r2 := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		a1, a2, b1 := b.lane(t, b.peer.Key, r1, tms), b.lane(t, b.peer.Key, r2, tms), b.lane(t, other, r1, tms)
		day2 := epoch.Add(24 * time.Hour)
		b.runTurn(t, a1, jam.TurnSucceeded, epoch, &store.ExecutionUsage{InputTokens: 100, OutputTokens: 10, CachedTokens: 5, ReasoningTokens: 2, CostMicros: 1500, CostKnown: true})
		b.runTurn(t, a1, jam.TurnInterrupted, epoch, &store.ExecutionUsage{InputTokens: 50, OutputTokens: 5})
		b.runTurn(t, a1, jam.TurnSucceeded, day2, &store.ExecutionUsage{InputTokens: 7, OutputTokens: 3, Model: "unpriced"})
		b.runTurn(t, a2, jam.TurnSucceeded, epoch, &store.ExecutionUsage{InputTokens: 1000, OutputTokens: 100, CostMicros: 2000, CostKnown: true, CostEstimated: true})
		b.runTurn(t, b1, jam.TurnSucceeded, day2, &store.ExecutionUsage{InputTokens: 1, OutputTokens: 1, CostMicros: 10, CostKnown: true})
		b.runTurn(t, b1, jam.TurnFailed, day2, nil) // an attempt that reported nothing still counts as a turn
		// A turn still running has recorded nothing: not counted yet.
		running, err := b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: a2.sess.ID, Routing: jam.RoutingQueue,
			SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: day2})
		require.NoError(t, err)
		_, err = b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: running.ID, From: jam.TurnQueued, To: jam.TurnPreparing,
			Execution: jam.New[jam.ExecutionID](b.minter), LeaseID: a2.lease.ID, LeaseGeneration: a2.lease.Generation, At: day2})
		require.NoError(t, err)

		report := func(by store.UsageBy, since time.Time) store.UsageReport {
			t.Helper()
			r, err := b.st.UsageReport(ctx, store.UsageQuery{WorkspaceID: b.ws, By: by, Since: since})
			require.NoError(t, err)
			require.False(t, r.Truncated)
			return r
		}
		sumA1 := store.UsageSum{Turns: 3, InputTokens: 157, OutputTokens: 18, CachedTokens: 5, ReasoningTokens: 2, CostMicros: 1500, Costed: 1, Unpriced: 2}
		sumA2 := store.UsageSum{Turns: 1, InputTokens: 1000, OutputTokens: 100, CostMicros: 2000, Costed: 1, Estimated: 1}
		sumB1 := store.UsageSum{Turns: 2, InputTokens: 1, OutputTokens: 1, CostMicros: 10, Costed: 1}
		total := store.UsageSum{Turns: 6, InputTokens: 1158, OutputTokens: 119, CachedTokens: 5, ReasoningTokens: 2, CostMicros: 3510, Costed: 3, Estimated: 1, Unpriced: 2}
		plus := func(x, y store.UsageSum) store.UsageSum {
			return store.UsageSum{Turns: x.Turns + y.Turns, InputTokens: x.InputTokens + y.InputTokens, OutputTokens: x.OutputTokens + y.OutputTokens,
				CachedTokens: x.CachedTokens + y.CachedTokens, ReasoningTokens: x.ReasoningTokens + y.ReasoningTokens, CostMicros: x.CostMicros + y.CostMicros,
				Costed: x.Costed + y.Costed, Estimated: x.Estimated + y.Estimated, Unpriced: x.Unpriced + y.Unpriced}
		}

		r := report(store.UsageByAgent, time.Time{})
		require.Equal(t, []store.UsageRow{{Peer: b.peer.Key, UsageSum: plus(sumA1, sumA2)}, {Peer: other, UsageSum: sumB1}}, r.Rows)
		require.Equal(t, total, r.Total)

		r = report(store.UsageByRoom, time.Time{})
		rooms := map[jam.RoomID]store.UsageSum{}
		for _, row := range r.Rows {
			require.Empty(t, row.Peer)
			rooms[row.Room] = row.UsageSum
		}
		require.Equal(t, map[jam.RoomID]store.UsageSum{r1: plus(sumA1, sumB1), r2: sumA2}, rooms)
		require.Equal(t, total, r.Total)

		r = report(store.UsageBySession, time.Time{})
		sessions := map[jam.SessionID]store.UsageSum{}
		for _, row := range r.Rows {
			sessions[row.Session] = row.UsageSum
		}
		require.Equal(t, map[jam.SessionID]store.UsageSum{a1.sess.ID: sumA1, a2.sess.ID: sumA2, b1.sess.ID: sumB1}, sessions)

		r = report(store.UsageByDay, time.Time{})
		require.Len(t, r.Rows, 2)
		requireTime(t, time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC), r.Rows[0].Day)
		requireTime(t, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC), r.Rows[1].Day)
		require.Equal(t, store.UsageSum{Turns: 3, InputTokens: 1150, OutputTokens: 115, CachedTokens: 5, ReasoningTokens: 2, CostMicros: 3500, Costed: 2, Estimated: 1, Unpriced: 1}, r.Rows[0].UsageSum)
		require.Equal(t, store.UsageSum{Turns: 3, InputTokens: 8, OutputTokens: 4, CostMicros: 10, Costed: 1, Unpriced: 1}, r.Rows[1].UsageSum)

		// Since keeps what started at or after it.
		r = report(store.UsageByAgent, day2)
		require.Equal(t, []store.UsageRow{
			{Peer: b.peer.Key, UsageSum: store.UsageSum{Turns: 1, InputTokens: 7, OutputTokens: 3, Unpriced: 1}},
			{Peer: other, UsageSum: sumB1},
		}, r.Rows)
		require.Equal(t, int64(3), r.Total.Turns)
		r = report(store.UsageByAgent, day2.Add(time.Microsecond))
		require.Empty(t, r.Rows)
		require.Zero(t, r.Total)

		// Another workspace sees none of it.
		r, err = b.st.UsageReport(ctx, store.UsageQuery{WorkspaceID: b.other, By: store.UsageByRoom})
		require.NoError(t, err)
		require.Empty(t, r.Rows)
		require.Zero(t, r.Total)

		_, err = b.st.UsageReport(ctx, store.UsageQuery{WorkspaceID: b.ws, By: "model"})
		require.ErrorIs(t, err, jam.ErrInvalid)
	})
}
