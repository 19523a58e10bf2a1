package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/demoagent"
)

// Helpers of the tests whose demo agent works under permission ask: one
// session, each prompt a turn that asks before it writes the note.

// waitApproval waits until an approval is pending and returns it.
func waitApproval(t *testing.T, c *apiclient.Client) wire.Approval {
	t.Helper()
	var got []wire.Approval
	require.Eventually(t, func() bool {
		var err error
		got, err = c.Approvals(t.Context())
		require.NoError(t, err)
		return len(got) == 1
	}, 60*time.Second, 10*time.Millisecond, "an approval waits")
	return got[0]
}

// approvalUpdates are the approval updates of a turn's output.
func approvalUpdates(t *testing.T, c *apiclient.Client, turn string) []wire.TurnUpdate {
	t.Helper()
	out, err := c.TurnOutput(t.Context(), turn)
	require.NoError(t, err)
	var ups []wire.TurnUpdate
	for _, u := range out.Updates {
		if u.Kind == "approval" {
			ups = append(ups, u)
		}
	}
	return ups
}

// demoNotes counts the notes the demo agent wrote in its one session's
// worktree.
func demoNotes(t *testing.T, c *apiclient.Client) int {
	t.Helper()
	ss, err := c.Sessions(t.Context())
	require.NoError(t, err)
	require.Len(t, ss, 1)
	b, err := os.ReadFile(filepath.Join(ss[0].Worktree, demoagent.NotesFile))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n- ")
}

// nthTurnEnds waits for the one session's n-th turn to end and returns it.
func nthTurnEnds(t *testing.T, c *apiclient.Client, n int) wire.Turn {
	t.Helper()
	var tr wire.Turn
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(t.Context())
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		ts, err := c.Turns(t.Context(), ss[0].ID)
		require.NoError(t, err)
		if len(ts) < n || (ts[n-1].State != "succeeded" && ts[n-1].State != "failed") {
			return false
		}
		tr = ts[n-1]
		return true
	}, 60*time.Second, 10*time.Millisecond, "turn %d ends", n)
	return tr
}
