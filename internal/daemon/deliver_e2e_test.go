package daemon_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/forge/forgetest"
	"github.com/jamhq/jam/internal/jam"
)

// TestDeliver_turnToDraftPullRequest: the real `opencode acp` (on the
// fake model) edits a file in a turn; `jam deliver CS --pr` leaves in the
// GitHub double's bare repository a branch whose tip is the change set's
// after-state on its base (every digest matching) and one draft pull
// request naming the turn and the change set; `jam operation show` has
// every step's evidence. The merge is refused while a check is red and
// without approval, naming the gate, and goes through once green and
// approved. The token shows in no output, log or store file.
func TestDeliver_turnToDraftPullRequest(t *testing.T) {
	t.Parallel()
	edit := `printf 'package parser\n\nfunc Parse() error { return nil } // fixed\n' > parser.go && printf 'package parser\n\n// Version of the parser.\nconst Version = 2\n' > version.go`
	e := runOpenCodeEdit(t, edit)
	cfg, r, c, turn, repo, head := e.cfg, e.r, e.r.client, e.turn, e.repo, e.head
	ctx := t.Context()
	gh := forgetest.Start(t)
	gh.AddRepo("acme", "parser", "main", filepath.Join(repo, ".git"))
	var cs wire.ChangeSet
	require.Eventually(t, func() bool {
		css, err := c.ChangeSets(ctx, wire.ChangeSetQuery{Turn: turn.ID})
		require.NoError(t, err)
		if len(css) == 1 {
			cs = css[0]
		}
		return len(css) == 1
	}, time.Minute, 20*time.Millisecond, "the turn's change set")
	require.Len(t, cs.Files, 2, "%+v", cs.Files)

	token := gh.Token()
	env := map[string]string{"HOME": cfg.DataDir, "JAM_DATA_DIR": cfg.DataDir, "NO_COLOR": "1", "GH_TOKEN": token}
	var outputs []string
	jamCLI := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runJam(t, env, args...)
		outputs = append(outputs, out, errOut)
		require.Equal(t, want, code, "jam %v\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
		return out, errOut
	}
	jamCLI(0, "connection", "add", "github", "work", "--base-url", gh.APIURL(), "--secret-env", "GH_TOKEN")

	// Refused at once, one line each with a stable code.
	_, errOut := jamCLI(4, "deliver", "cs_01jqv2x5z9k8m7n6p5q4r3s2t1", "--remote", gh.GitURL("acme", "parser"))
	require.Contains(t, errOut, "not_found")
	_, errOut = jamCLI(7, "deliver", cs.ID, "--remote", "http://127.0.0.1:1/acme/parser.git")
	require.Contains(t, errOut, "remote_unreachable")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	_, errOut = jamCLI(2, "deliver", cs.ID, "--remote", "https://gitlab.example/acme/parser.git", "--connection", "work")
	require.Contains(t, errOut, "its token goes nowhere else")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)

	out, errOut := jamCLI(0, "deliver", cs.ID, "--remote", gh.GitURL("acme", "parser"), "--pr", "--repo", "acme/parser", "--title", "Fix the parser")
	for _, step := range []string{"build done commit=", "push done remote_sha=", "pull_request done pr_url="} {
		require.Contains(t, errOut, step, "every step is shown")
	}
	require.Contains(t, out, "pr_open")
	require.Regexp(t, `pull request +#1 http://\S+/acme/parser/pull/1`, out)
	list, err := c.Deliveries(ctx, wire.DeliveryQuery{ChangeSet: cs.ID})
	require.NoError(t, err)
	require.Len(t, list, 1)
	dlv := list[0]
	require.Equal(t, "pr_open", dlv.State)

	// The branch: the change set's after-state on its base, every digest.
	bare := gh.BareDir("acme", "parser")
	tip := gitIn(t, bare, "rev-parse", "refs/heads/"+dlv.Branch)
	require.Equal(t, dlv.Commit, tip)
	require.Equal(t, head, gitIn(t, bare, "rev-parse", tip+"^"), "on the commit the session started from")
	wts, err := c.Worktrees(ctx)
	require.NoError(t, err)
	for _, f := range []string{"parser.go", "version.go"} {
		want, err := os.ReadFile(filepath.Join(wts[0].Path, f))
		require.NoError(t, err)
		require.Equal(t, string(want), gitIn(t, bare, "show", tip+":"+f)+"\n", "%s as the agent left it", f)
	}
	db := openStore(t, cfg)
	ws, err := db.WorkspaceList(ctx)
	require.NoError(t, err)
	stored, err := db.ChangeSetGet(ctx, ws[0].ID, jam.ChangeSetID(cs.ID))
	require.NoError(t, err)
	require.NoError(t, changeset.VerifyTree(ctx, bare, tip, stored), "every digest of the manifest")
	require.NoError(t, db.Close())
	prs := gh.PullRequests("acme", "parser")
	require.Len(t, prs, 1)
	require.True(t, prs[0].Draft)
	require.Equal(t, "Fix the parser", prs[0].Title)
	require.Contains(t, prs[0].Body, cs.ID)
	require.Contains(t, prs[0].Body, turn.ID)
	require.Equal(t, dlv.PRNumber, prs[0].Number)

	// Every step's evidence.
	out, _ = jamCLI(0, "operation", "show", dlv.Operation, "--json")
	var op wire.Operation
	require.NoError(t, json.Unmarshal([]byte(out), &op))
	require.Equal(t, "succeeded", op.State)
	var seen []string
	for _, e := range op.Evidence {
		seen = append(seen, e.Step+":"+e.Event)
	}
	require.Equal(t, []string{"build:start", "build:end", "push:start", "push:end", "pull_request:start", "pull_request:end"}, seen)
	require.Contains(t, string(op.Evidence[3].Detail), tip, "the remote SHA")
	require.Contains(t, string(op.Evidence[5].Detail), prs[0].URL, "the pull request's URL")
	require.Len(t, op.Jobs, 3)

	// Delivering again shows the first; nothing more is opened.
	jamCLI(0, "deliver", cs.ID, "--remote", gh.GitURL("acme", "parser"), "--pr", "--repo", "acme/parser", "--title", "Fix the parser")
	require.Len(t, gh.PullRequests("acme", "parser"), 1)

	// The merge's gates.
	gh.SetStatus(tip, "ci/test", "failure")
	_, errOut = jamCLI(5, "merge", dlv.ID, "--yes")
	require.Contains(t, errOut, "gate_refused")
	require.Contains(t, errOut, "checks gate")
	require.Contains(t, errOut, "ci/test")
	gh.SetStatus(tip, "ci/test", "success")
	_, errOut = jamCLI(5, "merge", dlv.ID)
	require.Contains(t, errOut, "approval gate")
	out, _ = jamCLI(0, "merge", dlv.ID, "--yes", "--method", "squash")
	require.Contains(t, out, "succeeded")
	prs = gh.PullRequests("acme", "parser")
	require.True(t, prs[0].Merged, "merged on GitHub")
	out, _ = jamCLI(0, "delivery", "show", dlv.ID)
	require.Contains(t, out, "merged")

	// No secret anywhere.
	for _, o := range outputs {
		require.NotContains(t, o, token)
	}
	require.NotContains(t, r.log.String(), token)
	err, _ = r.stop()
	require.NoError(t, err)
	if cfg.Store == config.DefaultStore {
		require.Empty(t, canaryIn(t, cfg.DataDir, canaryForms(token)), "the token is kept sealed")
	}
	for name, n := range canaryForms(token) {
		require.False(t, bytes.Contains([]byte(r.log.String()), n), "the log holds the token (%s)", name)
	}
}
