package forge_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/forge/forgetest"
	"github.com/jamhq/jam/internal/jam"
)

type testBundle struct {
	srv    *forgetest.Server
	client *forge.Client
	repo   forge.Repo
	work   string // a clone of the repository, for pushing branches
}

// setup starts a double with o/r (main seeded with one commit) and a
// client of it.
func setup(t *testing.T) *testBundle {
	t.Helper()
	srv := forgetest.Start(t)
	seed := t.TempDir()
	gitIn(t, seed, "init", "--quiet", "--initial-branch=main")
	writeCommit(t, seed, "README.md", "hello\n", "first")
	srv.AddRepo("o", "r", "main", seed)
	client, err := forge.New(srv.Token(), forge.Options{BaseURL: srv.APIURL(), UserAgent: "jam-test"})
	require.NoError(t, err)
	return &testBundle{srv: srv, client: client, repo: forge.Repo{Owner: "o", Name: "r"}, work: seed}
}

// gitIn runs the real git in dir with an isolated configuration.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func writeCommit(t *testing.T, dir, file, content, msg string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	gitIn(t, dir, "add", file)
	gitIn(t, dir, "commit", "--quiet", "-m", msg)
	return gitIn(t, dir, "rev-parse", "HEAD")
}

// push pushes branch of the work repository to the double over HTTP with
// the token as the Basic password (in an extra header: test only).
func (b *testBundle) push(t *testing.T, branch string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + b.srv.Token()))
	gitIn(t, b.work, "-c", "http.extraHeader=Authorization: Basic "+auth, "push", "--quiet", "--force",
		b.srv.GitURL("o", "r"), "refs/heads/"+branch+":refs/heads/"+branch)
}

// branch makes branch off main in the work repository with one commit
// and pushes it; it returns the commit.
func (b *testBundle) branch(t *testing.T, branch, file, content string) string {
	t.Helper()
	gitIn(t, b.work, "checkout", "--quiet", "-B", branch, "main")
	sha := writeCommit(t, b.work, file, content, "change "+file)
	b.push(t, branch)
	gitIn(t, b.work, "checkout", "--quiet", "main")
	return sha
}

func bareTip(t *testing.T, b *testBundle, branch string) string {
	t.Helper()
	return gitIn(t, b.srv.BareDir("o", "r"), "rev-parse", "refs/heads/"+branch)
}

func requireCode(t *testing.T, err error, code string) *forge.Error {
	t.Helper()
	var fe *forge.Error
	require.True(t, errors.As(err, &fe), "want *forge.Error, got %T %v", err, err)
	require.Equal(t, code, fe.Code, "%v", err)
	return fe
}

func TestClient_CreateFindGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, ok, err := b.client.FindPullRequest(ctx, b.repo, "feature")
	require.NoError(t, err)
	require.False(t, ok)

	sha := b.branch(t, "feature", "a.txt", "a\n")
	pr, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "feature", Base: "main", Title: "T", Body: "turn 1, change set 2"})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Number)
	require.True(t, pr.Draft)
	require.Equal(t, "open", pr.State)
	require.Equal(t, sha, pr.HeadSHA, "the head is the pushed commit")
	require.Equal(t, "feature", pr.HeadRef)
	require.Equal(t, "main", pr.BaseRef)
	require.Equal(t, "turn 1, change set 2", pr.Body)
	require.NotEmpty(t, pr.RequestID)
	require.True(t, strings.HasSuffix(pr.URL, "/o/r/pull/1"), pr.URL)

	defBranch, err := b.client.DefaultBranch(ctx, b.repo)
	require.NoError(t, err)
	require.Equal(t, "main", defBranch)
	_, err = b.client.DefaultBranch(ctx, forge.Repo{Owner: "o", Name: "nope"})
	requireCode(t, err, forge.CodeNotFound)

	found, ok, err := b.client.FindPullRequest(ctx, b.repo, "feature")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, pr.Number, found.Number)
	require.Equal(t, sha, found.HeadSHA)

	// The duplicate 422 is answered with the same pull request.
	again, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "feature", Base: "main", Title: "T"})
	require.NoError(t, err)
	require.Equal(t, pr.Number, again.Number)
	require.Len(t, b.srv.PullRequests("o", "r"), 1, "no second pull request")

	// A new push moves the head the double reports.
	gitIn(t, b.work, "checkout", "--quiet", "feature")
	sha2 := writeCommit(t, b.work, "a.txt", "a2\n", "again")
	b.push(t, "feature")
	gitIn(t, b.work, "checkout", "--quiet", "main")
	got, err := b.client.PullRequest(ctx, b.repo, pr.Number)
	require.NoError(t, err)
	require.Equal(t, sha2, got.HeadSHA)
	require.Equal(t, bareTip(t, b, "feature"), got.HeadSHA)
	require.NotNil(t, got.Mergeable)
	require.True(t, *got.Mergeable)

	_, err = b.client.PullRequest(ctx, b.repo, 99)
	fe := requireCode(t, err, forge.CodeNotFound)
	require.ErrorIs(t, fe, jam.ErrNotFound)

	_, err = b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "missing", Base: "main", Title: "T"})
	requireCode(t, err, forge.CodeInvalid)

	login, err := b.client.Authenticated(ctx)
	require.NoError(t, err)
	require.Equal(t, "forgetest-user", login)
	require.Empty(t, b.srv.Violations())
}

