package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// runtimeWorld is a workspace with one agent's template and one session,
// seen through two handles (two pools, as two daemons would have).
type runtimeWorld struct {
	a, b    *Store
	m       *jam.Minter
	ws      jam.WorkspaceID
	tm      store.Template
	session store.Session
}

func newRuntimeWorld(t *testing.T) *runtimeWorld {
	t.Helper()
	open := sealedOpener(t)
	w := &runtimeWorld{a: open(t), b: open(t), m: jam.NewMinter(nil, nil)}
	ctx := t.Context()
	ws, err := w.a.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](w.m), Name: "ws", At: at})
	require.NoError(t, err)
	w.ws = ws.ID
	peer := jam.PeerKey{Profile: "p", Scope: "a"}
	w.tm, err = w.a.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](w.m), WorkspaceID: w.ws, Peer: peer,
		Desired: store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Placement: jam.PlacementShared, Permission: "allow"}, CreatedAt: at})
	require.NoError(t, err)
	w.session, err = w.a.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](w.m), WorkspaceID: w.ws, TemplateID: w.tm.ID, Peer: peer, Room: newUUID[jam.RoomID](), CreatedAt: at})
	require.NoError(t, err)
	return w
}

// handle is a or b by i's parity.
func (w *runtimeWorld) handle(i int) *Store {
	if i%2 == 0 {
		return w.a
	}
	return w.b
}

func (w *runtimeWorld) lease(t *testing.T, st *Store) store.Lease {
	t.Helper()
	l, err := st.LeaseAcquire(t.Context(), store.LeaseAcquireParams{WorkspaceID: w.ws, ID: jam.New[jam.LeaseID](w.m), Holder: string(w.tm.ID), Pid: 42, At: at})
	require.NoError(t, err)
	return l
}

func (w *runtimeWorld) enqueue(t *testing.T, st *Store) store.Turn {
	t.Helper()
	tr, err := st.TurnEnqueue(t.Context(), store.Turn{ID: jam.New[jam.TurnID](w.m), WorkspaceID: w.ws, SessionID: w.session.ID, Routing: jam.RoutingQueue, CreatedAt: at})
	require.NoError(t, err)
	return tr
}

func (w *runtimeWorld) move(t *testing.T, st *Store, tr store.Turn, from, to jam.TurnState, l store.Lease) (store.Turn, error) {
	t.Helper()
	return st.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: w.ws, ID: tr.ID, From: from, To: to,
		LeaseID: l.ID, LeaseGeneration: l.Generation, At: at.Add(time.Second), Execution: jam.New[jam.ExecutionID](w.m)})
}

// running is a turn moved to running on a fresh lease through st.
func (w *runtimeWorld) running(t *testing.T, st *Store) (store.Turn, store.Lease) {
	t.Helper()
	l := w.lease(t, st)
	tr := w.enqueue(t, st)
	tr, err := w.move(t, st, tr, jam.TurnQueued, jam.TurnPreparing, l)
	require.NoError(t, err)
	tr, err = w.move(t, st, tr, jam.TurnPreparing, jam.TurnRunning, l)
	require.NoError(t, err)
	return tr, l
}

