package daemon_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/forge/forgetest"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestDeliver_sigkillLoop kills jamd with SIGKILL at random moments while
// change sets are delivered to the GitHub double with draft pull
// requests, restarting it each time (and asking again for deliveries
// whose request the kill cut off). In the end every delivery has its pull
// request open, and the bare repository holds exactly one branch per
// delivery, at its commit, and exactly one pull request per branch.
func TestDeliver_sigkillLoop(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills jamd repeatedly")
	}
	kills := 20
	if v := os.Getenv("JAM_CRASH_KILLS"); v != "" {
		fmt.Sscan(v, &kills)
	}
	deliveries := kills
	r := newOrphanRig(t)
	r.start()
	ctx := t.Context()

	// A session to hold the change sets: the demo agent's, after one turn.
	agent, err := r.client.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	room, err := r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "deliveries", Agents: []string{"demo"}})
	require.NoError(t, err)
	_, err = r.owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	var session wire.Session
	var turn wire.Turn
	require.Eventually(t, func() bool {
		ss, err := r.client.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		session = ss[0]
		ts, err := r.client.Turns(ctx, session.ID)
		require.NoError(t, err)
		if len(ts) == 0 || ts[0].State != "succeeded" {
			return false
		}
		turn = ts[0]
		return true
	}, time.Minute, 10*time.Millisecond, "the demo agent's turn")

	// A repository whose main is base, and one change set per delivery,
	// each adding its own file on base.
	repo := t.TempDir()
	gitIn := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	gitIn("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("# loop\n"), 0o644))
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "base")
	base := gitIn("rev-parse", "HEAD")
	gitDir := filepath.Join(repo, ".git")
	gh := forgetest.Start(t)
	gh.AddRepo("acme", "loop", "main", gitDir)
	_, err = r.client.ConnectionAdd(ctx, wire.ConnectionAddRequest{Provider: "github", Name: "work", BaseURL: gh.APIURL(), Secret: gh.Token()})
	require.NoError(t, err)

	db := openStore(t, r.cfg)
	wss, err := db.WorkspaceList(ctx)
	require.NoError(t, err)
	var css []store.ChangeSet
	for i := range deliveries {
		gitIn("checkout", "-q", "--detach", base)
		require.NoError(t, os.WriteFile(filepath.Join(repo, fmt.Sprintf("file%d.txt", i)), []byte(fmt.Sprintf("delivery %d\n", i)), 0o644))
		gitIn("add", "-A")
		gitIn("commit", "-q", "-m", fmt.Sprintf("end %d", i))
		end := gitIn("rev-parse", "HEAD")
		css = append(css, recordChangeSet(t, db, wss[0].ID, jam.SessionID(session.ID), jam.TurnID(turn.ID), gitDir, base, end, store.ChangeSetTurn, changeset.Options{}))
	}
	require.NoError(t, db.Close())

	asked := make([]bool, deliveries)
	ask := func(i int) {
		_, err := r.client.Deliver(ctx, wire.DeliverRequest{ChangeSet: string(css[i].ID), Remote: gh.GitURL("acme", "loop"), PR: true, Repo: "acme/loop"})
		if err == nil {
			asked[i] = true
		}
	}
	midway := 0
	for k := range kills {
		// Ask for one more delivery, then kill after a random moment:
		// before, during or after its steps (and the others' still
		// under way).
		ask(k)
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond) // when to kill, not synchronisation
		list, err := r.client.Deliveries(ctx, wire.DeliveryQuery{})
		require.NoError(t, err)
		under := 0
		for _, d := range list {
			if d.State != "pr_open" {
				under++
			}
		}
		if under > 0 {
			midway++
		}
		r.jamd.kill()
		t.Logf("kill %d: %d deliveries asked, %d under way", k+1, k+1, under)
		r.start()
		for i := range k + 1 {
			if !asked[i] {
				ask(i)
			}
		}
	}
	t.Logf("%d of %d kills landed while a delivery was under way", midway, kills)
	require.Positive(t, midway, "some kill landed during a delivery")
	for i := range deliveries {
		if !asked[i] {
			ask(i)
		}
		require.True(t, asked[i], "delivery %d accepted", i)
	}

	var list []wire.Delivery
	require.Eventually(t, func() bool {
		list, err = r.client.Deliveries(ctx, wire.DeliveryQuery{})
		require.NoError(t, err)
		open := 0
		for _, d := range list {
			require.NotEqual(t, "failed", d.State, "delivery %s: %s %s", d.ID, d.ErrorCode, d.Error)
			if d.State == "pr_open" {
				open++
			}
		}
		return len(list) == deliveries && open == deliveries
	}, 3*time.Minute, 50*time.Millisecond, "every delivery's pull request opens")

	bare := gh.BareDir("acme", "loop")
	refs, err := exec.Command("git", "-C", bare, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads/jam/").Output()
	require.NoError(t, err)
	branches := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(refs)), "\n") {
		name, sha, _ := strings.Cut(line, " ")
		branches[name] = sha
	}
	require.Len(t, branches, deliveries, "one branch per delivery: %v", branches)
	prs := gh.PullRequests("acme", "loop")
	require.Len(t, prs, deliveries, "one pull request per delivery")
	heads := map[string]int{}
	for _, pr := range prs {
		heads[pr.HeadRef]++
	}
	for _, d := range list {
		require.Equal(t, d.Commit, branches[d.Branch], "delivery %s: the branch is at its commit", d.ID)
		require.Equal(t, 1, heads[d.Branch], "delivery %s: one pull request of its branch", d.ID)
	}
	require.Empty(t, gh.Violations())
}
