package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/delivery"
	"github.com/jamhq/jam/internal/forge/forgetest"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink safe for the runner's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bundle is a sealed SQLite store holding one session whose change set
// edits, adds and deletes files of a repository, a GitHub double holding
// that repository's main, and a GitHub connection to it.
type bundle struct {
	st     store.Store
	ws     jam.WorkspaceID
	minter *jam.Minter
	gh     *forgetest.Server
	repo   string // the session's repository
	base   string // main's commit, which the change set sits on
	cs     store.ChangeSet
	conn   store.Connection
	log    *syncBuffer
	jobs   *job.Runner
	svc    *delivery.Service
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com",
		"GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// opener opens a sealed store of one dialect.
type opener func(t *testing.T, dir string, box *secret.Box) store.Store

func openSQLite(t *testing.T, dir string, box *secret.Box) store.Store {
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box})
	require.NoError(t, err)
	return st
}

func openPostgres(t *testing.T, _ string, box *secret.Box) store.Store {
	st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(t), Sealer: box})
	require.NoError(t, err)
	return st
}

// dialects runs f on SQLite and on PostgreSQL (where the test run has
// one: JAM_TEST_POSTGRES_URL).
func dialects(t *testing.T, f func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); f(t, openSQLite) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); f(t, openPostgres) })
}

func setup(t *testing.T, tune func(*delivery.Config)) *bundle { return setupOn(t, openSQLite, tune) }