// TestTurnTransition_staleLeaseAfterReplacement: once another daemon
// replaced the lease a turn runs on, the old lease's moves of the turn
// are jam.ErrLeaseLost (but the supervisor's move to interrupted), and
// so is starting a turn on it; nothing of the turn changed.
func TestTurnTransition_staleLeaseAfterReplacement(t *testing.T) {
	w := newRuntimeWorld(t)
	tr, stale := w.running(t, w.a)
	fresh := w.lease(t, w.b)
	require.Equal(t, stale.Generation+1, fresh.Generation)

	_, err := w.move(t, w.a, tr, jam.TurnRunning, jam.TurnSucceeded, stale)
	require.ErrorIs(t, err, jam.ErrLeaseLost)
	_, err = w.move(t, w.a, tr, jam.TurnRunning, jam.TurnSucceeded, fresh)
	require.ErrorIs(t, err, jam.ErrLeaseLost, "the turn is bound to the stale lease, not to its replacement")
	got, err := w.b.TurnGet(t.Context(), w.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, jam.TurnRunning, got.State)

	next := w.enqueue(t, w.a)
	_, err = w.move(t, w.a, next, jam.TurnQueued, jam.TurnCancelled, stale)
	require.NoError(t, err, "a queued turn's moves are not fenced")
	other := w.enqueue(t, w.a)
	_, err = w.move(t, w.a, other, jam.TurnQueued, jam.TurnPreparing, stale)
	require.ErrorIs(t, err, jam.ErrLeaseLost, "a turn cannot start on a replaced lease")

	got, err = w.move(t, w.b, tr, jam.TurnRunning, jam.TurnInterrupted, stale)
	require.NoError(t, err, "the supervisor records the interruption under the dead lease")
	require.Equal(t, jam.TurnInterrupted, got.State)
	_, err = w.move(t, w.a, tr, jam.TurnRunning, jam.TurnSucceeded, stale)
	require.ErrorIs(t, err, jam.ErrConflict, "a turn no longer in From")
	_, err = w.a.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: w.ws, ID: jam.New[jam.TurnID](w.m),
		From: jam.TurnRunning, To: jam.TurnSucceeded, LeaseID: stale.ID, LeaseGeneration: stale.Generation, At: at})
	require.ErrorIs(t, err, jam.ErrNotFound)

	journal, err := w.a.TurnJournal(t.Context(), w.ws, tr.ID)
	require.NoError(t, err)
	require.Len(t, journal, 4, "queued, preparing, running, interrupted: the refused moves left no entry")
}

// TestTurnTransition_staleLeaseRacesItsReplacement: a daemon moves its
// turn to succeeded while another replaces the lease; each move either
// commits before the replacement or is jam.ErrLeaseLost, and the turn's
// journal holds exactly the moves that returned no error.
func TestTurnTransition_staleLeaseRacesItsReplacement(t *testing.T) {
	w := newRuntimeWorld(t)
	for round := range 8 {
		tr, l := w.running(t, w.a)
		var wg sync.WaitGroup
		start := make(chan struct{})
		var moveErr, acqErr error
		wg.Go(func() {
			<-start
			_, moveErr = w.a.TurnTransition(t.Context(), store.TurnTransitionParams{WorkspaceID: w.ws, ID: tr.ID, From: jam.TurnRunning, To: jam.TurnSucceeded,
				LeaseID: l.ID, LeaseGeneration: l.Generation, At: at.Add(time.Second)})
		})
		wg.Go(func() {
			<-start
			_, acqErr = w.b.LeaseAcquire(t.Context(), store.LeaseAcquireParams{WorkspaceID: w.ws, ID: jam.New[jam.LeaseID](w.m), Holder: string(w.tm.ID), Pid: 7, At: at})
		})
		close(start)
		wg.Wait()
		require.NoError(t, acqErr, "round %d", round)
		got, err := w.a.TurnGet(t.Context(), w.ws, tr.ID)
		require.NoError(t, err)
		if moveErr != nil {
			require.ErrorIs(t, moveErr, jam.ErrLeaseLost, "round %d", round)
			require.Equal(t, jam.TurnRunning, got.State, "round %d", round)
			_, err = w.move(t, w.a, tr, jam.TurnRunning, jam.TurnInterrupted, l)
			require.NoError(t, err)
		} else {
			require.Equal(t, jam.TurnSucceeded, got.State, "round %d", round)
		}
	}
}

