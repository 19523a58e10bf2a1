package session

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// resultsManager is a manager that takes checkpoints and captures change
// sets, with its private root in a temporary directory.
func (b *bundle) resultsManager(t *testing.T, answer func(string) (harness.Outcome, error)) *Manager {
	t.Helper()
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Results: &ResultsConfig{PrivateRoot: filepath.Join(t.TempDir(), "checkpoints"), Exclude: []string{"secrets/"}},
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return &fakeHost{answer: answer, exited: make(chan struct{})}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	return m
}

// deliverTo hands session s a Band message and waits for its turn to end.
func (b *bundle) deliverTo(t *testing.T, m *Manager, s store.Session, msg jam.PlatformMessageID) store.Turn {
	t.Helper()
	require.NoError(t, m.Deliver(t.Context(), engine.Delivery{Binding: store.Binding{SessionID: s.ID, Mode: jam.RuntimeOwned, Peer: s.Peer, Room: s.Room},
		Row: store.QueueRow{MessageID: msg}}))
	var ended store.Turn
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, s.ID)
		require.NoError(t, err)
		for _, tr := range turns {
			if tr.SourceMessageID == msg && tr.State.Terminal() {
				ended = tr
				return true
			}
		}
		return false
	}, 30*time.Second, 5*time.Millisecond)
	// The worker lets go of the session just after the turn's end.
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, busy := m.busy[s.ID]
		return !busy
	}, 10*time.Second, time.Millisecond)
	return ended
}

// turnChangeSet is the one change set of a turn.
func (b *bundle) turnChangeSet(t *testing.T, turn store.Turn) store.ChangeSet {
	t.Helper()
	list, err := b.st.ChangeSetList(t.Context(), store.ChangeSetListParams{WorkspaceID: b.ws, SessionID: turn.SessionID, Turn: turn.ID})
	require.NoError(t, err)
	require.Len(t, list, 1, "turn %s has one change set", turn.ID)
	cs, err := b.st.ChangeSetGet(t.Context(), b.ws, list[0].ID)
	require.NoError(t, err)
	return cs
}

func paths(cs store.ChangeSet) []string {
	var out []string
	for _, f := range cs.Files {
		out = append(out, string(f.Kind)+" "+f.Path)
	}
	return out
}

