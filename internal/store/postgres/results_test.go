package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestResults_updateRefusedInTheDatabase: no statement, from any code
// path, changes a stored checkpoint or change set: migration 0019's
// triggers refuse every UPDATE (the store's own methods never issue one).
func TestResults_updateRefusedInTheDatabase(t *testing.T) {
	t.Parallel()
	s := opener(t)(t)
	for _, stmt := range []string{
		`UPDATE change_sets SET patch = '\x00'::bytea, subject_digest = 'forged'`,
		`UPDATE checkpoints SET commit_id = 'forged'`,
	} {
		// The tables are empty; the trigger fires per row, so add one.
		_, err := s.pool.Exec(t.Context(), `INSERT INTO checkpoints VALUES ('snap_x', 'ws', 'sess', 1, '', 'request', '/g', 'refs/jam/checkpoints/s/1', 'c', 't', '', 0)
ON CONFLICT DO NOTHING`)
		require.NoError(t, err)
		_, err = s.pool.Exec(t.Context(), `INSERT INTO change_sets VALUES ('cs_x', 'ws', 'sess', '', 'request', 'snap_x', 'snap_x', 'c', 'c', '[]', NULL, 0, 0, 'sha256:', 0, 0, 0)
ON CONFLICT DO NOTHING`)
		require.NoError(t, err)
		_, err = s.pool.Exec(t.Context(), stmt)
		require.ErrorContains(t, err, "immutable", stmt)
	}
}

// TestOperationEvidence_appendOnlyInTheDatabase: no statement, from any
// code path, changes or removes an operation's evidence: migration 0023's
// trigger refuses every UPDATE and DELETE (the store's own methods never
// issue one).
func TestOperationEvidence_appendOnlyInTheDatabase(t *testing.T) {
	t.Parallel()
	s := opener(t)(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, `INSERT INTO workspaces (id, name, created_at) VALUES ('ws', 'w', 0)`)
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `INSERT INTO operations VALUES ('op_x', 'ws', 'deliver', '', 'running', '', NULL, '', '', '[]', 0, 0)`)
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `INSERT INTO operation_evidence VALUES ('op_x', 'ws', 1, 'push', 'end', '{"sha":"a"}', 0)`)
	require.NoError(t, err)
	for _, stmt := range []string{
		`UPDATE operation_evidence SET detail = '{"sha":"forged"}'`,
		`UPDATE operation_evidence SET seq = 2`,
		`DELETE FROM operation_evidence`,
	} {
		_, err = s.pool.Exec(ctx, stmt)
		require.ErrorContains(t, err, "immutable", stmt)
	}
	var detail string
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT detail FROM operation_evidence WHERE operation_id = 'op_x' AND seq = 1`).Scan(&detail))
	require.Equal(t, `{"sha":"a"}`, detail)
}

// TestDelegationResults_immutableAndSealedInTheDatabase: no statement,
// from any code path, changes or removes a delegation's result
// (migration 0025's trigger), and the instructions, the contract and
// the result are not stored in the clear.
func TestDelegationResults_immutableAndSealedInTheDatabase(t *testing.T) {
	t.Parallel()
	s := sealedOpener(t)(t)
	ctx := t.Context()
	ws, id, child := delegationFixture(t, s)
	_, _, err := s.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: ws, ID: id, Child: child,
		Result: []byte(`{"verdict":"approve","secret":"tell-no-one"}`), At: time.Now()})
	require.NoError(t, err)
	for _, stmt := range []string{
		`UPDATE delegation_results SET digest = 'forged'`,
		`UPDATE delegation_results SET result = '\x00'::bytea`,
		`DELETE FROM delegation_results`,
	} {
		_, err = s.pool.Exec(ctx, stmt)
		require.ErrorContains(t, err, "immutable", stmt)
	}
	var instructions, contract, result []byte
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT d.instructions, d.contract, r.result FROM delegations d
JOIN delegation_results r ON r.delegation_id = d.id WHERE d.id = $1`, id).Scan(&instructions, &contract, &result))
	require.NotContains(t, string(instructions), "Review")
	require.NotContains(t, string(contract), "verdict")
	require.NotContains(t, string(result), "tell-no-one")
}

// delegationFixture stores a workspace and a running delegation.
func delegationFixture(t *testing.T, s store.Store) (jam.WorkspaceID, jam.DelegationID, jam.SessionID) {
	t.Helper()
	ctx := t.Context()
	m := jam.NewMinter(nil, nil)
	w, err := s.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: time.Now()})
	require.NoError(t, err)
	d, err := s.DelegationCreate(ctx, store.Delegation{ID: jam.New[jam.DelegationID](m), WorkspaceID: w.ID, Parent: jam.New[jam.SessionID](m),
		Role: jam.RoleReview, Agent: "p/a", Instructions: "Review the change", Contract: []byte(`{"required":["verdict"]}`),
		ContractName: store.ContractReview, MaxAttempts: 1, CreatedAt: time.Now()})
	require.NoError(t, err)
	d, err = s.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: w.ID, ID: d.ID, Child: jam.New[jam.SessionID](m), At: time.Now()})
	require.NoError(t, err)
	return w.ID, d.ID, d.Child
}