func setupOn(t *testing.T, open opener, tune func(*delivery.Config)) *bundle {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	st := open(t, dir, box)
	t.Cleanup(func() { assert.NoError(t, st.Close()) })
	b := &bundle{st: st, minter: jam.NewMinter(nil, nil), log: &syncBuffer{}}
	now := time.Now()
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](b.minter), Name: "w", At: now})
	require.NoError(t, err)
	b.ws = w.ID

	// The session's repository: main at base; the change set between two
	// checkpoint commits on base, as jam takes them.
	b.repo = filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(b.repo, 0o755))
	gitT(t, b.repo, "init", "-q", "-b", "main")
	put := func(name, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(b.repo, name), []byte(data), 0o644))
	}
	put("README.md", "# widgets\n")
	put("calc.go", "package calc\n\nfunc Add(a, b int) int { return a - b }\n")
	put("old.txt", "to be removed\n")
	gitT(t, b.repo, "add", "-A")
	gitT(t, b.repo, "commit", "-q", "-m", "base")
	b.base = gitT(t, b.repo, "rev-parse", "HEAD")
	from := gitT(t, b.repo, "commit-tree", "-p", b.base, "-m", "checkpoint 1", b.base+"^{tree}")
	put("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	put("calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n")
	require.NoError(t, os.Remove(filepath.Join(b.repo, "old.txt")))
	gitT(t, b.repo, "add", "-A")
	tree := gitT(t, b.repo, "write-tree")
	to := gitT(t, b.repo, "commit-tree", "-p", b.base, "-m", "checkpoint 2", tree)
	gitT(t, b.repo, "reset", "-q", "--hard", b.base)
	gitDir := filepath.Join(b.repo, ".git")

	acct, err := st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](b.minter), WorkspaceID: b.ws, Profile: "p", BandURL: "https://band.example",
		UserID: "0b8f9a52-5e3c-4b61-9a7e-2f1d3c4b5a60", Handle: "owner", KeySealed: []byte("sealed"), CreatedAt: now})
	require.NoError(t, err)
	peer, err := st.PeerPut(ctx, store.Peer{WorkspaceID: b.ws, AccountID: acct.ID, Key: jam.PeerKey{Profile: "p", Scope: "coder"},
		AgentID: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", Handle: "coder", Name: "Coder", KeySealed: []byte("sealed"), CreatedAt: now})
	require.NoError(t, err)
	tm, err := st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: peer.Key, Desired: store.TemplateConfig{Harness: "acp", Command: []string{"jam", "demo-agent"},
		Placement: jam.PlacementShared, Permission: "allow"}, CreatedAt: now})
	require.NoError(t, err)
	sess, err := st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: peer.Key,
		Room: "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a", CreatedAt: now})
	require.NoError(t, err)
	var cps [2]store.Checkpoint
	for i, commit := range []string{from, to} {
		cps[i], err = st.CheckpointInsert(ctx, store.Checkpoint{ID: jam.New[jam.SnapshotID](b.minter), WorkspaceID: b.ws, SessionID: sess.ID, Seq: i + 1,
			Phase: store.CheckpointRequest, GitDir: gitDir, Ref: "refs/jam/checkpoints/s/" + string(rune('1'+i)), Commit: commit,
			Tree: gitT(t, b.repo, "rev-parse", commit+"^{tree}"), BaseCommit: b.base, CreatedAt: now})
		require.NoError(t, err)
	}
	cs, err := changeset.Capture(ctx, gitDir, from, to, changeset.Options{})
	require.NoError(t, err)
	cs.ID, cs.WorkspaceID, cs.SessionID, cs.Origin = jam.New[jam.ChangeSetID](b.minter), b.ws, sess.ID, store.ChangeSetRequest
	cs.BaseCheckpoint, cs.EndCheckpoint, cs.CreatedAt = cps[0].ID, cps[1].ID, now
	b.cs, err = st.ChangeSetInsert(ctx, cs)
	require.NoError(t, err)
	require.Len(t, b.cs.Files, 3)

	b.gh = forgetest.Start(t)
	b.gh.AddRepo("acme", "widgets", "main", gitDir)
	b.conn, err = st.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](b.minter), WorkspaceID: b.ws, Provider: store.ProviderGitHub,
		Name: "work", BaseURL: b.gh.APIURL(), CreatedAt: now}, []byte(b.gh.Token()))
	require.NoError(t, err)

	b.jobs, err = job.New(job.Config{Workspace: b.ws, Owner: "test", Lease: 10 * time.Second, Poll: 20 * time.Millisecond,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, Minter: b.minter}, st)
	require.NoError(t, err)
	cfg := delivery.Config{Workspace: b.ws, Minter: b.minter, MaxAttempts: 5,
		Logger: slog.New(slog.NewTextHandler(b.log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if tune != nil {
		tune(&cfg)
	}
	b.svc, err = delivery.New(cfg, st, b.jobs)
	require.NoError(t, err)
	return b
}

// start runs the job runner until the test ends.
func (b *bundle) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.jobs.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// request is a delivery of the change set to the double with a draft PR.
func (b *bundle) request() delivery.Request {
	return delivery.Request{ChangeSet: b.cs.ID, Remote: b.gh.GitURL("acme", "widgets"), Connection: "work", PR: true, Repo: "acme/widgets"}
}

// wait returns the operation once it has ended.
func (b *bundle) wait(t *testing.T, id jam.OperationID) store.Operation {
	t.Helper()
	var op store.Operation
	require.Eventually(t, func() bool {
		var err error
		op, err = b.st.OperationGet(t.Context(), b.ws, id)
		require.NoError(t, err)
		return op.State.Terminal()
	}, 60*time.Second, 10*time.Millisecond, "the operation ends")
	return op
}

func (b *bundle) evidence(t *testing.T, id jam.OperationID) []store.Evidence {
	t.Helper()
	ev, err := b.st.EvidenceList(t.Context(), b.ws, id)
	require.NoError(t, err)
	return ev
}

// steps lists the evidence as "step:event".
func steps(ev []store.Evidence) []string {
	out := make([]string, 0, len(ev))
	for _, e := range ev {
		out = append(out, e.Step+":"+string(e.Event))
	}
	return out
}

// requireDelivered checks that the double's branch is the change set's
// after-state on main's commit, with one draft pull request of it.
func (b *bundle) requireDelivered(t *testing.T, d store.Delivery) {
	t.Helper()
	bare := b.gh.BareDir("acme", "widgets")
	tip := gitT(t, bare, "rev-parse", "refs/heads/"+d.Branch)
	require.Equal(t, d.Commit, tip, "the branch is at the delivered commit")
	require.Equal(t, b.base, gitT(t, bare, "rev-parse", tip+"^"), "on the change set's base")
	require.NoError(t, changeset.VerifyTree(t.Context(), bare, tip, b.cs), "every digest of the manifest matches the pushed tree")
	msg := gitT(t, bare, "log", "-1", "--format=%B", tip)
	require.Contains(t, msg, "Jam-Change-Set: "+string(b.cs.ID))
	require.Contains(t, msg, "Jam-Session: "+string(b.cs.SessionID))
	prs := b.gh.PullRequests("acme", "widgets")
	require.Len(t, prs, 1, "one pull request")
	pr := prs[0]
	require.True(t, pr.Draft)
	require.Equal(t, d.Branch, pr.HeadRef)
	require.Equal(t, tip, pr.HeadSHA)
	require.Equal(t, d.PRNumber, pr.Number)
	require.Contains(t, pr.Body, string(b.cs.ID))
	require.Contains(t, pr.Body, string(b.cs.SessionID))
	require.Empty(t, b.gh.Violations(), "every request and response fits GitHub's description")
}

func TestDeliver_endToEnd(t *testing.T) {
	t.Parallel()
	dialects(t, testEndToEnd)
}

func testEndToEnd(t *testing.T, open opener) {
	b := setupOn(t, open, nil)
	b.start(t)
	ctx := t.Context()
	d, err := b.svc.Deliver(ctx, b.request())
	require.NoError(t, err)
	require.Equal(t, "jam/"+string(b.cs.ID), d.Branch)
	require.Equal(t, "main", d.Base, "the repository's default branch, read from GitHub")
	op := b.wait(t, d.Operation)
	require.Equal(t, store.OperationSucceeded, op.State, "%s: %s", op.ErrorCode, op.Error)
	require.Len(t, op.Jobs, 3, "one job per step")
	d, err = b.svc.Get(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DeliveryPROpen, d.State)
	b.requireDelivered(t, d)
	ev := b.evidence(t, d.Operation)
	require.Equal(t, []string{"build:start", "build:end", "push:start", "push:end", "pull_request:start", "pull_request:end"}, steps(ev))
	var pushed, opened map[string]any
	require.NoError(t, json.Unmarshal(ev[3].Detail, &pushed))
	require.Equal(t, d.Commit, pushed["remote_sha"])
	require.NoError(t, json.Unmarshal(ev[5].Detail, &opened))
	require.EqualValues(t, d.PRNumber, opened["pr_number"])
	require.Equal(t, d.PRURL, opened["pr_url"])
	require.NotEmpty(t, opened["request_id"], "GitHub's request id is evidence")
	var res map[string]any
	require.NoError(t, json.Unmarshal(op.Result, &res))
	require.Equal(t, d.PRURL, res["pr_url"])

	// Asking again returns the first delivery and opens nothing more.
	again, err := b.svc.Deliver(ctx, b.request())
	require.NoError(t, err)
	require.Equal(t, d.ID, again.ID)
	b.requireDelivered(t, d)
	require.NotContains(t, b.log.String(), b.gh.Token(), "the token is never logged")
}

func TestDeliver_localPathWithoutPR(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start(t)
	remote := filepath.Join(t.TempDir(), "plain.git")
	gitT(t, t.TempDir(), "init", "-q", "--bare", remote)
	d, err := b.svc.Deliver(t.Context(), delivery.Request{ChangeSet: b.cs.ID, Remote: remote, Branch: "feature/x"})
	require.NoError(t, err)
	require.Empty(t, d.ConnectionID, "no connection for a local path")
	op := b.wait(t, d.Operation)
	require.Equal(t, store.OperationSucceeded, op.State, "%s: %s", op.ErrorCode, op.Error)
	d, err = b.svc.Get(t.Context(), d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DeliveryPushed, d.State)
	require.Equal(t, d.Commit, gitT(t, remote, "rev-parse", "refs/heads/feature/x"))
}

// TestDeliver_transientFaults: GitHub's 5xx, a 429 with Retry-After and
// a stalled answer are retried with backoff (the 429 no sooner than it
// asked), shown in the job and the evidence, and the delivery still ends
// with one draft pull request.
func TestDeliver_transientFaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		fault func(gh *forgetest.Server)
		// wait is the least time between the failed attempt and the next.
		wait time.Duration
	}{
		{"5xx", func(gh *forgetest.Server) { gh.FailNext(2, http.StatusBadGateway) }, 0},
		{"429 with Retry-After", func(gh *forgetest.Server) { gh.RateLimitNext(1, time.Second) }, time.Second},
		{"timeout", func(gh *forgetest.Server) { gh.StallNext(1, 10*time.Second) }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *delivery.Config) { c.HTTPClient = &http.Client{Timeout: 500 * time.Millisecond} })
			d, err := b.svc.Deliver(t.Context(), b.request())
			require.NoError(t, err)
			// The runner starts after the fault is armed: the build and the
			// push reach no REST route, so the pull request step meets it.
			tt.fault(b.gh)
			b.start(t)
			op := b.wait(t, d.Operation)
			require.Equal(t, store.OperationSucceeded, op.State, "%s: %s", op.ErrorCode, op.Error)
			d, err = b.svc.Get(t.Context(), d.ID)
			require.NoError(t, err)
			b.requireDelivered(t, d)
			ev := b.evidence(t, d.Operation)
			var failed []store.Evidence
			for i, e := range ev {
				if e.Event != store.EvidenceError {
					continue
				}
				failed = append(failed, e)
				var m map[string]any
				require.NoError(t, json.Unmarshal(e.Detail, &m))
				require.Equal(t, false, m["final"], "a transient failure is not final")
				require.Equal(t, "remote_unreachable", m["code"])
				require.Equal(t, "pull_request", e.Step)
				require.Less(t, i+1, len(ev))
				require.GreaterOrEqual(t, ev[i+1].At.Sub(e.At), tt.wait, "the retry waited")
			}
			require.NotEmpty(t, failed, "the failed attempts are evidence: %v", steps(ev))
			var prJob store.Job
			require.Eventually(t, func() bool {
				prJob, err = b.st.JobGet(t.Context(), b.ws, op.Jobs[2])
				require.NoError(t, err)
				return prJob.Terminal()
			}, 30*time.Second, 5*time.Millisecond, "the runner records the job's end")
			require.Equal(t, store.JobSucceeded, prJob.State)
			require.Equal(t, len(failed)+1, prJob.Attempt, "one attempt per failure, and the last went through")
			require.NotEmpty(t, prJob.Error, "the job shows its last failure")
		})
	}
}