// TestResults_turnsOfARepositorySession runs turns of real edits in a
// linked worktree: each succeeded turn's change set holds what it did; a
// turn that edits and reverts is empty; a failed turn's is salvage; the
// credential files the agent writes are in no checkpoint and no patch;
// the person's index, HEAD and branch are untouched; and the worktree
// removed after the third turn comes back as the third turn left it.
func TestResults_turnsOfARepositorySession(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	b := setup(t)
	ctx := t.Context()
	s, w := b.gitSession(t, repo)
	write := func(name, data string, mode os.FileMode) {
		p := filepath.Join(w.Path, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	steps := map[string]func() harness.StopReason{
		"one": func() harness.StopReason {
			write("main.go", "package main\n\nfunc main() {}\n", 0o644)
			write("run.sh", "#!/bin/sh\necho hi\n", 0o755)
			write(".env", "API_KEY=canary-env-7f3a\n", 0o600)
			write("deploy/id_rsa", "canary-key-7f3a\n", 0o600)
			write("secrets/token.txt", "canary-config-7f3a\n", 0o600)
			return harness.StopCompleted
		},
		"revert": func() harness.StopReason {
			write("main.go", "package main\n\nfunc main() { panic(1) }\n", 0o644)
			write("main.go", "package main\n\nfunc main() {}\n", 0o644)
			return harness.StopCompleted
		},
		"three": func() harness.StopReason {
			write("main.go", "package main\n\nfunc main() { println(\"three\") }\n", 0o644)
			require.NoError(t, os.Remove(filepath.Join(w.Path, "run.sh")))
			write("docs/a b ü.md", "unicode and spaces\n", 0o644)
			require.NoError(t, os.Symlink("main.go", filepath.Join(w.Path, "link")))
			return harness.StopCompleted
		},
		"fails": func() harness.StopReason {
			write("half.txt", "half done\n", 0o644)
			return harness.StopFailed
		},
	}
	// The fake settler's prompt is "ann wrote in the room:\ndo <id>".
	msgs, byID := map[string]jam.PlatformMessageID{}, map[string]string{}
	for i, step := range []string{"one", "revert", "three", "fails"} {
		msgs[step] = jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", 61+i))
		byID[string(msgs[step])] = step
	}
	m := b.resultsManager(t, func(text string) (harness.Outcome, error) {
		step := byID[text[strings.LastIndex(text, " ")+1:]]
		do, ok := steps[step]
		if !ok {
			return harness.Outcome{}, fmt.Errorf("no step for %q", text)
		}
		return harness.Outcome{StopReason: do(), ProviderReason: "end_turn", Text: "did " + step}, nil
	})
	headBefore, err := git(ctx, repo, "rev-parse", "HEAD")
	require.NoError(t, err)
	branchBefore, err := git(ctx, repo, "rev-parse", w.Branch)
	require.NoError(t, err)

	one := b.deliverTo(t, m, s, msgs["one"])
	require.Equal(t, jam.TurnSucceeded, one.State)
	cs := b.turnChangeSet(t, one)
	require.Equal(t, store.ChangeSetTurn, cs.Origin)
	require.Equal(t, []string{"added main.go", "added run.sh"}, paths(cs), "credential files and the configured exclusion are left out")
	require.Equal(t, uint32(0o100755), cs.Files[1].NewMode)
	require.Equal(t, 5, cs.Additions)

	rev := b.deliverTo(t, m, s, msgs["revert"])
	empty := b.turnChangeSet(t, rev)
	require.True(t, empty.Empty(), "an edit reverted in the same turn changes nothing: %v", paths(empty))
	require.Empty(t, empty.Patch)

	three := b.deliverTo(t, m, s, msgs["three"])
	cs3 := b.turnChangeSet(t, three)
	require.Equal(t, []string{"added docs/a b ü.md", "added link", "modified main.go", "deleted run.sh"}, paths(cs3))
	require.True(t, cs3.Files[1].Symlink)

	failed := b.deliverTo(t, m, s, msgs["fails"])
	require.Equal(t, jam.TurnFailed, failed.State)
	salvage := b.turnChangeSet(t, failed)
	require.Equal(t, store.ChangeSetSalvage, salvage.Origin)
	require.Equal(t, []string{"added half.txt"}, paths(salvage))

	// The person's repository: HEAD, branch and index as they were.
	headAfter, err := git(ctx, repo, "rev-parse", "HEAD")
	require.NoError(t, err)
	require.Equal(t, headBefore, headAfter)
	branchAfter, err := git(ctx, repo, "rev-parse", w.Branch)
	require.NoError(t, err)
	require.Equal(t, branchBefore, branchAfter, "the session branch does not move")
	staged, err := git(ctx, w.Path, "diff", "--cached", "--name-only")
	require.NoError(t, err)
	require.Empty(t, staged, "nothing staged in the worktree's index")

	// No canary in any checkpoint or patch.
	cps, err := b.st.CheckpointList(ctx, b.ws, s.ID)
	require.NoError(t, err)
	require.Len(t, cps, 8, "a start and an end checkpoint per turn")
	for _, c := range cps {
		require.Equal(t, "refs/jam/checkpoints/"+string(s.ID)+"/"+fmt.Sprint(c.Seq), c.Ref)
		files, err := git(ctx, repo, "ls-tree", "-r", "--name-only", c.Commit)
		require.NoError(t, err)
		for _, bad := range []string{".env", "id_rsa", "secrets/"} {
			require.NotContains(t, files, bad, "checkpoint %d", c.Seq)
		}
		grep, _ := git(ctx, repo, "grep", "-c", "canary", c.Commit)
		require.Empty(t, grep, "checkpoint %d holds no canary", c.Seq)
	}
	for _, c := range []store.ChangeSet{cs, empty, cs3, salvage} {
		require.NotContains(t, string(c.Patch), "canary")
	}

	// Removing the worktree and restoring it gives the latest state (the
	// failed turn's end), byte for byte; the credential files stay gone.
	want := map[string]string{}
	require.NoError(t, filepath.Walk(w.Path, func(p string, info os.FileInfo, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(w.Path, p)
		if rel == ".git" || rel == "." || info.IsDir() || rel == ".env" || strings.HasPrefix(rel, "deploy") || strings.HasPrefix(rel, "secrets") {
			return nil
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			require.NoError(t, err)
			want[rel] = "link:" + target
			return nil
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		want[rel] = fmt.Sprintf("%o:%s", info.Mode().Perm()&0o100, data)
		return nil
	}))
	require.Len(t, want, 4)
	_, err = m.RemoveWorktree(ctx, s.ID, true)
	require.NoError(t, err)
	require.NoDirExists(t, w.Path)
	cps, err = b.st.CheckpointList(ctx, b.ws, s.ID)
	require.NoError(t, err)
	require.Equal(t, store.CheckpointRequest, cps[len(cps)-1].Phase, "the remove took a checkpoint first")
	// The repository moves on meanwhile; the restore does not follow it.
	out, err := git(ctx, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "moved on")
	require.NoError(t, err, out)
	_, err = m.RestoreWorktree(ctx, s.ID, 0)
	require.NoError(t, err)
	wtHead, err := git(ctx, w.Path, "rev-parse", "HEAD")
	require.NoError(t, err)
	require.Equal(t, branchBefore, wtHead, "the restored worktree is at the checkpoint's base, not the repository's new HEAD")
	got := map[string]string{}
	require.NoError(t, filepath.Walk(w.Path, func(p string, info os.FileInfo, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(w.Path, p)
		if rel == ".git" || rel == "." || info.IsDir() {
			return nil
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			require.NoError(t, err)
			got[rel] = "link:" + target
			return nil
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		got[rel] = fmt.Sprintf("%o:%s", info.Mode().Perm()&0o100, data)
		return nil
	}))
	require.Equal(t, want, got)

	// The third turn's end, by its number: without what the failed turn
	// left after it.
	var thirdEnd int
	for _, c := range cps {
		if c.Turn == three.ID && c.Phase == store.CheckpointTurnEnd {
			thirdEnd = c.Seq
		}
	}
	require.NotZero(t, thirdEnd)
	_, err = m.RemoveWorktree(ctx, s.ID, true)
	require.NoError(t, err)
	_, err = m.RestoreWorktree(ctx, s.ID, thirdEnd)
	require.NoError(t, err)
	require.NoFileExists(t, filepath.Join(w.Path, "half.txt"))
	main, err := os.ReadFile(filepath.Join(w.Path, "main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main\n\nfunc main() { println(\"three\") }\n", string(main))
	// Removed again and restored by default: the latest checkpoint, the
	// one the remove took, so the third turn's state again.
	_, err = m.RemoveWorktree(ctx, s.ID, true)
	require.NoError(t, err)
	_, err = m.RestoreWorktree(ctx, s.ID, 0)
	require.NoError(t, err)
	require.NoFileExists(t, filepath.Join(w.Path, "half.txt"))

	// Captured on request: everything the session changed since its first
	// checkpoint.
	all, err := m.CaptureChangeSet(ctx, s.ID, 0)
	require.NoError(t, err)
	require.Equal(t, store.ChangeSetRequest, all.Origin)
	require.Equal(t, []string{"added docs/a b ü.md", "added link", "added main.go"}, paths(all), "the state the last remove saw: the third turn's")
	_, err = m.CaptureChangeSet(ctx, s.ID, 99)
	require.ErrorIs(t, err, jam.ErrNotFound)
	_, err = m.CaptureChangeSet(ctx, jam.New[jam.SessionID](b.m), 0)
	require.ErrorIs(t, err, jam.ErrNotFound)
}

// TestResults_plainDirectoryUsesAPrivateGitDir: a session without a
// repository gets its checkpoints in a private git directory, and its
// change sets all the same.
func TestResults_plainDirectoryUsesAPrivateGitDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	w, err := b.st.WorktreeForSession(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	m := b.resultsManager(t, func(string) (harness.Outcome, error) {
		if err := os.WriteFile(filepath.Join(w.Path, "notes.txt"), []byte("a\nb\n"), 0o644); err != nil {
			return harness.Outcome{}, err
		}
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "ok"}, nil
	})
	tr := b.deliverTo(t, m, b.sess, "0190a1b2-0000-4000-8000-000000000041")
	require.Equal(t, jam.TurnSucceeded, tr.State)
	cs := b.turnChangeSet(t, tr)
	require.Equal(t, []string{"added notes.txt"}, paths(cs))
	require.Equal(t, 2, cs.Additions)
	cps, err := b.st.CheckpointList(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Len(t, cps, 2)
	require.Equal(t, filepath.Join(m.cfg.Results.PrivateRoot, string(b.sess.ID)+".git"), cps[0].GitDir)
	require.Equal(t, "", cps[0].BaseCommit, "the private directory's first checkpoint has no parent")
	require.NoDirExists(t, filepath.Join(w.Path, ".git"), "the worktree itself gets no git directory")

	// The directory removed behind jam's back: the next turn finds it
	// again as the last checkpoint left it.
	require.NoError(t, os.RemoveAll(w.Path))
	next := b.deliverTo(t, m, b.sess, "0190a1b2-0000-4000-8000-000000000042")
	require.Equal(t, jam.TurnSucceeded, next.State)
	data, err := os.ReadFile(filepath.Join(w.Path, "notes.txt"))
	require.NoError(t, err)
	require.Equal(t, "a\nb\n", string(data))
	require.True(t, b.turnChangeSet(t, next).Empty(), "the restored worktree is the last turn's end: the turn rewrote the same file")
}

// TestResults_salvagesATurnADeadDaemonLeftRunning: a turn that was
// running with its start checkpoint taken when the daemon died is
// salvaged as the daemon starts again, before it is marked interrupted.
func TestResults_salvagesATurnADeadDaemonLeftRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	w, err := b.st.WorktreeForSession(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	// The previous run: a lease, a running turn, its start checkpoint, and
	// the agent's edit; then the daemon died.
	l, err := b.st.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.m), Holder: string(b.sess.TemplateID), Pid: 1, At: time.Now()})
	require.NoError(t, err)
	tr, err := b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.m), WorkspaceID: b.ws, SessionID: b.sess.ID, Routing: jam.RoutingQueue,
		SourceMessageID: "0190a1b2-0000-4000-8000-000000000051", CreatedAt: time.Now()})
	require.NoError(t, err)
	for _, mv := range [][2]jam.TurnState{{jam.TurnQueued, jam.TurnPreparing}, {jam.TurnPreparing, jam.TurnRunning}} {
		_, err = b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: mv[0], To: mv[1], LeaseID: l.ID, LeaseGeneration: l.Generation,
			At: time.Now(), Execution: jam.New[jam.ExecutionID](b.m)})
		require.NoError(t, err)
	}
	root := filepath.Join(t.TempDir(), "checkpoints")
	dead := &Manager{cfg: Config{Workspace: b.ws, Store: b.st, Minter: b.m, Now: time.Now, Results: &ResultsConfig{PrivateRoot: root}}}
	_, err = dead.checkpoint(ctx, w, tr.ID, store.CheckpointTurnStart)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "partial.txt"), []byte("cut short\n"), 0o644))

	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Results: &ResultsConfig{PrivateRoot: root},
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return &fakeHost{answer: func(string) (harness.Outcome, error) {
				return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "answered"}, nil
			}, exited: make(chan struct{})}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	got, err := b.st.TurnGet(ctx, b.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, jam.TurnInterrupted, got.State)
	cs := b.turnChangeSet(t, got)
	require.Equal(t, store.ChangeSetSalvage, cs.Origin)
	require.Equal(t, []string{"added partial.txt"}, paths(cs))
}

