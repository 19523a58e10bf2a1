package sqlite

import (
	"strings"
	"testing"
)

// TestQueries_turnOutputUsesIndexes keeps the output statements, which
// run with every batch of a running turn, off full scans: a turn's
// batches are found through the primary key, its turn by id.
func TestQueries_turnOutputUsesIndexes(t *testing.T) {
	t.Parallel()
	st := setup(t).st
	for _, q := range []struct {
		name, query string
		args        int
	}{
		{"output fence", outputTurnFence, 2},
		{"output last batch", outputLast, 1},
		{"output of turn", outputOfTurn, 2},
	} {
		args := make([]any, q.args)
		for i := range args {
			args[i] = "x"
		}
		plan := explain(t.Context(), t, st, q.query, args...)
		for _, line := range plan {
			fields := strings.Fields(line)
			if len(fields) >= 2 && fields[0] == "SCAN" && (fields[1] == "turn_output" || fields[1] == "turns") && !strings.Contains(line, "USING") {
				t.Fatalf("full scan in plan of %s:\n%s", q.name, strings.Join(plan, "\n"))
			}
		}
		// Batches are read in order through the key, not sorted.
		if all := strings.Join(plan, "\n"); strings.Contains(all, "TEMP B-TREE") {
			t.Fatalf("plan of %s sorts:\n%s", q.name, all)
		}
	}
}