// TestDeliver_revokedToken: a token revoked after the delivery was
// accepted fails it credential_invalid at once, with nothing retried.
func TestDeliver_revokedToken(t *testing.T) {
	t.Parallel()
	dialects(t, testRevokedToken)
}

func testRevokedToken(t *testing.T, open opener) {
	b := setupOn(t, open, nil)
	d, err := b.svc.Deliver(t.Context(), b.request())
	require.NoError(t, err)
	b.gh.Revoke()
	b.start(t)
	op := b.wait(t, d.Operation)
	require.Equal(t, store.OperationFailed, op.State)
	require.Equal(t, "credential_invalid", op.ErrorCode)
	d, err = b.svc.Get(t.Context(), d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DeliveryFailed, d.State)
	require.Equal(t, "credential_invalid", d.ErrorCode)
	var pushJob store.Job
	require.Eventually(t, func() bool {
		pushJob, err = b.st.JobGet(t.Context(), b.ws, op.Jobs[1])
		require.NoError(t, err)
		return pushJob.Terminal()
	}, 30*time.Second, 5*time.Millisecond, "the runner records the push job's end")
	require.Equal(t, store.JobDead, pushJob.State, "no retry mends a refused token")
	require.Equal(t, 1, pushJob.Attempt)
	require.NotContains(t, op.Error, b.gh.Token())
	require.NotContains(t, b.log.String(), b.gh.Token())
}