func TestClient_Checks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	sha := b.branch(t, "feature", "a.txt", "a\n")

	c, err := b.client.Checks(ctx, b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StateSuccess, c.State, "no statuses and no check runs is success")

	b.srv.SetStatus(sha, "ci/build", "pending")
	b.srv.SetCheckRun(sha, "lint", "in_progress", "")
	c, err = b.client.Checks(ctx, b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StatePending, c.State)
	require.ElementsMatch(t, []string{"ci/build", "lint"}, c.Pending)

	b.srv.SetStatus(sha, "ci/build", "success")
	b.srv.SetCheckRun(sha, "lint", "completed", "failure")
	c, err = b.client.Checks(ctx, b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StateFailure, c.State)
	require.Equal(t, []string{"lint"}, c.Failing)

	b.srv.SetStatus(sha, "ci/deploy", "error")
	b.srv.SetCheckRun(sha, "lint", "completed", "success")
	c, err = b.client.Checks(ctx, b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StateFailure, c.State)
	require.Equal(t, []string{"ci/deploy"}, c.Failing)

	b.srv.SetStatus(sha, "ci/deploy", "success")
	b.srv.SetCheckRun(sha, "docs", "completed", "skipped")
	c, err = b.client.Checks(ctx, b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StateSuccess, c.State)
	require.Empty(t, c.Failing)
	require.Empty(t, c.Pending)
	require.NotEmpty(t, c.RequestID)
}

func TestClient_ChecksPaginates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sha := b.branch(t, "feature", "a.txt", "a\n")
	for i := range 150 {
		b.srv.SetCheckRun(sha, "run-"+strconv.Itoa(i), "completed", "success")
	}
	b.srv.SetCheckRun(sha, "the-last-one", "completed", "failure")
	c, err := b.client.Checks(t.Context(), b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StateFailure, c.State, "the failing run is on the second page")
	require.Equal(t, []string{"the-last-one"}, c.Failing)
}

func TestClient_StatusesPaginate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sha := b.branch(t, "feature", "a.txt", "a\n")
	for i := range 150 {
		b.srv.SetStatus(sha, "ci/"+strconv.Itoa(i), "success")
	}
	b.srv.SetStatus(sha, "ci/last", "failure")
	before := b.srv.Requests()
	c, err := b.client.Checks(t.Context(), b.repo, sha)
	require.NoError(t, err)
	require.Equal(t, forge.StateFailure, c.State, "the failing status is on the second page")
	require.Equal(t, []string{"ci/last"}, c.Failing)
	require.Equal(t, 3, b.srv.Requests()-before, "two pages of statuses, one of check runs")
}

func TestNew(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, token, base, wantErr string }{
		{name: "github", token: "t", base: ""},
		{name: "enterprise", token: "t", base: "https://ghe.example.com/api/v3"},
		{name: "loopback http", token: "t", base: "http://127.0.0.1:1234/"},
		{name: "localhost http", token: "t", base: "http://localhost:1234/"},
		{name: "empty token", token: " ", wantErr: "empty"},
		{name: "token with newline", token: "a\nb", wantErr: "white space"},
		{name: "cleartext", token: "t", base: "http://ghe.example.com/api/v3/", wantErr: "https"},
		{name: "userinfo", token: "t", base: "https://u:p@ghe.example.com/", wantErr: "userinfo"},
		{name: "no host", token: "t", base: "https:///x", wantErr: "host"},
		{name: "ftp", token: "t", base: "ftp://x/", wantErr: "http(s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := forge.New(tc.token, forge.Options{BaseURL: tc.base})
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, c)
				return
			}
			fe := requireCode(t, err, forge.CodeInvalid)
			require.ErrorIs(t, fe, jam.ErrInvalid)
			require.Contains(t, err.Error(), tc.wantErr)
			require.NotContains(t, err.Error(), ":p@")
		})
	}
}

