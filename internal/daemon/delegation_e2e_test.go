package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/forge/forgetest"
)

// delegationID finds a delegation id in text.
var delegationID = regexp.MustCompile(`del_[0-9a-hjkmnp-tv-z]{26}`)

// TestDelegationE2E_claudeReviewGatesTheMerge: reviewGatesTheMerge with
// two real Claude Code agents.
func TestDelegationE2E_claudeReviewGatesTheMerge(t *testing.T) {
	t.Parallel()
	reviewGatesTheMerge(t, claudeTools, bashCall)
}

// TestDelegationE2E_codexReviewGatesTheMerge: reviewGatesTheMerge with two
// real Codex agents (each a shared app-server; jam's tools approved by the
// allow policy).
func TestDelegationE2E_codexReviewGatesTheMerge(t *testing.T) {
	t.Parallel()
	reviewGatesTheMerge(t, codexTools, codexExec)
}

// TestDelegationE2E_openCodeReviewGatesTheMerge: reviewGatesTheMerge with
// two real OpenCode agents (jam's tools as jam_*, over ACP).
func TestDelegationE2E_openCodeReviewGatesTheMerge(t *testing.T) {
	t.Parallel()
	reviewGatesTheMerge(t, openCodeTools, func(cmd string) fakemodel.Reply {
		args, _ := json.Marshal(map[string]string{"command": cmd, "description": "edit a file"})
		return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "bash", Arguments: args}}
	})
}