// TestDeliver_refusedAtOnce: what can be known before anything is stored
// is one clear error with a stable code.
func TestDeliver_refusedAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	other := jam.New[jam.ChangeSetID](b.minter)
	for _, tt := range []struct {
		name string
		req  func(r *delivery.Request)
		code string
	}{
		{"unknown change set", func(r *delivery.Request) { r.ChangeSet = other }, "not_found"},
		{"unreachable remote", func(r *delivery.Request) {
			r.Remote, r.Connection, r.PR = "http://127.0.0.1:1/acme/widgets.git", "", false
		}, "remote_unreachable"},
		{"no such repository", func(r *delivery.Request) { r.Remote = b.gh.GitURL("acme", "nothing") }, "remote_unreachable"},
		{"unknown connection", func(r *delivery.Request) { r.Connection = "home" }, "not_found"},
		{"connection of another host", func(r *delivery.Request) { r.Remote = "https://gitlab.example/acme/widgets.git" }, "invalid_argument"},
		{"credential in the URL", func(r *delivery.Request) {
			r.Remote = strings.Replace(b.gh.GitURL("acme", "widgets"), "http://", "http://x:"+b.gh.Token()+"@", 1)
		}, "invalid_argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := b.request()
			tt.req(&r)
			_, err := b.svc.Deliver(ctx, r)
			require.Error(t, err)
			require.Equal(t, tt.code, delivery.Code(err), "%v", err)
			require.NotContains(t, err.Error(), "\n", "one line")
			require.NotContains(t, err.Error(), b.gh.Token())
		})
	}
	t.Run("bad token", func(t *testing.T) {
		_, err := b.st.ConnectionRotate(ctx, b.ws, b.conn.ID, []byte("ghp_not-the-token"), time.Now())
		require.NoError(t, err)
		_, err = b.svc.Deliver(ctx, b.request())
		require.Error(t, err)
		require.Equal(t, "credential_invalid", delivery.Code(err), "%v", err)
		require.NotContains(t, err.Error(), "ghp_not-the-token")
	})
	t.Run("change set of another workspace", func(t *testing.T) {
		w, err := b.st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](b.minter), Name: "other", At: time.Now()})
		require.NoError(t, err)
		jobs, err := job.New(job.Config{Workspace: w.ID, Owner: "other", Minter: b.minter}, b.st)
		require.NoError(t, err)
		other, err := delivery.New(delivery.Config{Workspace: w.ID, Minter: b.minter}, b.st, jobs)
		require.NoError(t, err)
		r := b.request()
		r.Connection, r.PR = "", false
		_, err = other.Deliver(ctx, r)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's change set is not found")
		require.Equal(t, "not_found", delivery.Code(err))
		require.NotContains(t, err.Error(), "\n")
	})
	list, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws})
	require.NoError(t, err)
	require.Empty(t, list, "nothing refused was stored")
}

