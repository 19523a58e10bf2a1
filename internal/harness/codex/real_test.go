package codex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/codex"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// step bounds one exchange with the real Codex: a second or two alone,
// much more on two loaded cores under the race detector.
const step = 3 * time.Minute

// execCommand is a reply calling Codex's exec_command tool.
func execCommand(cmd string) fakemodel.Reply {
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "exec_command", Arguments: args}}
}

// slowReply streams for far longer than a test waits.
func slowReply() fakemodel.Reply {
	slow := make([]string, 200)
	for i := range slow {
		slow[i] = "slow "
	}
	return fakemodel.Reply{Text: slow, Delay: fakemodel.Duration(300 * time.Millisecond)}
}

// TestCodex_conformance runs the seam's suite against the real
// `codex app-server` and the fake model (JAM_REQUIRE_CODEX=1 requires
// it): each case has its model, its home and its process; the model
// echoes a prompt unless the case queues a slow answer or a command.
func TestCodex_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		model := fakemodel.New(fakemodel.Config{})
		require.NoError(t, model.Start())
		t.Cleanup(model.Stop)
		cx := realagent.NewCodex(t, model)
		const echo, slowPrompt, approve = "say hello", "take your time", "make a file"
		return harnesstest.Subject{
			Harness: codex.Harness{},
			Spec: harness.LaunchSpec{Argv: cx.Command(), Executor: local.New(), Dir: gitWorktree(t), Env: cx.Env,
				HandshakeTimeout: step, Secrets: []string{realagent.CodexKey}},
			Dir:  gitWorktree,
			Echo: echo, Want: "FAKE-REPLY: " + echo, Slow: slowPrompt, Approval: approve,
			BeforePrompt: func(prompt string) {
				switch prompt {
				case slowPrompt:
					model.Push(slowReply())
				case approve:
					model.Push(execCommand("touch made.txt"))
				}
			},
			Timeout: step,
		}
	})
}

// gitWorktree makes a repository with one commit and returns a linked
// worktree of it, as jam gives each owned session.
func gitWorktree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	repo, wt := filepath.Join(base, "repo"), filepath.Join(base, "wt")
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=jam", "-c", "user.email=jam@example.invalid"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	require.NoError(t, os.MkdirAll(repo, 0o755))
	git(repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("# project\n"), 0o644))
	git(repo, "add", ".")
	git(repo, "commit", "-q", "-m", "start")
	git(repo, "worktree", "add", "-q", "-b", "session", wt)
	return wt
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
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

// launchReal starts a real Codex under spec, stopped at the end of the
// test; its log is shown when the test fails.
func launchReal(t *testing.T, spec harness.LaunchSpec) harness.Process {
	t.Helper()
	logs := &syncBuffer{}
	spec.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if spec.HandshakeTimeout == 0 {
		spec.HandshakeTimeout = step
	}
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	p, err := codex.Harness{}.Launch(ctx, spec)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Stop(context.Background())
		if t.Failed() {
			t.Logf("codex log:\n%s", logs.String())
		}
	})
	return p
}

// collect gathers a turn's updates.
type collect struct {
	mu  sync.Mutex
	all []harness.Update
}

func (c *collect) add(u harness.Update) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, u)
}

func (c *collect) of(kind harness.UpdateKind) []harness.Update {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []harness.Update
	for _, u := range c.all {
		if u.Kind == kind {
			out = append(out, u)
		}
	}
	return out
}

// lastTurn is the last request that was one of the agent's turns.
func lastTurn(t *testing.T, reqs []fakemodel.Captured) fakemodel.Captured {
	t.Helper()
	for i := len(reqs) - 1; i >= 0; i-- {
		if fakemodel.Turn(reqs[i]) {
			return reqs[i]
		}
	}
	t.Fatal("no turn request reached the model")
	return fakemodel.Captured{}
}

func history(c fakemodel.Captured) string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(string(m.Content))
		b.WriteString("\n")
	}
	return b.String()
}
