package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSessions_roleIsChecked: the schema itself refuses a role that is
// not one of the seven (migration 0026), whatever the code passes.
func TestSessions_roleIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.writer.ExecContext(t.Context(), sessionInsert, "sess_x", "ws_x", "tpl_x", "p", "a", "room", "open", "", 1, 1, "{}", "reviewer")
	require.ErrorContains(t, err, "CHECK constraint failed")
	_, err = b.st.writer.ExecContext(t.Context(), sessionInsert, "sess_y", "ws_x", "tpl_x", "p", "a", "room", "open", "", 1, 1, "{}", "review")
	require.NoError(t, err)
}