// TestDeliver_retryAFailedDelivery: a branch already elsewhere fails the
// push for good (conflict), never overwritten; once it is gone, asking
// again resumes the same delivery from its push.
func TestDeliver_retryAFailedDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.start(t)
	ctx := t.Context()
	remote := filepath.Join(t.TempDir(), "plain.git")
	gitT(t, t.TempDir(), "init", "-q", "--bare", remote)
	gitT(t, b.repo, "push", "-q", remote, b.base+":refs/heads/taken")
	req := delivery.Request{ChangeSet: b.cs.ID, Remote: remote, Branch: "taken"}
	d, err := b.svc.Deliver(ctx, req)
	require.NoError(t, err)
	op := b.wait(t, d.Operation)
	require.Equal(t, store.OperationFailed, op.State)
	require.Equal(t, "conflict", op.ErrorCode)
	require.Equal(t, b.base, gitT(t, remote, "rev-parse", "refs/heads/taken"), "the branch elsewhere is left as it was")
	d, err = b.svc.Get(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DeliveryFailed, d.State)
	require.NotEmpty(t, d.Commit, "the build stands")

	gitT(t, remote, "update-ref", "-d", "refs/heads/taken")
	again, err := b.svc.Deliver(ctx, req)
	require.NoError(t, err)
	require.Equal(t, d.ID, again.ID, "the same delivery")
	require.Equal(t, d.Operation, again.Operation)
	require.Eventually(t, func() bool {
		got, err := b.svc.Get(ctx, d.ID)
		require.NoError(t, err)
		return got.State == store.DeliveryPushed
	}, time.Minute, 10*time.Millisecond)
	op = b.wait(t, d.Operation)
	require.Equal(t, store.OperationSucceeded, op.State, "%s: %s", op.ErrorCode, op.Error)
	require.Equal(t, d.Commit, gitT(t, remote, "rev-parse", "refs/heads/taken"))
	require.Equal(t, []string{"build:start", "build:end", "push:start", "push:error", "retry:note", "push:start", "push:end"}, steps(b.evidence(t, d.Operation)))
}

