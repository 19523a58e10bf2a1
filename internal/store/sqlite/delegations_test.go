package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDelegationList_usesAnIndex keeps each list query on the index of
// the filter that leads it (migrations 0025 and 0027), off a scan of the
// workspace's delegations.
func TestDelegationList_usesAnIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct {
		name, query, index string
	}{
		{"child", delegationListByChild, "delegations_by_child (workspace_id=? AND child_session=?)"},
		{"change set", delegationListByChangeSet, "delegations_by_change_set (workspace_id=? AND <expr>=?)"},
		{"parent", delegationListByParent, "delegations_by_parent (workspace_id=? AND parent_session=?)"},
		{"state", delegationListByState, "delegations_by_state (workspace_id=? AND state=?)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := b.st.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+tt.query, "ws", "p", "c", "cs", "running", 10)
			require.NoError(t, err)
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
				plan = append(plan, detail)
			}
			require.NoError(t, rows.Err())
			t.Logf("plan: %q", plan)
			require.Contains(t, plan, "SEARCH delegations USING INDEX "+tt.index, "plan: %q", plan)
		})
	}
}