func TestClient_Merge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	sha := b.branch(t, "feature", "a.txt", "a\n")
	pr, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "feature", Base: "main", Title: "T"})
	require.NoError(t, err)

	// The head the gates saw moved: 409.
	_, err = b.client.Merge(ctx, b.repo, pr.Number, strings.Repeat("0", 40), "merge")
	fe := requireCode(t, err, forge.CodeConflict)
	require.ErrorIs(t, fe, jam.ErrConflict)
	require.False(t, fe.Retryable())

	_, err = b.client.Merge(ctx, b.repo, pr.Number, sha, "octopus")
	requireCode(t, err, forge.CodeInvalid)

	mainBefore := bareTip(t, b, "main")
	res, err := b.client.Merge(ctx, b.repo, pr.Number, sha, "merge")
	require.NoError(t, err)
	require.True(t, res.Merged)
	require.Equal(t, bareTip(t, b, "main"), res.SHA, "the base branch really moved")
	parents := strings.Fields(gitIn(t, b.srv.BareDir("o", "r"), "rev-list", "--parents", "-n1", res.SHA))
	require.Equal(t, []string{res.SHA, mainBefore, sha}, parents, "a merge commit of base and head")

	got, err := b.client.PullRequest(ctx, b.repo, pr.Number)
	require.NoError(t, err)
	require.True(t, got.Merged)
	require.Equal(t, "closed", got.State)

	// Merged already: 405.
	_, err = b.client.Merge(ctx, b.repo, pr.Number, sha, "merge")
	requireCode(t, err, forge.CodeNotMergeable)
	require.Empty(t, b.srv.Violations())
}

func TestClient_MergeConflictAndSquash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	one := b.branch(t, "one", "same.txt", "one\n")
	two := b.branch(t, "two", "same.txt", "two\n")
	p1, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "one", Base: "main", Title: "one"})
	require.NoError(t, err)
	p2, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "two", Base: "main", Title: "two"})
	require.NoError(t, err)

	mainBefore := bareTip(t, b, "main")
	res, err := b.client.Merge(ctx, b.repo, p1.Number, one, "squash")
	require.NoError(t, err)
	parents := strings.Fields(gitIn(t, b.srv.BareDir("o", "r"), "rev-list", "--parents", "-n1", res.SHA))
	require.Equal(t, []string{res.SHA, mainBefore}, parents, "a squash commit has one parent")

	// two now conflicts with main: not mergeable.
	got, err := b.client.PullRequest(ctx, b.repo, p2.Number)
	require.NoError(t, err)
	require.NotNil(t, got.Mergeable)
	require.False(t, *got.Mergeable)
	_, err = b.client.Merge(ctx, b.repo, p2.Number, two, "merge")
	requireCode(t, err, forge.CodeNotMergeable)
	require.Equal(t, res.SHA, bareTip(t, b, "main"))
}

func TestClient_MergeRebase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	sha := b.branch(t, "ff", "b.txt", "b\n")
	p, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "ff", Base: "main", Title: "ff"})
	require.NoError(t, err)
	res, err := b.client.Merge(ctx, b.repo, p.Number, sha, "rebase")
	require.NoError(t, err)
	require.Equal(t, sha, res.SHA, "a head on top of the base fast-forwards it")
	require.Equal(t, sha, bareTip(t, b, "main"))

	// A head that does not contain the base cannot be rebased by the double.
	gitIn(t, b.work, "fetch", "--quiet", b.srv.BareDir("o", "r"), "main")
	gitIn(t, b.work, "reset", "--quiet", "--hard", "FETCH_HEAD")
	old := gitIn(t, b.work, "rev-parse", "HEAD~1")
	gitIn(t, b.work, "checkout", "--quiet", "-B", "behind", old)
	behind := writeCommit(t, b.work, "c.txt", "c\n", "behind")
	b.push(t, "behind")
	p2, err := b.client.CreateDraftPullRequest(ctx, b.repo, forge.NewPullRequest{Head: "behind", Base: "main", Title: "behind"})
	require.NoError(t, err)
	_, err = b.client.Merge(ctx, b.repo, p2.Number, behind, "rebase")
	requireCode(t, err, forge.CodeNotMergeable)
	require.Equal(t, sha, bareTip(t, b, "main"))
}