// TestMerge_gates: a merge is refused, naming the gate, without approval,
// while a check is red or pending, and once the head moved; allowed once
// green and approved, after which the delivery is merged.
func TestMerge_gates(t *testing.T) {
	t.Parallel()
	dialects(t, testMergeGates)
}

func testMergeGates(t *testing.T, open opener) {
	b := setupOn(t, open, nil)
	b.start(t)
	ctx := t.Context()
	d, err := b.svc.Deliver(ctx, b.request())
	require.NoError(t, err)
	require.Equal(t, store.OperationSucceeded, b.wait(t, d.Operation).State)
	d, err = b.svc.Get(ctx, d.ID)
	require.NoError(t, err)
	gate := func(req delivery.MergeRequest) string {
		t.Helper()
		_, err := b.svc.Merge(ctx, d.ID, req)
		var ge *delivery.GateError
		require.ErrorAs(t, err, &ge)
		require.ErrorIs(t, err, jam.ErrGateRefused)
		require.Equal(t, "gate_refused", delivery.Code(err))
		return ge.Gate + ": " + ge.Reason
	}
	require.Contains(t, gate(delivery.MergeRequest{}), delivery.GateApproval)
	yes := delivery.MergeRequest{Approved: true}
	b.gh.SetStatus(d.Commit, "ci/build", "failure")
	b.gh.SetCheckRun(d.Commit, "lint", "in_progress", "")
	refusal := gate(yes)
	require.Contains(t, refusal, delivery.GateChecks)
	require.Contains(t, refusal, "ci/build")
	require.Contains(t, refusal, "lint")
	b.gh.SetStatus(d.Commit, "ci/build", "success")
	require.Contains(t, gate(yes), "pending: lint")
	b.gh.SetCheckRun(d.Commit, "lint", "completed", "success")
	_, err = b.svc.Merge(ctx, d.ID, delivery.MergeRequest{Approved: true, Method: "octopus"})
	require.ErrorIs(t, err, jam.ErrInvalid)

	// Someone pushes onto the branch: the head is no longer what jam delivered.
	clone := filepath.Join(t.TempDir(), "clone")
	gitT(t, t.TempDir(), "clone", "-q", "--branch", d.Branch, b.gh.BareDir("acme", "widgets"), clone)
	require.NoError(t, os.WriteFile(filepath.Join(clone, "extra.txt"), []byte("later\n"), 0o644))
	gitT(t, clone, "add", "-A")
	gitT(t, clone, "commit", "-q", "-m", "later")
	moved := gitT(t, clone, "rev-parse", "HEAD")
	gitT(t, clone, "push", "-q", "origin", "HEAD:refs/heads/"+d.Branch)
	b.gh.SetStatus(moved, "ci/build", "success")
	require.Contains(t, gate(yes), delivery.GateHead)
	gitT(t, clone, "push", "-q", "--force", "origin", d.Commit+":refs/heads/"+d.Branch)

	op, err := b.svc.Merge(ctx, d.ID, yes)
	require.NoError(t, err)
	op = b.wait(t, op.ID)
	require.Equal(t, store.OperationSucceeded, op.State, "%s: %s", op.ErrorCode, op.Error)
	require.Equal(t, []string{"gates:note", "merge:start", "merge:end"}, steps(b.evidence(t, op.ID)))
	d, err = b.svc.Get(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DeliveryMerged, d.State)
	require.Equal(t, "merged", d.PRState)
	require.True(t, b.gh.PullRequests("acme", "widgets")[0].Merged)
	require.Contains(t, gate(yes), delivery.GateState, "merged is final")
	require.Empty(t, b.gh.Violations())
}

