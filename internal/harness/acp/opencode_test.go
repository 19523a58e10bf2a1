package acp_test

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
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// step bounds one exchange with the real agent: a few seconds alone, much
// more on two loaded cores under the race detector.
const step = 3 * time.Minute

// TestOpenCode drives the real `opencode acp` through the harness against
// the fake model: a text answer, a bash call the allow policy lets run, a
// slow answer cancelled midway, then, in a new process with the reject
// policy, the session loaded with its history and a bash call refused.
func TestOpenCode(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	oc := realagent.NewOpenCode(t, model)
	t.Logf("opencode %s, network namespace: %v", oc.Binary, oc.Isolated)
	wt := gitWorktree(t)

	first := startOpenCode(t, oc, wt, harness.PolicyAllow)
	m := first.agent.Manifest()
	require.Equal(t, harness.ResumeInProcess, m.Resume, "opencode loads sessions")
	require.Contains(t, strings.ToLower(m.Agent), "opencode")
	// The whole exchange: ten steps.
	ctx, cancel := context.WithTimeout(t.Context(), 10*step)
	defer cancel()
	sid, err := first.agent.NewSession(ctx, wt)
	require.NoError(t, err)

	// A prompt answered with text.
	model.Push(fakemodel.Reply{Text: []string{"Hello ", "from the ", "fake model."}})
	res, err := first.agent.Prompt(ctx, sid, "say hello")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
	require.Equal(t, "Hello from the fake model.", res.Text)
	turns := model.Requests()
	last := lastTurn(t, turns)
	require.Contains(t, last.LastUser(), "say hello")
	require.Equal(t, "Bearer dummy", last.Authorization)
	require.Equal(t, realagent.AltModel, last.Model, "the configured model, set through opencode's session configuration option, not its default")
	require.True(t, last.Stream)
	require.True(t, last.OffersTool("bash"), "opencode offers its bash tool")

	// The model asks for bash; the allow policy lets the command run in the
	// worktree, and the model gets the tool's result.
	model.Push(bash("echo allowed > allowed.txt"))
	res, err = first.agent.Prompt(ctx, sid, "make a file")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
	require.Equal(t, "FAKE-DONE after tool", res.Text)
	b, err := os.ReadFile(filepath.Join(wt, "allowed.txt"))
	require.NoError(t, err, "the allowed command ran in the worktree")
	require.Equal(t, "allowed\n", string(b))
	follow := lastTurn(t, model.Requests())
	require.NotEmpty(t, follow.ToolResults(), "the follow-up request carries the tool's result")
	require.True(t, first.updates.has(func(u acp.Update) bool {
		return u.SessionUpdate.SessionUpdate == acp.UpdateToolCall && u.Kind == "execute"
	}), "the tool call was reported")

	// A slow answer is cancelled after its first chunk.
	slow := make([]string, 100)
	for i := range slow {
		slow[i] = "slow "
	}
	model.Push(fakemodel.Reply{Text: slow, Delay: fakemodel.Duration(300 * time.Millisecond)})
	pctx, pcancel := context.WithCancel(ctx)
	first.updates.onChunk(pcancel)
	start := time.Now()
	res, err = first.agent.Prompt(pctx, sid, "take your time")
	pcancel()
	require.NoError(t, err)
	require.Equal(t, acp.StopCancelled, res.StopReason)
	require.Less(t, strings.Count(res.Text, "slow"), len(slow), "cut short")
	t.Logf("cancelled after %s with %q", time.Since(start), res.Text)

	// The session goes on after the cancel.
	res, err = first.agent.Prompt(ctx, sid, "still there?")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
	require.Contains(t, res.Text, "FAKE-REPLY:")
	require.Contains(t, res.Text, "still there?")
	require.NoError(t, first.agent.Stop(ctx))

	// A new process loads the session: its history is replayed, and the
	// model sees the earlier turns.
	second := startOpenCode(t, oc, wt, harness.PolicyReject)
	require.NoError(t, second.agent.LoadSession(ctx, sid, wt))
	require.True(t, second.updates.has(func(u acp.Update) bool {
		return u.SessionUpdate.SessionUpdate == acp.UpdateUserMessageChunk && u.Content != nil && strings.Contains(u.Content.Text, "say hello")
	}), "the user's first prompt is replayed")
	require.True(t, second.updates.has(func(u acp.Update) bool {
		return u.SessionUpdate.SessionUpdate == acp.UpdateAgentMessageChunk && u.Content != nil && strings.Contains(u.Content.Text, "Hello ")
	}), "the first answer is replayed")

	// The reject policy refuses bash: the command does not run.
	before := len(model.Requests())
	model.Push(bash("echo denied > denied.txt"))
	res, err = second.agent.Prompt(ctx, sid, "try to make another file")
	require.NoError(t, err)
	t.Logf("refused turn: %s %q", res.StopReason, res.Text)
	require.NoFileExists(t, filepath.Join(wt, "denied.txt"), "the refused command did not run")
	resumed := lastTurn(t, model.Requests()[before:])
	require.Equal(t, realagent.AltModel, resumed.Model, "a loaded session runs the configured model too")
	var history []string
	for _, msg := range resumed.Messages {
		history = append(history, string(msg.Content))
	}
	require.Contains(t, strings.Join(history, "\n"), "say hello", "the resumed session sent its history")
	require.True(t, second.updates.has(func(u acp.Update) bool {
		return u.SessionUpdate.SessionUpdate == acp.UpdateToolCallUpdate && u.Status == "failed"
	}), "the refused tool call failed")
}