// TestLeaseAcquire_concurrentForOneHolder: acquires of one holder through
// two handles at once each replace the one before: every generation
// once, one lease live, every other ended as replaced.
func TestLeaseAcquire_concurrentForOneHolder(t *testing.T) {
	w := newRuntimeWorld(t)
	const n = 12
	got := make([]store.Lease, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = w.handle(i).LeaseAcquire(t.Context(), store.LeaseAcquireParams{WorkspaceID: w.ws, ID: jam.New[jam.LeaseID](w.m), Holder: "holder", Pid: i + 1, At: at})
		})
	}
	close(start)
	wg.Wait()
	gens := map[int64]bool{}
	for i := range n {
		require.NoError(t, errs[i], "acquire %d", i)
		gens[got[i].Generation] = true
	}
	for g := int64(1); g <= n; g++ {
		require.True(t, gens[g], "generation %d", g)
	}
	live, err := w.a.LeaseLive(t.Context(), w.ws, "holder")
	require.NoError(t, err)
	require.Equal(t, int64(n), live.Generation)
	var ended int
	require.NoError(t, w.a.pool.QueryRow(t.Context(), `SELECT COUNT(*) FROM leases WHERE holder = 'holder' AND state = 'ended' AND reason = $1`, jam.ReasonLeaseReplaced).Scan(&ended))
	require.Equal(t, n-1, ended)
}

// TestSessionAppends_concurrent: turns enqueued and messages accepted in
// one session through two handles at once are numbered 1..n each,
// without a refusal.
func TestSessionAppends_concurrent(t *testing.T) {
	w := newRuntimeWorld(t)
	const n = 16
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		st := w.handle(i)
		wg.Go(func() {
			<-start
			_, errs[i] = st.TurnEnqueue(t.Context(), store.Turn{ID: jam.New[jam.TurnID](w.m), WorkspaceID: w.ws, SessionID: w.session.ID, Routing: jam.RoutingQueue, CreatedAt: at})
		})
		wg.Go(func() {
			<-start
			_, _, errs[n+i] = st.MessageAccept(t.Context(), store.MessageAcceptParams{Message: store.SessionMessage{ID: jam.New[jam.MessageID](w.m), WorkspaceID: w.ws, SessionID: w.session.ID,
				Requested: jam.RoutingNote, Routing: jam.RoutingNote, Text: fmt.Sprintf("note %d", i), CreatedAt: at}})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "append %d", i)
	}
	turns, err := w.a.TurnList(t.Context(), w.ws, w.session.ID)
	require.NoError(t, err)
	msgs, err := w.a.MessageList(t.Context(), w.ws, w.session.ID)
	require.NoError(t, err)
	require.Len(t, turns, n)
	require.Len(t, msgs, n)
	for i := range n {
		require.Equal(t, int64(i+1), turns[i].Seq)
		require.Equal(t, int64(i+1), msgs[i].Seq)
	}
}

// TestTurnOutputAppend_concurrent: batches of one turn appended through
// two handles at once are stored one after the other: each stored batch
// is after the last one stored (else jam.ErrConflict) and counts the
// bytes of every batch before it, so the turn's bound holds.
func TestTurnOutputAppend_concurrent(t *testing.T) {
	w := newRuntimeWorld(t)
	tr, l := w.running(t, w.a)
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = w.handle(i).TurnOutputAppend(t.Context(), store.TurnOutputAppendParams{WorkspaceID: w.ws, TurnID: tr.ID, LeaseID: l.ID, LeaseGeneration: l.Generation,
				Batch: i + 1, Updates: []store.OutputUpdate{{Kind: "text", Text: "0123456789"}}, At: at})
		})
	}
	close(start)
	wg.Wait()
	stored := 0
	for i, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, jam.ErrConflict, "batch %d", i+1)
			continue
		}
		stored++
	}
	rows, err := w.a.pool.Query(t.Context(), `SELECT batch, text_bytes FROM turn_output WHERE turn_id = $1 ORDER BY batch`, tr.ID)
	require.NoError(t, err)
	var batches, texts []int64
	for rows.Next() {
		var b, tb int64
		require.NoError(t, rows.Scan(&b, &tb))
		batches, texts = append(batches, b), append(texts, tb)
	}
	require.NoError(t, rows.Err())
	require.Len(t, batches, stored)
	for k := range texts {
		require.Equal(t, int64(10*(k+1)), texts[k], "batch %d counts the text of the %d stored before it", batches[k], k)
	}
}