func TestClient_Failures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(s *forgetest.Server)
		check func(t *testing.T, fe *forge.Error)
	}{
		{name: "5xx", setup: func(s *forgetest.Server) { s.FailNext(1, 502) }, check: func(t *testing.T, fe *forge.Error) {
			require.Equal(t, forge.CodeUnavailable, fe.Code)
			require.Equal(t, 502, fe.Status)
			require.True(t, fe.Retryable())
			require.ErrorIs(t, fe, jam.ErrUnavailable)
			require.NotEmpty(t, fe.RequestID)
		}},
		{name: "503 declared", setup: func(s *forgetest.Server) { s.FailNext(1, 503) }, check: func(t *testing.T, fe *forge.Error) {
			require.Equal(t, forge.CodeUnavailable, fe.Code)
			require.Equal(t, 503, fe.Status)
		}},
		{name: "429", setup: func(s *forgetest.Server) { s.RateLimitNext(1, 42*time.Second) }, check: func(t *testing.T, fe *forge.Error) {
			require.Equal(t, forge.CodeRateLimited, fe.Code)
			require.Equal(t, 429, fe.Status)
			require.Equal(t, 42*time.Second, fe.RetryAfter)
			require.True(t, fe.Retryable())
			require.ErrorIs(t, fe, jam.ErrUnavailable)
		}},
		{name: "revoked", setup: func(s *forgetest.Server) { s.Revoke() }, check: func(t *testing.T, fe *forge.Error) {
			require.Equal(t, forge.CodeCredentialInvalid, fe.Code)
			require.Equal(t, 401, fe.Status)
			require.False(t, fe.Retryable())
			require.ErrorIs(t, fe, jam.ErrUnauthenticated)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := t.Context()
			tc.setup(b.srv)
			_, err := b.client.PullRequest(ctx, b.repo, 1)
			var fe *forge.Error
			require.True(t, errors.As(err, &fe), "%v", err)
			tc.check(t, fe)
			require.NotContains(t, err.Error(), b.srv.Token())
		})
	}
}

func TestClient_RevokedGitAndREST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lsRemote := func() (string, error) {
		auth := base64.StdEncoding.EncodeToString([]byte("x:" + b.srv.Token()))
		cmd := exec.Command("git", "-c", "http.extraHeader=Authorization: Basic "+auth, "ls-remote", b.srv.GitURL("o", "r"))
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := lsRemote()
	require.NoError(t, err, out)
	require.Contains(t, out, bareTip(t, b, "main")+"\trefs/heads/main")

	b.srv.Revoke()
	_, err = b.client.Authenticated(t.Context())
	requireCode(t, err, forge.CodeCredentialInvalid)
	out, err = lsRemote()
	require.Error(t, err, "git refuses the revoked token too")
	require.NotContains(t, out, "refs/heads/main")
}

func TestClient_StallTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.StallNext(1, time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := b.client.PullRequest(ctx, b.repo, 1)
	fe := requireCode(t, err, forge.CodeUnavailable)
	require.True(t, fe.Retryable())
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestClient_SendsBearerAndUserAgent(t *testing.T) {
	t.Parallel()
	var gotAuth, gotUA, gotVersion string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotUA, gotVersion = r.Header.Get("Authorization"), r.Header.Get("User-Agent"), r.Header.Get("X-GitHub-Api-Version")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"login":"octocat"}`))
	}))
	defer srv.Close()
	c, err := forge.New("tok123", forge.Options{BaseURL: srv.URL, UserAgent: "jam/1"})
	require.NoError(t, err)
	login, err := c.Authenticated(t.Context())
	require.NoError(t, err)
	require.Equal(t, "octocat", login)
	require.Equal(t, "Bearer tok123", gotAuth)
	require.Equal(t, "jam/1", gotUA)
	require.Equal(t, "2022-11-28", gotVersion)
}