// bash is a reply calling opencode's bash tool.
func bash(command string) fakemodel.Reply {
	args, _ := json.Marshal(map[string]string{"command": command, "description": "run " + command})
	return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "bash", Arguments: args}}
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

// running is one opencode process under the harness.
type running struct {
	agent   *acp.Agent
	updates *updates
}

func startOpenCode(t *testing.T, oc *realagent.OpenCode, wt string, policy harness.Policy) running {
	t.Helper()
	logs := &syncBuffer{}
	u := &updates{}
	ctx, cancel := context.WithTimeout(t.Context(), step)
	defer cancel()
	a, err := acp.Start(ctx, acp.Config{
		Command: oc.Command(), Env: oc.Env, Dir: wt, Approve: policy.Approve, OnUpdate: u.add, Model: realagent.FakeAltModelID,
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		InitTimeout: step,
		// Long enough for a loaded machine to wind a cancelled turn down.
		StopGrace: 30 * time.Second,
	})
	t.Cleanup(func() {
		if a != nil {
			_ = a.Stop(context.Background())
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	require.NoError(t, err)
	return running{agent: a, updates: u}
}

// updates records an agent's session updates.
type updates struct {
	mu   sync.Mutex
	all  []acp.Update       // guarded by mu
	hook func(u acp.Update) // guarded by mu
}

func (r *updates) add(u acp.Update) {
	r.mu.Lock()
	r.all = append(r.all, u)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(u)
	}
}

func (r *updates) has(pred func(acp.Update) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.all {
		if pred(u) {
			return true
		}
	}
	return false
}

// onChunk calls f (once) at the next agent message chunk.
func (r *updates) onChunk(f func()) {
	var once sync.Once
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hook = func(u acp.Update) {
		if u.SessionUpdate.SessionUpdate == acp.UpdateAgentMessageChunk {
			once.Do(f)
		}
	}
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

// TestOpenCode_conformance runs the seam's suite against the real
// `opencode acp`, through the opencode kind (which adds `acp` to the
// command), and the fake model (JAM_REQUIRE_OPENCODE=1 requires it):
// each case has its model and its process; the model echoes a prompt
// unless the case queues a slow answer or a bash call.
func TestOpenCode_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		model := fakemodel.New(fakemodel.Config{})
		require.NoError(t, model.Start())
		t.Cleanup(model.Stop)
		oc := realagent.NewOpenCode(t, model)
		slow := make([]string, 200)
		for i := range slow {
			slow[i] = "slow "
		}
		const echo, slowPrompt, approve = "say hello", "take your time", "make a file"
		return harnesstest.Subject{
			Harness: acp.OpenCode,
			Spec: harness.LaunchSpec{Argv: oc.KindCommand(), Executor: local.New(), Dir: gitWorktree(t), Env: oc.Env,
				Model: realagent.FakeAltModelID, HandshakeTimeout: step},
			Dir:  gitWorktree,
			Echo: echo, Want: "FAKE-REPLY: " + echo, Slow: slowPrompt, Approval: approve,
			BeforePrompt: func(prompt string) {
				switch prompt {
				case slowPrompt:
					model.Push(fakemodel.Reply{Text: slow, Delay: fakemodel.Duration(300 * time.Millisecond)})
				case approve:
					model.Push(bash("touch made.txt"))
				}
			},
			Timeout: step,
		}
	})
}