// TestLeaseEnd_waitsForAFencedWriteInFlight: a fenced move holds its
// lease (FOR SHARE) until it commits, so ending the lease waits for it:
// a move that saw the lease live cannot commit after the lease's end.
// The move is held mid-transaction by a lock on the turn's row taken
// from a third connection.
func TestLeaseEnd_waitsForAFencedWriteInFlight(t *testing.T) {
	w := newRuntimeWorld(t)
	ctx := t.Context()
	tr, l := w.running(t, w.a)

	// On failure the row lock is released first, then the goroutines
	// are waited for (defers run last first).
	var wg sync.WaitGroup
	defer wg.Wait()
	hold, err := w.a.pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // rolled back below; this is the failure path
	_, err = hold.Exec(ctx, `SELECT 1 FROM turns WHERE id = $1 FOR UPDATE`, tr.ID)
	require.NoError(t, err)

	waiting := func(n int) func() bool {
		return func() bool {
			var k int
			err := w.a.pool.QueryRow(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&k)
			return err == nil && k >= n
		}
	}
	var moveErr, endErr error
	wg.Go(func() {
		_, moveErr = w.move(t, w.a, tr, jam.TurnRunning, jam.TurnSucceeded, l)
	})
	require.Eventually(t, waiting(1), 10*time.Second, 5*time.Millisecond, "the move waits for the turn's row")
	ended := make(chan struct{})
	wg.Go(func() {
		defer close(ended)
		endErr = w.b.LeaseEnd(ctx, w.ws, l.ID, "test", at)
	})
	require.Eventually(t, func() bool {
		select {
		case <-ended:
			return true
		default:
			return waiting(2)()
		}
	}, 10*time.Second, 5*time.Millisecond)
	select {
	case <-ended:
		t.Fatalf("the lease ended (%v) while a move fenced on it was in flight", endErr)
	default:
	}
	require.NoError(t, hold.Rollback(ctx))
	wg.Wait()
	require.NoError(t, moveErr, "the move saw the lease live and commits before its end")
	require.NoError(t, endErr)
	got, err := w.a.TurnGet(ctx, w.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, jam.TurnSucceeded, got.State)
}

// TestRuntimeContent_sealedAtRest: a session message's text, a turn's
// detail (on the turn and its journal entry) and a turn's output are
// stored sealed, bound to their row: the stored bytes hold none of the
// text, and a value moved to another row does not open.
func TestRuntimeContent_sealedAtRest(t *testing.T) {
	w := newRuntimeWorld(t)
	ctx := t.Context()
	const secret = "the-secret-words"
	m, _, err := w.a.MessageAccept(ctx, store.MessageAcceptParams{Message: store.SessionMessage{ID: jam.New[jam.MessageID](w.m), WorkspaceID: w.ws, SessionID: w.session.ID,
		Requested: jam.RoutingNote, Routing: jam.RoutingNote, Text: secret, CreatedAt: at}})
	require.NoError(t, err)
	other, _, err := w.a.MessageAccept(ctx, store.MessageAcceptParams{Message: store.SessionMessage{ID: jam.New[jam.MessageID](w.m), WorkspaceID: w.ws, SessionID: w.session.ID,
		Requested: jam.RoutingNote, Routing: jam.RoutingNote, Text: "other", CreatedAt: at}})
	require.NoError(t, err)
	tr, l := w.running(t, w.a)
	_, err = w.a.TurnOutputAppend(ctx, store.TurnOutputAppendParams{WorkspaceID: w.ws, TurnID: tr.ID, LeaseID: l.ID, LeaseGeneration: l.Generation,
		Batch: 1, Updates: []store.OutputUpdate{{Kind: "text", Text: secret}}, At: at})
	require.NoError(t, err)
	_, err = w.a.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: w.ws, ID: tr.ID, From: jam.TurnRunning, To: jam.TurnFailed, Detail: secret,
		LeaseID: l.ID, LeaseGeneration: l.Generation, At: at})
	require.NoError(t, err)

	got, err := w.b.MessageGet(ctx, w.ws, m.ID)
	require.NoError(t, err)
	require.Equal(t, secret, got.Text)
	turn, err := w.b.TurnGet(ctx, w.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, secret, turn.Detail)
	journal, err := w.b.TurnJournal(ctx, w.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, secret, journal[len(journal)-1].Detail)
	out, err := w.b.TurnOutput(ctx, w.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, secret, out[0].Updates[0].Text)

	for _, q := range []string{
		`SELECT text FROM session_messages WHERE id = '` + string(m.ID) + `'`,
		`SELECT detail FROM turns WHERE id = '` + string(tr.ID) + `'`,
		`SELECT detail FROM turn_journal WHERE turn_id = '` + string(tr.ID) + `' ORDER BY seq DESC LIMIT 1`,
		`SELECT updates FROM turn_output WHERE turn_id = '` + string(tr.ID) + `'`,
	} {
		var raw []byte
		require.NoError(t, w.a.pool.QueryRow(ctx, q).Scan(&raw), q)
		require.NotEmpty(t, raw, q)
		require.NotContains(t, string(raw), secret, q)
	}

	// The sealed text of one message, copied onto another, does not open.
	_, err = w.a.pool.Exec(ctx, `UPDATE session_messages SET text = (SELECT text FROM session_messages WHERE id = $1) WHERE id = $2`, m.ID, other.ID)
	require.NoError(t, err)
	_, err = w.a.MessageGet(ctx, w.ws, other.ID)
	require.Error(t, err)
}

