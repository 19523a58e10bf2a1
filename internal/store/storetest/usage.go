package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// usageLane is one session of an agent, with a live lease for its turns.
type usageLane struct {
	sess  store.Session
	lease store.Lease
}

// lane makes a session of peer in room (its template made on first use)
// and starts a lease for it.
func (b *execBundle) lane(t *testing.T, peer jam.PeerKey, room jam.RoomID, templates map[jam.PeerKey]store.Template) usageLane {
	t.Helper()
	ctx := t.Context()
	tm, ok := templates[peer]
	if !ok {
		var err error
		tm, err = b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: peer, Desired: demoConfig(), CreatedAt: epoch})
		require.NoError(t, err)
		templates[peer] = tm
	}
	s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: peer, Room: room, CreatedAt: epoch})
	require.NoError(t, err)
	l, err := b.st.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: string(s.ID), Pid: 1, At: epoch})
	require.NoError(t, err)
	return usageLane{sess: s, lease: l}
}

// templates maps the bundle's peer to its template.
func (b *execBundle) templates() map[jam.PeerKey]store.Template {
	return map[jam.PeerKey]store.Template{b.peer.Key: b.tm}
}

// runTurn runs a new turn of the lane from queued to end at at, ending it
// with u; it returns the turn.
func (b *execBundle) runTurn(t *testing.T, ln usageLane, end jam.TurnState, at time.Time, u *store.ExecutionUsage) jam.TurnID {
	t.Helper()
	ctx := t.Context()
	tr, err := b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: ln.sess.ID, Routing: jam.RoutingQueue,
		SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: at})
	require.NoError(t, err)
	for _, mv := range []store.TurnTransitionParams{
		{From: jam.TurnQueued, To: jam.TurnPreparing, Execution: jam.New[jam.ExecutionID](b.minter)},
		{From: jam.TurnPreparing, To: jam.TurnRunning},
		{From: jam.TurnRunning, To: end, Reason: "end_turn", Usage: u},
	} {
		mv.WorkspaceID, mv.ID, mv.LeaseID, mv.LeaseGeneration, mv.At = b.ws, tr.ID, ln.lease.ID, ln.lease.Generation, at
		_, err := b.st.TurnTransition(ctx, mv)
		require.NoError(t, err)
	}
	return tr.ID
}

// exerciseUsage covers the usage an execution's end records and the
// report that sums it.
func exerciseUsage(t *testing.T, open func(t *testing.T) store.Store) {
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