// TestResults_commitTurns: with commit_turns, each succeeded turn's
// change set is committed to the session's branch with trailers naming
// it; credential files stay out, an empty turn commits nothing, a failed
// turn's salvage is not committed, and the worktree shows clean after.
func TestResults_commitTurns(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	b := setup(t)
	ctx := t.Context()
	tmpl, err := b.st.TemplateGet(ctx, b.ws, b.sess.TemplateID)
	require.NoError(t, err)
	tmpl.Desired.CommitTurns = true
	tmpl.Desired.Repo = repo
	tmpl.ID = jam.New[jam.TemplateID](b.m)
	tmpl.Peer = jam.PeerKey{Profile: "local", Scope: "committer"}
	tmpl, err = b.st.TemplatePut(ctx, tmpl)
	require.NoError(t, err)
	s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.m), WorkspaceID: b.ws, TemplateID: tmpl.ID, Peer: tmpl.Peer,
		Room: "0190a1b2-0000-4000-8000-0000000000cc", CreatedAt: time.Now()})
	require.NoError(t, err)
	w, err := worktree.New(ctx, filepath.Join(t.TempDir(), "worktrees"), jam.New[jam.WorktreeID](b.m), tmpl, s, time.Now())
	require.NoError(t, err)
	w, err = b.st.WorktreePut(ctx, w)
	require.NoError(t, err)
	stop := map[jam.PlatformMessageID]harness.StopReason{}
	edit := map[jam.PlatformMessageID]func(){
		"0190a1b2-0000-4000-8000-000000000071": func() {
			require.NoError(t, os.WriteFile(filepath.Join(w.Path, "a.txt"), []byte("a\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(w.Path, ".env"), []byte("SECRET=canary\n"), 0o600))
		},
		"0190a1b2-0000-4000-8000-000000000072": func() {},
		"0190a1b2-0000-4000-8000-000000000073": func() {
			require.NoError(t, os.WriteFile(filepath.Join(w.Path, "b.txt"), []byte("b\n"), 0o644))
		},
	}
	stop["0190a1b2-0000-4000-8000-000000000073"] = harness.StopFailed
	edit["0190a1b2-0000-4000-8000-000000000074"] = func() {
		require.NoError(t, os.WriteFile(filepath.Join(w.Path, "c.txt"), []byte("c\n"), 0o644))
	}
	stop["0190a1b2-0000-4000-8000-000000000074"] = harness.StopCancelled
	m := b.resultsManager(t, func(text string) (harness.Outcome, error) {
		id := jam.PlatformMessageID(text[strings.LastIndex(text, " ")+1:])
		edit[id]()
		reason := harness.StopCompleted
		if r, ok := stop[id]; ok {
			reason = r
		}
		return harness.Outcome{StopReason: reason, ProviderReason: "end_turn", Text: "ok"}, nil
	})
	tip := func() string {
		out, err := git(ctx, repo, "rev-parse", w.Branch)
		require.NoError(t, err)
		return out
	}
	start := tip()
	first := b.deliverTo(t, m, s, "0190a1b2-0000-4000-8000-000000000071")
	cs := b.turnChangeSet(t, first)
	require.NotEqual(t, start, tip(), "the turn is committed")
	body, err := git(ctx, repo, "log", "-1", "--format=%an%n%B", w.Branch)
	require.NoError(t, err)
	require.Contains(t, body, "jam\njam: turn "+string(first.ID)+" (1 file changed, +1 -0)")
	require.Contains(t, body, "Jam-Turn: "+string(first.ID))
	require.Contains(t, body, "Jam-ChangeSet: "+string(cs.ID))
	require.Contains(t, body, "Jam-Subject-Digest: "+cs.SubjectDigest)
	trailers, err := git(ctx, repo, "log", "-1", "--format=%(trailers:key=Jam-ChangeSet,valueonly)", w.Branch)
	require.NoError(t, err)
	require.Equal(t, string(cs.ID), trailers, "git reads them as trailers")
	files, err := git(ctx, repo, "show", "--name-only", "--format=", w.Branch)
	require.NoError(t, err)
	require.Equal(t, "a.txt", files, "the credential file is not committed")
	status, err := git(ctx, w.Path, "status", "--porcelain")
	require.NoError(t, err)
	require.Equal(t, "?? .env", status, "the worktree shows what the commit holds as committed")

	committed := tip()
	b.deliverTo(t, m, s, "0190a1b2-0000-4000-8000-000000000072")
	require.Equal(t, committed, tip(), "an empty change set commits nothing")
	failed := b.deliverTo(t, m, s, "0190a1b2-0000-4000-8000-000000000073")
	require.Equal(t, jam.TurnFailed, failed.State)
	require.Equal(t, committed, tip(), "salvage is not committed")
	require.Equal(t, store.ChangeSetSalvage, b.turnChangeSet(t, failed).Origin)
	cancelled := b.deliverTo(t, m, s, "0190a1b2-0000-4000-8000-000000000074")
	require.Equal(t, jam.TurnCancelled, cancelled.State)
	salvage := b.turnChangeSet(t, cancelled)
	require.Equal(t, store.ChangeSetSalvage, salvage.Origin, "a cancelled turn's capture is salvage")
	require.Equal(t, []string{"added c.txt"}, paths(salvage), "what the cancelled turn left (b.txt was the failed turn's)")
	require.Equal(t, committed, tip())
}
