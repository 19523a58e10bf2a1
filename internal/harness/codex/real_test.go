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

	"github.com/jamhq/jam/internal/executor/bwrap"
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

// TestCodex_conformanceUnderBwrap runs the seam's suite against the real
// Codex as an owned agent runs it by default: under jam's bwrap executor
// with the network cut, in a home of its own, configured by -c options;
// every case's worktrees are under one directory the sandbox may write.
func TestCodex_conformanceUnderBwrap(t *testing.T) {
	t.Parallel()
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Skipf("bubblewrap cannot run here: %v", err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		model := fakemodel.New(fakemodel.Config{})
		require.NoError(t, model.Start())
		t.Cleanup(model.Stop)
		cx := realagent.NewCodex(t, model)
		ex, err := bwrap.New()
		require.NoError(t, err)
		home, trees := t.TempDir(), t.TempDir()
		const echo, slowPrompt, approve = "say hello", "take your time", "make a file"
		return harnesstest.Subject{
			Harness: codex.Harness{},
			Spec: harness.LaunchSpec{Argv: cx.SandboxCommand(), Executor: ex, Dir: home,
				Env:      append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, cx.SandboxEnv()...),
				Writable: []string{home, trees, cx.Home}, ReadOnly: []string{exe, cx.Binary}, NoNetwork: true,
				HandshakeTimeout: step, Secrets: []string{realagent.CodexKey}},
			Dir:  func(t *testing.T) string { return gitWorktreeIn(t, trees) },
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
	return gitWorktreeIn(t, t.TempDir())
}

// gitWorktreeIn is gitWorktree in a new directory under base.
func gitWorktreeIn(t *testing.T, base string) string {
	t.Helper()
	base, err := os.MkdirTemp(base, "wt")
	require.NoError(t, err)
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

// realSpec is a LaunchSpec running cx's Codex under the local executor.
func realSpec(t *testing.T, cx *realagent.Codex, policy harness.Policy) harness.LaunchSpec {
	return harness.LaunchSpec{Argv: cx.Command(), Executor: local.New(), Dir: cx.Home, Env: cx.Env, Policy: policy,
		Secrets: []string{realagent.CodexKey}}
}

// run is one turn to its end, with its updates.
func run(t *testing.T, p harness.Process, th harness.Thread, text string) (harness.Outcome, *collect) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	c := &collect{}
	out, err := p.Prompt(ctx, th, harness.Input{Text: text}, c.add)
	require.NoError(t, err, "prompt %q", text)
	return out, c
}

func openThread(t *testing.T, p harness.Process, dir string) harness.Thread {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	th, err := p.Open(ctx, dir)
	require.NoError(t, err)
	return th
}

// TestCodex_approvals: under the allow policy the model's exec_command
// runs in the worktree, reported as an execute tool call that completed;
// under the reject policy Codex is told no, the command does not run, the
// tool call fails, and the model gets the refusal as the tool's output.
func TestCodex_approvals(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	wt := gitWorktree(t)

	allow := launchReal(t, realSpec(t, cx, harness.PolicyAllow))
	th := openThread(t, allow, wt)
	model.Push(execCommand("echo approved > approved.txt"))
	out, c := run(t, allow, th, "make a file")
	require.Equal(t, harness.StopCompleted, out.StopReason, "reason %q", out.ProviderReason)
	require.Equal(t, "FAKE-DONE after tool", out.Text)
	b, err := os.ReadFile(filepath.Join(wt, "approved.txt"))
	require.NoError(t, err, "the approved command ran in the worktree; the model got %+v", lastTurn(t, model.Requests()).ToolResults())
	require.Equal(t, "approved\n", string(b))
	starts, ends := c.of(harness.UpdateToolStart), c.of(harness.UpdateToolEnd)
	require.Len(t, starts, 1)
	require.Equal(t, "execute", starts[0].ToolKind)
	require.Contains(t, starts[0].Title, "echo approved > approved.txt")
	require.Len(t, ends, 1)
	require.Equal(t, harness.ToolCompleted, ends[0].Status)
	require.Equal(t, starts[0].ToolCallID, ends[0].ToolCallID)
	require.NotEmpty(t, lastTurn(t, model.Requests()).ToolResults(), "the model got the command's output")

	reject := launchReal(t, realSpec(t, cx, harness.PolicyReject))
	th = openThread(t, reject, wt)
	model.Push(execCommand("echo declined > declined.txt"))
	out, c = run(t, reject, th, "make another file")
	require.Equal(t, harness.StopCompleted, out.StopReason, "the turn goes on after a refusal: %q", out.ProviderReason)
	require.NoFileExists(t, filepath.Join(wt, "declined.txt"), "the declined command did not run")
	ends = c.of(harness.UpdateToolEnd)
	require.Len(t, ends, 1)
	require.Equal(t, harness.ToolFailed, ends[0].Status, "a declined command's tool call failed")
	results := lastTurn(t, model.Requests()).ToolResults()
	require.NotEmpty(t, results, "the model got the refusal as the tool's output")
	require.Contains(t, strings.ToLower(string(results[len(results)-1].Content)), "rejected", "the tool output says it was refused")
}

// TestCodex_usage: a turn's Outcome.Usage is exactly what the fake model's
// response.completed events of that turn reported (input less its cached
// part, which jam counts apart), summed over the
// turn's two model responses (a tool call, then the answer), and the next
// turn's is its own, not the thread's running total. Each usage report
// reaches the stream too.
func TestCodex_usage(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	p := launchReal(t, realSpec(t, cx, harness.PolicyAllow))
	th := openThread(t, p, gitWorktree(t))

	call := execCommand("echo counted > counted.txt")
	call.Usage = &fakemodel.Usage{Input: 1200, Cached: 400, Output: 35, Reasoning: 12}
	model.Push(call, fakemodel.Reply{Text: []string{"done"}, Usage: &fakemodel.Usage{Input: 1300, Cached: 1100, Output: 9, Reasoning: 4}})
	out, c := run(t, p, th, "count my tokens")
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Equal(t, harness.Usage{InputTokens: 1000, CachedTokens: 1500, OutputTokens: 44, ReasoningTokens: 16}, out.Usage)
	require.Equal(t, fakemodel.DefaultModel, out.Model, "the thread's model")
	usage := c.of(harness.UpdateUsage)
	require.NotEmpty(t, usage)
	require.Equal(t, out.Usage, *usage[len(usage)-1].Usage, "the last usage update is the turn's")

	model.Push(fakemodel.Reply{Text: []string{"again"}, Usage: &fakemodel.Usage{Input: 1400, Cached: 1300, Output: 2, Reasoning: 1}})
	out, _ = run(t, p, th, "and now?")
	require.Equal(t, harness.Usage{InputTokens: 100, CachedTokens: 1300, OutputTokens: 2, ReasoningTokens: 1}, out.Usage,
		"the second turn's own usage, not the thread's total")
}

// TestCodex_resumeSendsHistory: a thread resumed in a new process
// (thread/resume) sends the earlier turns to the model with the next one.
func TestCodex_resumeSendsHistory(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	wt := gitWorktree(t)
	first := launchReal(t, realSpec(t, cx, harness.PolicyAllow))
	th := openThread(t, first, wt)
	out, _ := run(t, first, th, "remember the word kumquat")
	require.Equal(t, harness.StopCompleted, out.StopReason)
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	require.NoError(t, first.Stop(ctx))

	second := launchReal(t, realSpec(t, cx, harness.PolicyAllow))
	require.NoError(t, second.Resume(ctx, th, wt))
	before := len(model.Requests())
	out, _ = run(t, second, th, "which word?")
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Equal(t, "FAKE-REPLY: which word?", out.Text)
	req := lastTurn(t, model.Requests()[before:])
	h := history(req)
	require.Contains(t, h, "remember the word kumquat", "the earlier prompt went to the model")
	require.Contains(t, h, "FAKE-REPLY: remember the word kumquat", "and the earlier answer")
}

// TestCodex_interruptMidTurn: Interrupt stops a streaming turn
// (turn/interrupt with the turn's id): Prompt returns StopCancelled with
// what was said so far, and the thread's next turn answers.
func TestCodex_interruptMidTurn(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	p := launchReal(t, realSpec(t, cx, harness.PolicyAllow))
	th := openThread(t, p, gitWorktree(t))
	model.Push(slowReply())
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	var once sync.Once
	errs := make(chan error, 1)
	start := time.Now()
	out, err := p.Prompt(ctx, th, harness.Input{Text: "take your time"}, func(u harness.Update) {
		if u.Kind == harness.UpdateText {
			once.Do(func() { errs <- p.Interrupt(ctx, th) })
		}
	})
	require.NoError(t, err)
	require.NoError(t, <-errs)
	require.Equal(t, harness.StopCancelled, out.StopReason)
	require.Equal(t, codex.TurnInterrupted, out.ProviderReason)
	require.Less(t, time.Since(start), 200*300*time.Millisecond/2, "cut short")
	out, _ = run(t, p, th, "still there?")
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Equal(t, "FAKE-REPLY: still there?", out.Text)
}

// TestCodex_underBwrap: Codex runs under jam's bwrap executor, cut off the
// network (the fake model reached through the bridge inside the sandbox),
// configured by -c options in a home of its own,
// with the sandbox mode the harness gives every thread: an approved
// exec_command writes its worktree, and one writing outside the sandbox's
// writable paths fails, so jam's sandbox confines what Codex runs.
func TestCodex_underBwrap(t *testing.T) {
	t.Parallel()
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Skipf("bubblewrap cannot run here: %v", err)
	}
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	wt := gitWorktree(t)
	outside := t.TempDir()
	ex, err := bwrap.New()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	// As an owned agent runs: a home of its own (CODEX_HOME defaults to
	// its .codex), the configuration as -c options, the key in the
	// environment.
	home := t.TempDir()
	p := launchReal(t, harness.LaunchSpec{Argv: cx.SandboxCommand(), Executor: ex, Dir: home,
		Env:      append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, cx.SandboxEnv()...),
		Writable: []string{filepath.Dir(wt), home, cx.Home}, ReadOnly: []string{exe, cx.Binary}, NoNetwork: true,
		Policy: harness.PolicyAllow, Secrets: []string{realagent.CodexKey}})
	th := openThread(t, p, wt)

	model.Push(execCommand("echo sandboxed > inside.txt"))
	out, _ := run(t, p, th, "write inside")
	require.Equal(t, harness.StopCompleted, out.StopReason, "reason %q", out.ProviderReason)
	b, err := os.ReadFile(filepath.Join(wt, "inside.txt"))
	require.NoError(t, err, "the approved command ran in the worktree; the model got %+v", lastTurn(t, model.Requests()).ToolResults())
	require.Equal(t, "sandboxed\n", string(b))

	escape := filepath.Join(outside, "escape.txt")
	model.Push(execCommand("echo escaped > " + escape))
	out, _ = run(t, p, th, "write outside")
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.NoFileExists(t, escape, "a command cannot write outside the sandbox")
	results := lastTurn(t, model.Requests()).ToolResults()
	require.NotEmpty(t, results)
	require.Contains(t, string(results[len(results)-1].Content), "exited with code 1", "the command failed inside the sandbox")
}

