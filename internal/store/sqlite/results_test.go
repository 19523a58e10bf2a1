package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResults_updateRefusedInTheDatabase: no statement, from any code
// path, changes a stored checkpoint or change set: migration 0019's
// triggers refuse every UPDATE (the store's own methods never issue one).
func TestResults_updateRefusedInTheDatabase(t *testing.T) {
	t.Parallel()
	s := opener(t)(t)
	for _, stmt := range []string{
		`UPDATE change_sets SET patch = x'00', subject_digest = 'forged'`,
		`UPDATE checkpoints SET commit_id = 'forged'`,
	} {
		// The tables are empty; the trigger fires per row, so add one.
		_, err := s.writer.ExecContext(t.Context(), `INSERT INTO checkpoints VALUES ('snap_x', 'ws', 'sess', 1, '', 'request', '/g', 'refs/jam/checkpoints/s/1', 'c', 't', '', 0)
ON CONFLICT DO NOTHING`)
		require.NoError(t, err)
		_, err = s.writer.ExecContext(t.Context(), `INSERT INTO change_sets VALUES ('cs_x', 'ws', 'sess', '', 'request', 'snap_x', 'snap_x', 'c', 'c', '[]', NULL, 0, 0, 'sha256:', 0, 0, 0)
ON CONFLICT DO NOTHING`)
		require.NoError(t, err)
		_, err = s.writer.ExecContext(t.Context(), stmt)
		require.ErrorContains(t, err, "immutable", stmt)
	}
}

// TestOperationEvidence_appendOnlyInTheDatabase: no statement, from any
// code path, changes or removes an operation's evidence: migration 0023's
// triggers refuse every UPDATE and DELETE (the store's own methods never
// issue one).
func TestOperationEvidence_appendOnlyInTheDatabase(t *testing.T) {
	t.Parallel()
	s := opener(t)(t)
	ctx := t.Context()
	_, err := s.writer.ExecContext(ctx, `INSERT INTO workspaces (id, name, created_at) VALUES ('ws', 'w', 0)`)
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO operations VALUES ('op_x', 'ws', 'deliver', '', 'running', '', NULL, '', '', '[]', 0, 0)`)
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO operation_evidence VALUES ('op_x', 'ws', 1, 'push', 'end', '{"sha":"a"}', 0)`)
	require.NoError(t, err)
	for _, stmt := range []string{
		`UPDATE operation_evidence SET detail = '{"sha":"forged"}'`,
		`UPDATE operation_evidence SET seq = 2`,
		`DELETE FROM operation_evidence`,
	} {
		_, err = s.writer.ExecContext(ctx, stmt)
		require.ErrorContains(t, err, "immutable", stmt)
	}
	var detail string
	require.NoError(t, s.reader.QueryRowContext(ctx, `SELECT detail FROM operation_evidence WHERE operation_id = 'op_x' AND seq = 1`).Scan(&detail))
	require.Equal(t, `{"sha":"a"}`, detail)
}