// TestRuntimePrune_inBatches: a prune whose doomed turns take several
// batches deletes them all, with their output, executions and journal,
// and keeps the newest turns.
func TestRuntimePrune_inBatches(t *testing.T) {
	w := newRuntimeWorld(t)
	ctx := t.Context()
	const n, keep = 7, 2
	for range n {
		tr, l := w.running(t, w.a)
		_, err := w.a.TurnOutputAppend(ctx, store.TurnOutputAppendParams{WorkspaceID: w.ws, TurnID: tr.ID, LeaseID: l.ID, LeaseGeneration: l.Generation,
			Batch: 1, Updates: []store.OutputUpdate{{Kind: "text", Text: "x"}}, At: at})
		require.NoError(t, err)
		_, err = w.move(t, w.a, tr, jam.TurnRunning, jam.TurnSucceeded, l)
		require.NoError(t, err)
	}
	got, err := w.b.runtimePrune(ctx, store.RuntimePruneParams{KeepTurns: keep, KeepMessages: 1, MaxOutputBytes: store.TurnOutputMaxBytes}, 2)
	require.NoError(t, err)
	// Each turn: 1 output batch, 1 execution, 4 journal entries.
	require.Equal(t, store.RuntimePruned{Turns: n - keep, Executions: n - keep, Journal: 4 * (n - keep), Output: n - keep}, got)
	turns, err := w.a.TurnList(ctx, w.ws, w.session.ID)
	require.NoError(t, err)
	require.Len(t, turns, keep)
	require.Equal(t, []int64{n - 1, n}, []int64{turns[0].Seq, turns[1].Seq})
	for _, table := range []string{"turn_output", "executions", "turn_journal"} {
		var k int
		require.NoError(t, w.a.pool.QueryRow(ctx, `SELECT COUNT(DISTINCT turn_id) FROM `+table).Scan(&k))
		require.Equal(t, keep, k, table)
	}
}

// TestSessions_roleIsChecked: the schema itself refuses a role that is
// not one of the seven (migration 0026), whatever the code passes.
func TestSessions_roleIsChecked(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	_, err := s.pool.Exec(t.Context(), sessionInsert, "sess_x", "ws_x", "tpl_x", "p", "a", "room", "open", "", int64(1), "{}", "reviewer")
	require.Equal(t, "23514", pgCode(err), "a check violation: %v", err)
	_, err = s.pool.Exec(t.Context(), sessionInsert, "sess_y", "ws_x", "tpl_x", "p", "a", "room", "open", "", int64(1), "{}", "review")
	require.NoError(t, err)
}
