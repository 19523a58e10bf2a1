package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestDelegationList_usesAnIndex keeps each list query answerable by the
// index of the filter that leads it (migrations 0025 and 0027), in the
// generic plan a prepared statement settles on. Scans are priced out, as
// the test's tables are too small for the planner to prefer an index.
func TestDelegationList_usesAnIndex(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	for _, tt := range []struct {
		name, query, index string
		args               string // of EXECUTE: workspace, parent, child, change set, state, limit
	}{
		{"child", delegationListByChild, "delegations_by_child", `'ws', '', 'c', '', '', 10`},
		{"change set", delegationListByChangeSet, "delegations_by_change_set", `'ws', '', '', 'cs', '', 10`},
		{"parent", delegationListByParent, "delegations_by_parent", `'ws', 'p', '', '', '', 10`},
		{"state", delegationListByState, "delegations_by_state", `'ws', '', '', '', 'running', 10`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var plan []string
			err := pgx.BeginFunc(t.Context(), s.pool, func(tx pgx.Tx) error {
				for _, q := range []string{`SET LOCAL enable_seqscan = off`, `SET LOCAL plan_cache_mode = force_generic_plan`,
					`PREPARE list (text, text, text, text, text, bigint) AS ` + tt.query} {
					if _, err := tx.Exec(t.Context(), q); err != nil {
						return err
					}
				}
				rows, err := tx.Query(t.Context(), `EXPLAIN EXECUTE list (`+tt.args+`)`)
				if err != nil {
					return err
				}
				plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
				if err == nil {
					_, err = tx.Exec(t.Context(), `DEALLOCATE list`)
				}
				return err
			})
			require.NoError(t, err)
			joined := strings.Join(plan, "\n")
			t.Logf("plan:\n%s", joined)
			require.Regexp(t, `Index (Only )?Scan (Backward )?using `+tt.index+` on delegations`, joined)
			require.NotContains(t, joined, "Filter: ((workspace_id", "the lead filter is an index condition")
		})
	}
}