// reviewGatesTheMerge: two owned agents of a kind (the real CLI under
// bwrap, each on its own scripted fake model; edit is the model's call of
// the CLI's shell tool) share a room over one repository. The developer
// fixes a file in a turn; its change set is delivered as a draft pull
// request to the GitHub double. A merge that requires a review is refused:
// none was submitted. The person asks the developer to get it reviewed:
// the developer delegates a review of the change set to the reviewer
// through jam's delegate tool. The reviewer's child session, in a room of
// its own, has a worktree with the change set committed on its base; its
// first turn is the briefing. It submits an invalid result first (a
// finding on line 0), which comes back to it with the schema's error, then
// a valid approving one. The developer's next turn is the notice of the
// result; its own submit to the delegation is not_found (it is not the
// child). The merge that requires a review now goes through.
func reviewGatesTheMerge(t *testing.T, ta toolAgent, edit func(cmd string) fakemodel.Reply) {
	requireBwrap(t)
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "parser.go"), []byte("package parser\n\nfunc Parse() error { return nil } // broken\n"), 0o644))
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "init")
	head := gitIn(t, repo, "rev-parse", "HEAD")

	r := newJamdRig(t, nil)
	r.start()
	ctx := t.Context()
	c := r.client

	add := func(name string) toolRun {
		model := fakemodel.New(fakemodel.Config{})
		require.NoError(t, model.Start())
		t.Cleanup(model.Stop)
		rt := ta.runtime(t, model)
		rt.Repo = repo
		agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: name, Runtime: rt})
		require.NoError(t, err)
		return toolRun{name: name, model: model, agent: agent}
	}
	dev, rev := add("dev"), add("rev")
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "parser", Agents: []string{"dev", "rev"}})
	require.NoError(t, err)
	ask := func(a toolRun, text string) {
		t.Helper()
		_, err := r.owner.SendChatMessage(ctx, room.ID, "@"+a.agent.Handle+" "+text, []protocol.Mention{{ID: a.agent.AgentID}})
		require.NoError(t, err)
	}

	// 1. The developer fixes the parser; the turn's change set.
	fixed := "package parser\n\nfunc Parse() error { return nil } // fixed\n"
	dev.model.Push(edit(`printf 'package parser\n\nfunc Parse() error { return nil } // fixed\n' > parser.go`), fakemodel.Reply{Text: []string{"Fixed the parser."}})
	ask(dev, "fix the parser")
	var cs wire.ChangeSet
	require.Eventually(t, func() bool {
		css, err := c.ChangeSets(ctx, wire.ChangeSetQuery{})
		require.NoError(t, err)
		for _, x := range css {
			if len(x.Files) == 1 && x.Files[0].Path == "parser.go" {
				cs = x
				return true
			}
		}
		return false
	}, ta.step, 50*time.Millisecond, "the developer's change set")

	// 2. Delivered as a draft pull request; a merge that requires a
	// review is refused, none having been submitted.
	gh := forgetest.Start(t)
	gh.AddRepo("acme", "parser", "main", filepath.Join(repo, ".git"))
	env := map[string]string{"HOME": r.dataDir, "JAM_DATA_DIR": r.dataDir, "NO_COLOR": "1", "GH_TOKEN": gh.Token()}
	jamCLI := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runJam(t, env, args...)
		require.Equal(t, want, code, "jam %v\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
		return out, errOut
	}
	jamCLI(0, "connection", "add", "github", "work", "--base-url", gh.APIURL(), "--secret-env", "GH_TOKEN")
	jamCLI(0, "deliver", cs.ID, "--remote", gh.GitURL("acme", "parser"), "--pr", "--repo", "acme/parser", "--title", "Fix the parser")
	list, err := c.Deliveries(ctx, wire.DeliveryQuery{ChangeSet: cs.ID})
	require.NoError(t, err)
	require.Len(t, list, 1)
	dlv := list[0]
	gh.SetStatus(dlv.Commit, "ci/test", "success")
	_, errOut := jamCLI(5, "merge", dlv.ID, "--yes", "--require-review")
	require.Contains(t, errOut, "review gate")
	require.Contains(t, errOut, "none has been submitted")

	// 3. The developer delegates the review; the reviewer submits an
	// invalid result, then a valid one; the developer hears of it.
	var mu sync.Mutex
	var del string
	ready := make(chan struct{})
	submit := func(result map[string]any) fakemodel.Reply {
		return fakemodel.Reply{Hold: ready, Late: func() fakemodel.Reply {
			mu.Lock()
			defer mu.Unlock()
			return ta.call("submit_result", map[string]any{"delegation": del, "result": result})
		}}
	}
	rev.model.Push(
		submit(map[string]any{"verdict": "approve", "findings": []map[string]any{{"path": "parser.go", "line": 0, "severity": "info", "message": "nit"}}}),
		submit(map[string]any{"verdict": "approve", "summary": "The fix is right.", "findings": []map[string]any{
			{"path": "parser.go", "line": 3, "severity": "info", "message": "a test would help"}}}),
		fakemodel.Reply{Text: []string{"Submitted my review."}},
	)
	dev.model.Push(ta.turn("delegate", map[string]any{"role": "review", "agent": rev.agent.Handle, "change_set": cs.ID,
		"instructions": "Review my fix of the parser."}, "Asked rev for a review.")...)
	// The developer's turn on the notice of the result: a submit to a
	// delegation it is not the child of is not_found; the status reads the
	// result.
	late := func(tool string, args func() map[string]any) fakemodel.Reply {
		return fakemodel.Reply{Hold: ready, Late: func() fakemodel.Reply {
			mu.Lock()
			defer mu.Unlock()
			return ta.call(tool, args())
		}}
	}
	dev.model.Push(
		late("submit_result", func() map[string]any {
			return map[string]any{"delegation": del, "result": map[string]any{"verdict": "approve", "findings": []any{}}}
		}),
		late("delegation_status", func() map[string]any { return map[string]any{"delegation": del} }),
		fakemodel.Reply{Text: []string{"The review approved; it can be merged."}},
	)
	ask(dev, "get it reviewed by rev")

	// The delegate call's result, in the developer's next request, names
	// the delegation; the reviewer's held replies may now name it too.
	require.Eventually(t, func() bool {
		for _, req := range dev.model.Requests() {
			if id := delegationID.FindString(conversation(req)); id != "" {
				mu.Lock()
				del = id
				mu.Unlock()
				return true
			}
		}
		return false
	}, ta.step, 50*time.Millisecond, "the developer's delegate call returns the delegation")
	close(ready)

	// The reviewer saw its briefing, then the schema's error, then the
	// result recorded.
	var revPrompts []string
	require.Eventually(t, func() bool {
		revPrompts = revPrompts[:0]
		for _, req := range rev.model.Requests() {
			if fakemodel.Turn(req) {
				revPrompts = append(revPrompts, conversation(req))
			}
		}
		return len(revPrompts) == 3
	}, 2*ta.step, 50*time.Millisecond, "the reviewer's three model requests")
	require.Contains(t, revPrompts[0], "jam tells you (a notice")
	require.Contains(t, revPrompts[0], "delegation "+del+", in the role review")
	require.Contains(t, revPrompts[0], "Review my fix of the parser.")
	require.Contains(t, revPrompts[0], "git show HEAD")
	require.Contains(t, revPrompts[1], "invalid_argument: the result does not satisfy the contract of "+del)
	require.Contains(t, revPrompts[1], "/findings/0/line: must be >= 1")
	require.Contains(t, revPrompts[1], "2 attempts remain")
	require.Contains(t, revPrompts[2], "Recorded for good")

	// The developer's next turn is the notice of the result; in it, its
	// submit to the delegation is not_found (it is the parent, not the
	// child), and delegation_status reads the result.
	var last string
	require.Eventually(t, func() bool {
		reqs := dev.model.Requests()
		if len(reqs) == 0 {
			return false
		}
		last = conversation(reqs[len(reqs)-1])
		return strings.Contains(last, "The fix is right.")
	}, 2*ta.step, 50*time.Millisecond, "the developer reads the result")
	require.Contains(t, last, "jam tells you (a notice")
	require.Contains(t, last, "Delegation "+del+" (review by ")
	require.Contains(t, last, "submitted: approve, 1 finding")
	require.Contains(t, last, "Read it with delegation_status(")
	require.Contains(t, last, "not_found: submit result: delegation "+del)

	// The delegation, as the API shows it: submitted, approving, one
	// invalid attempt, its result immutable with its digest.
	det, err := c.Delegation(ctx, del)
	require.NoError(t, err)
	require.Equal(t, "submitted", det.Delegation.State)
	require.Equal(t, "approve", det.Delegation.Verdict)
	require.Equal(t, 1, det.Delegation.Attempts)
	require.Equal(t, cs.ID, det.Delegation.Inputs.ChangeSet)
	require.Equal(t, room.ID, det.Delegation.ParentRoom)
	require.NotEqual(t, room.ID, det.Delegation.ChildRoom, "the child works in a room of its own")
	require.NotNil(t, det.Result)
	require.Contains(t, string(det.Result.Result), "a test would help")
	require.Len(t, det.Result.Digest, 64)

	// The child session: the reviewer, in a room of its own, on a
	// worktree with the change set committed on its base.
	sessions, err := c.Sessions(ctx)
	require.NoError(t, err)
	var child wire.Session
	for _, s := range sessions {
		if (s.Agent == rev.agent.Peer || s.Agent == rev.agent.Name) && s.Room != room.ID {
			child = s
		}
	}
	require.NotEmpty(t, child.ID, "the reviewer's child session")
	require.Equal(t, det.Delegation.Child, child.ID)
	require.Equal(t, det.Delegation.ChildRoom, child.Room)
	require.Equal(t, "review", child.Role, "the role is stored on the session")
	wts, err := c.Worktrees(ctx)
	require.NoError(t, err)
	i := slices.IndexFunc(wts, func(w wire.Worktree) bool { return w.Session == child.ID })
	require.GreaterOrEqual(t, i, 0, "the child's worktree")
	require.Contains(t, gitIn(t, wts[i].Path, "log", "-1", "--format=%s"), "jam: change set "+cs.ID)
	require.Equal(t, cs.BaseCommit, gitIn(t, wts[i].Path, "rev-parse", "HEAD^"), "on the change set's base")
	require.Equal(t, head, gitIn(t, wts[i].Path, "rev-parse", "HEAD^^"), "the base checkpoint is on the developer's start")
	got, err := os.ReadFile(filepath.Join(wts[i].Path, "parser.go"))
	require.NoError(t, err)
	require.Equal(t, fixed, string(got))
	turns, err := c.Turns(ctx, child.ID)
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.Equal(t, "succeeded", turns[0].State, "%s: %s", turns[0].Reason, turns[0].Detail)

	// 4. The merge that requires an approving review goes through; its
	// gates' evidence names the review.
	out, _ := jamCLI(0, "merge", dlv.ID, "--yes", "--require-review", "--json")
	var op wire.Operation
	require.NoError(t, json.Unmarshal([]byte(out), &op), out)
	require.Equal(t, "succeeded", op.State)
	var gates map[string]any
	require.NoError(t, json.Unmarshal(op.Evidence[0].Detail, &gates))
	require.Equal(t, del, gates["review"], "the gates' evidence names the review")
	require.Equal(t, rev.agent.Peer, gates["reviewer"])
	require.True(t, gh.PullRequests("acme", "parser")[0].Merged)
	require.Empty(t, gh.Violations())
}
