package sqlite

import (
	"strings"
	"testing"
)

// TestEventQueries_useIndexes keeps the event log's reads and prunes off
// full table scans: the log holds up to 100,000 rows, and replay reads it
// once per resuming client.
func TestEventQueries_useIndexes(t *testing.T) {
	t.Parallel()
	st := setup(t).st
	tests := []struct {
		name  string
		query string
		args  []any
	}{
		{"list after", eventSelectAfter, []any{"ws", 1, 10}},
		{"last", eventSelectLast, []any{"ws"}},
		{"prune by age", eventDeleteOld, []any{1}},
		{"prune beyond, per workspace", eventDeleteBeyond, []any{"ws", "ws", 10}},
		{"workspaces to prune", eventWorkspaces, nil},
		{"next sequence", eventSelectNext, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plan := explain(t.Context(), t, st, tt.query, tt.args...)
			for _, line := range plan {
				fields := strings.Fields(line)
				// A search or a scan through an index is fine; a bare
				// scan of the table is not.
				if len(fields) >= 2 && fields[0] == "SCAN" && fields[1] == "events" && !strings.Contains(line, "USING") {
					t.Fatalf("full scan in plan of %s:\n%s", tt.name, strings.Join(plan, "\n"))
				}
			}
		})
	}
}
