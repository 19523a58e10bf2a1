package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestMigration_executions opens a database written before executions were
// recorded (migration 0010), with a turn running on a live lease, and
// checks that the old turn has no executions, still ends (there is no
// execution to end), and that the next turn's attempt is recorded.
func TestMigration_executions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	migs := embedded(t)
	before := -1
	for i, m := range migs {
		if m.Name == "executions" {
			before = i
		}
	}
	require.Positive(t, before, "migration executions is embedded")
	cfg := Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour}

	minter := jam.NewMinter(nil, nil)
	ws, sess, turn, lease := jam.New[jam.WorkspaceID](minter), jam.New[jam.SessionID](minter), jam.New[jam.TurnID](minter), jam.New[jam.LeaseID](minter)
	tmpl := jam.New[jam.TemplateID](minter)
	at := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	old, err := open(ctx, cfg, migs[:before])
	require.NoError(t, err)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO runtime_sessions (id, workspace_id, template_id, profile, scope, room_id, lifecycle, provider_thread, created_at, updated_at)
VALUES (?, ?, ?, 'p', 'a', '0190a1b2-0000-4000-8000-0000000000aa', 'open', '', ?, ?)`, []any{sess, ws, tmpl, at.UnixMicro(), at.UnixMicro()}},
		{`INSERT INTO leases (id, workspace_id, holder, generation, state, reason, pid, started_at, ended_at) VALUES (?, ?, ?, 1, 'live', '', 99, ?, NULL)`,
			[]any{lease, ws, tmpl, at.UnixMicro()}},
		{`INSERT INTO turns (id, workspace_id, session_id, seq, routing, source_message_id, state, reason, lease_id, lease_generation, created_at, updated_at)
VALUES (?, ?, ?, 1, 'queue', '0190a1b2-0000-4000-8000-000000000001', 'running', '', ?, 1, ?, ?)`, []any{turn, ws, sess, lease, at.UnixMicro(), at.UnixMicro()}},
	} {
		_, err := old.writer.ExecContext(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	require.NoError(t, old.Close())

	st, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })

	execs, err := st.ExecutionList(ctx, ws, turn)
	require.NoError(t, err)
	require.Empty(t, execs, "a turn recorded before the migration has no executions")
	tr, err := st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: ws, ID: turn, From: jam.TurnRunning, To: jam.TurnSucceeded, Reason: "end_turn",
		LeaseID: lease, LeaseGeneration: 1, At: at.Add(time.Second)})
	require.NoError(t, err, "the old turn still ends")
	require.Equal(t, jam.TurnSucceeded, tr.State)
	execs, err = st.ExecutionList(ctx, ws, turn)
	require.NoError(t, err)
	require.Empty(t, execs)

	next, err := st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](minter), WorkspaceID: ws, SessionID: sess, Routing: jam.RoutingQueue, CreatedAt: at})
	require.NoError(t, err)
	exec := jam.New[jam.ExecutionID](minter)
	_, err = st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: ws, ID: next.ID, From: jam.TurnQueued, To: jam.TurnPreparing,
		LeaseID: lease, LeaseGeneration: 1, At: at.Add(2 * time.Second), Execution: exec})
	require.NoError(t, err)
	execs, err = st.ExecutionList(ctx, ws, next.ID)
	require.NoError(t, err)
	require.Len(t, execs, 1)
	require.Equal(t, []any{exec, lease, int64(1), 99, store.ExecutionRunning}, []any{execs[0].ID, execs[0].LeaseID, execs[0].LeaseGeneration, execs[0].Pid, execs[0].State})
}

// TestQueries_executionsUseIndexes keeps the execution statements, which
// run with every start and end of a turn, and the usage report, off full
// scans of executions.
func TestQueries_executionsUseIndexes(t *testing.T) {
	t.Parallel()
	st := setup(t).st
	for _, q := range []struct {
		name, query string
		args        int
	}{
		{"execution end", executionEnd, 12},
		{"execution list", executionOfTurn, 2},
		{"usage total", usageTotal, 2},
		{"usage by agent", usageGroupQuery(usageKeys[store.UsageByAgent]), 3},
		{"usage by room", usageGroupQuery(usageKeys[store.UsageByRoom]), 3},
		{"usage by session", usageGroupQuery(usageKeys[store.UsageBySession]), 3},
		{"usage by day", usageGroupQuery(usageKeys[store.UsageByDay]), 3},
	} {
		args := make([]any, q.args)
		for i := range args {
			args[i] = "x"
		}
		for _, line := range explain(t.Context(), t, st, q.query, args...) {
			fields := strings.Fields(line)
			if len(fields) >= 2 && fields[0] == "SCAN" && fields[1] == "executions" && !strings.Contains(line, "USING") {
				t.Fatalf("full scan in plan of %s: %s", q.name, line)
			}
		}
	}
}