// TestCodex_steer: input steered into a running turn (turn/steer) reaches
// the model within that turn: while the model holds its first answer the
// input is added, and the turn's next model request carries it.
func TestCodex_steer(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	p := launchReal(t, realSpec(t, cx, harness.PolicyAllow))
	require.True(t, p.Manifest().Steer)
	th := openThread(t, p, gitWorktree(t))
	gate := make(chan struct{})
	model.Push(fakemodel.Reply{Text: []string{"working"}, Hold: gate})
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	type result struct {
		out harness.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := p.Prompt(ctx, th, harness.Input{Text: "start the refactor"}, nil)
		done <- result{out, err}
	}()
	_, err := model.WaitRequests(ctx, 1, fakemodel.Turn)
	require.NoError(t, err)
	// The turn's id is known once turn/start answered, before the model
	// was asked.
	require.NoError(t, p.Steer(ctx, th, harness.Input{Text: "also rename the package"}))
	close(gate)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, harness.StopCompleted, r.out.StopReason)
	reqs := model.Requests()
	require.GreaterOrEqual(t, len(reqs), 2, "the steered input made another request in the turn")
	last := lastTurn(t, reqs)
	require.Equal(t, "also rename the package", last.LastUser())
	require.Contains(t, history(last), "start the refactor")
	require.Contains(t, r.out.Text, "FAKE-REPLY: also rename the package")
}