// TestMerge_reviewGate: with the review gate asked (by the request or by
// the configuration), a merge is refused while no review of the change
// set was submitted and while the newest requests changes, and allowed
// once it approves; the gates' evidence names the review.
func TestMerge_reviewGate(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var review *delivery.Review
	asked := map[jam.ChangeSetID]int{}
	b := setup(t, func(c *delivery.Config) {
		c.Reviews = func(_ context.Context, cs jam.ChangeSetID) (delivery.Review, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			asked[cs]++
			if review == nil {
				return delivery.Review{}, false, nil
			}
			return *review, true, nil
		}
	})
	b.start(t)
	ctx := t.Context()
	d, err := b.svc.Deliver(ctx, b.request())
	require.NoError(t, err)
	require.Equal(t, store.OperationSucceeded, b.wait(t, d.Operation).State)
	d, err = b.svc.Get(ctx, d.ID)
	require.NoError(t, err)
	b.gh.SetStatus(d.Commit, "ci/build", "success")
	req := delivery.MergeRequest{Approved: true, RequireReview: true}
	gate := func() string {
		t.Helper()
		_, err := b.svc.Merge(ctx, d.ID, req)
		var ge *delivery.GateError
		require.ErrorAs(t, err, &ge)
		require.Equal(t, delivery.GateReview, ge.Gate)
		return ge.Reason
	}
	require.Contains(t, gate(), "none has been submitted")
	set := func(r *delivery.Review) {
		mu.Lock()
		defer mu.Unlock()
		review = r
	}
	set(&delivery.Review{Delegation: "del_x", Agent: "local/rev", Approved: false})
	require.Contains(t, gate(), "del_x by local/rev) requests changes")
	set(&delivery.Review{Delegation: "del_y", Agent: "local/rev", Approved: true})
	op, err := b.svc.Merge(ctx, d.ID, req)
	require.NoError(t, err)
	op = b.wait(t, op.ID)
	require.Equal(t, store.OperationSucceeded, op.State, "%s: %s", op.ErrorCode, op.Error)
	ev := b.evidence(t, op.ID)
	require.Contains(t, string(ev[0].Detail), `"review":"del_y"`)
	mu.Lock()
	require.Equal(t, 3, asked[d.ChangeSetID], "the delivery's own change set is asked about")
	mu.Unlock()

	// Without the gate asked, no review is needed.
	plain := setup(t, nil)
	plain.start(t)
	d2, err := plain.svc.Deliver(ctx, plain.request())
	require.NoError(t, err)
	require.Equal(t, store.OperationSucceeded, plain.wait(t, d2.Operation).State)
	d2, err = plain.svc.Get(ctx, d2.ID)
	require.NoError(t, err)
	plain.gh.SetStatus(d2.Commit, "ci/build", "success")
	_, err = plain.svc.Merge(ctx, d2.ID, delivery.MergeRequest{Approved: true, RequireReview: true})
	var ge *delivery.GateError
	require.ErrorAs(t, err, &ge, "asked without reviews configured")
	require.Equal(t, delivery.GateReview, ge.Gate)
	_, err = plain.svc.Merge(ctx, d2.ID, delivery.MergeRequest{Approved: true})
	require.NoError(t, err)
}
