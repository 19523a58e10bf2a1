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
