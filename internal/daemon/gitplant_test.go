package daemon_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/git/gittest"
)

// TestGitPlant_noJamCommandRunsWhatTheAgentPlanted: the repository of an
// owned agent has every git program planted in its config (directly, by
// include.path and by includeIf), its hooks and the attributes on its
// branch; once the session's worktree exists, the agent's side plants the
// same in the worktree and rewrites its .git file to a gitdir of its own.
// Then every jam command that touches git runs on it: a turn ends, jam
// worktree list, jam status and session list, remove (refused with
// changes), archive, restore, remove, restore again. No planted program
// runs as jamd, and the worktree list counts the real changes.
func TestGitPlant_noJamCommandRunsWhatTheAgentPlanted(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	markers := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("planted programs that ran: %v", gittest.Fired(t, markers))
		}
	})
	gittest.PlantRepo(t, repo, markers)

	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Repo: repo}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "git", Agents: []string{"demo"}})
	require.NoError(t, err)

	// turnsDone waits for n succeeded turns of the one session.
	turnsDone := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool {
			ss, err := c.Sessions(ctx)
			require.NoError(t, err)
			if len(ss) != 1 || ss[0].CurrentTurn != "" {
				return false
			}
			turns, err := c.Turns(ctx, ss[0].ID)
			require.NoError(t, err)
			done := 0
			for _, tr := range turns {
				require.NotEqual(t, "failed", tr.State, "turn %s: %s", tr.ID, tr.Detail)
				if tr.State == "succeeded" {
					done++
				}
			}
			return done == n
		}, 60*time.Second, 20*time.Millisecond, "%d turn(s) ran", n)
	}
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" note this", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	turnsDone(1)
	wts, err := c.Worktrees(ctx)
	require.NoError(t, err)
	require.Len(t, wts, 1)
	wt := wts[0]
	require.Equal(t, 1, wt.Changes, "the agent's note")

	gittest.PlantWorktree(t, wt.Path, markers)
	// A turn ends on the planted worktree.
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" and this", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	turnsDone(2)

	wts, err = c.Worktrees(ctx)
	require.NoError(t, err)
	require.Len(t, wts, 1)
	// NOTES.md, new.txt, .gitattributes, the four files and the .evil
	// gitdir's files: the real worktree against the real branch.
	require.GreaterOrEqual(t, wts[0].Changes, 7, "counted in the worktree jam made, not in the agent's gitdir")
	_, err = c.Status(ctx)
	require.NoError(t, err)
	_, err = c.Sessions(ctx)
	require.NoError(t, err)

	_, err = c.WorktreeRemove(ctx, wt.Session, wire.WorktreeRemoveRequest{})
	require.ErrorContains(t, err, "uncommitted")
	archived, err := c.WorktreeArchive(ctx, wt.Session)
	require.NoError(t, err)
	require.Equal(t, "archived", archived.State)
	restored, err := c.WorktreeRestore(ctx, wt.Session, wire.WorktreeRestoreRequest{})
	require.NoError(t, err)
	require.Equal(t, 0, restored.Changes, "archived as written and checked out as committed")
	removed, err := c.WorktreeRemove(ctx, wt.Session, wire.WorktreeRemoveRequest{})
	require.NoError(t, err)
	require.Equal(t, "removed", removed.State)
	restored, err = c.WorktreeRestore(ctx, wt.Session, wire.WorktreeRestoreRequest{})
	require.NoError(t, err)
	require.Equal(t, "active", restored.State)
	wts, err = c.Worktrees(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, wts[0].Changes)
	_, err = c.WorktreeRestore(ctx, wt.Session, wire.WorktreeRestoreRequest{Checkpoint: 3})
	require.ErrorContains(t, err, "active", "an active worktree is not restored")

	// The results routes answer over the daemon's store, scoped to the
	// workspace: each turn left two checkpoints and its change set, and
	// the refused remove, the archive and the remove one each first.
	cps, err := c.Checkpoints(ctx, wt.Session)
	require.NoError(t, err)
	var phases []string
	for _, cp := range cps {
		phases = append(phases, cp.Phase)
	}
	require.Equal(t, []string{"turn_start", "turn_end", "turn_start", "turn_end", "request", "request", "request"}, phases)
	css, err := c.ChangeSets(ctx, wire.ChangeSetQuery{Session: wt.Session})
	require.NoError(t, err)
	require.Len(t, css, 2)
	first := css[1] // newest first
	require.Equal(t, "turn", first.Origin)
	require.Len(t, first.Files, 1)
	require.Equal(t, "NOTES.md", first.Files[0].Path)
	patch, err := c.ChangeSetPatch(ctx, first.ID)
	require.NoError(t, err)
	require.Contains(t, string(patch), "+++ b/NOTES.md")
	_, err = c.ChangeSet(ctx, "cs_01m8vb9058qnan7c2ah3wcqkg8")
	require.ErrorContains(t, err, "not found")
	_, err = c.ChangeSetPatch(ctx, "cs_01m8vb9058qnan7c2ah3wcqkg8")
	require.ErrorContains(t, err, "not found")
	_, err = c.Checkpoints(ctx, "sess_01m8vb903ptswbf820ejtmm7py")
	require.ErrorContains(t, err, "not found")
	_, err = c.CaptureChangeSet(ctx, "sess_01m8vb903ptswbf820ejtmm7py", 0)
	require.ErrorContains(t, err, "not found", "an unknown session is refused before the session manager is asked")

	require.Empty(t, gittest.Fired(t, markers), "a planted program ran as jamd")
}
