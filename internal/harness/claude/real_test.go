package claude_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/claude"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// step bounds one exchange with the real CLI: seconds alone, much more
// on two loaded cores under the race detector.
const step = 3 * time.Minute

// bash is a reply calling Claude Code's Bash tool.
func bash(command string) fakemodel.Reply {
	args, _ := json.Marshal(map[string]string{"command": command, "description": "run " + command})
	return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "Bash", Arguments: args}}
}

// turns are the model requests that were the CLI's turns.
func turns(model *fakemodel.Server) []fakemodel.Captured {
	var out []fakemodel.Captured
	for _, c := range model.Requests() {
		if fakemodel.Turn(c) {
			out = append(out, c)
		}
	}
	return out
}

// history is every message's text of a request.
func history(c fakemodel.Captured) string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(string(m.Content))
		b.WriteString("\n")
	}
	return b.String()
}

// realSubject is the real Claude Code against its own fake model.
func realSubject(t *testing.T) (harnesstest.Subject, *fakemodel.Server) {
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cl := realagent.NewClaude(t, model)
	slow := make([]string, 200)
	for i := range slow {
		slow[i] = "slow "
	}
	const echo, slowPrompt, approve = "say hello", "take your time", "make a file"
	return harnesstest.Subject{
		Harness: claude.Harness{},
		Spec:    harness.LaunchSpec{Argv: cl.Command(), Executor: local.New(), Dir: t.TempDir(), Env: cl.Env, HandshakeTimeout: step},
		Dir:     func(t *testing.T) string { return t.TempDir() },
		Echo:    echo, Want: "FAKE-REPLY: " + echo, Slow: slowPrompt, Approval: approve,
		BeforePrompt: func(prompt string) {
			switch prompt {
			case slowPrompt:
				model.Push(fakemodel.Reply{Text: slow, Delay: fakemodel.Duration(300 * time.Millisecond)})
			case approve:
				model.Push(bash("touch made.txt"))
			}
		},
		SawHistory: func(t *testing.T, earlier string) bool {
			ts := turns(model)
			return len(ts) > 0 && strings.Contains(history(ts[len(ts)-1]), earlier)
		},
		Timeout: step,
	}, model
}

// TestClaude_conformance runs the seam's suite against the real Claude
// Code and the fake model (JAM_REQUIRE_CLAUDE=1 requires it).
func TestClaude_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		s, _ := realSubject(t)
		return s
	})
}

// TestClaude drives the real Claude Code through the harness: a Bash call
// the allow policy lets run creates its file; the usage is what the fake
// model reported and the cost what the CLI reports; a slow answer is
// interrupted and the next turn answers in the same process; then, in a
// new process started with --resume and the reject policy, the history
// reaches the model and a Bash call is denied and does not run.
func TestClaude(t *testing.T) {
	t.Parallel()
	s, model := realSubject(t)
	wt := s.Spec.Dir
	start := func(policy harness.Policy, resume harness.Thread) harness.Process {
		spec := s.Spec
		spec.Logger, spec.Policy, spec.Resume = slog.New(slog.DiscardHandler), policy, resume
		ctx, cancel := context.WithTimeout(t.Context(), step)
		defer cancel()
		p, err := claude.Harness{}.Launch(ctx, spec)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		return p
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*step)
	defer cancel()
	first := start(harness.PolicyAllow, "")
	thread, err := first.Open(ctx, wt)
	require.NoError(t, err)

	// Text, with the usage the model reported and the CLI's cost.
	model.Push(fakemodel.Reply{Text: []string{"Hello ", "from the ", "fake model."}})
	out, err := first.Prompt(ctx, thread, harness.Input{Text: "say hello"}, nil)
	require.NoError(t, err)
	require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
	require.Equal(t, "Hello from the fake model.", out.Text)
	ts := turns(model)
	require.Len(t, ts, 1)
	in := 0
	for _, m := range ts[0].Messages {
		in += len(strings.Fields(string(m.Content)))
	}
	require.Equal(t, harness.Usage{InputTokens: int64(in), OutputTokens: 5, CostUSD: out.Usage.CostUSD}, out.Usage,
		"the tokens the fake model reported (it counts words)")
	require.Positive(t, out.Usage.CostUSD, "the CLI reports a cost")
	require.False(t, out.Usage.CostEstimated)
	require.NotEmpty(t, out.Model)
	require.Equal(t, "claude-code "+realagent.ClaudeVersion, first.Manifest().Agent, "the version system/init names")
	firstCost := out.Usage.CostUSD

	// An allowed Bash call runs in the working directory.
	model.Push(bash("echo allowed > allowed.txt"))
	var ups []harness.Update
	out, err = first.Prompt(ctx, thread, harness.Input{Text: "make a file"}, func(u harness.Update) { ups = append(ups, u) })
	require.NoError(t, err)
	require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
	b, err := os.ReadFile(filepath.Join(wt, "allowed.txt"))
	require.NoError(t, err, "the allowed command ran in the working directory")
	require.Equal(t, "allowed\n", string(b))
	var started, ended bool
	for _, u := range ups {
		started = started || (u.Kind == harness.UpdateToolStart && u.ToolKind == "execute")
		ended = ended || (u.Kind == harness.UpdateToolEnd && u.Status == harness.ToolCompleted)
	}
	require.True(t, started && ended, "the tool call was reported: %+v", ups)
	require.Less(t, out.Usage.CostUSD, firstCost*10, "a turn's cost, not the session's total")

	// A slow answer is interrupted; the next turn answers in the same
	// process.
	slow := make([]string, 100)
	for i := range slow {
		slow[i] = "slow "
	}
	model.Push(fakemodel.Reply{Text: slow, Delay: fakemodel.Duration(300 * time.Millisecond)})
	pctx, pcancel := context.WithCancel(ctx)
	var once bool
	out, err = first.Prompt(pctx, thread, harness.Input{Text: "take your time"}, func(u harness.Update) {
		if u.Kind == harness.UpdateText && !once {
			once = true
			pcancel()
		}
	})
	pcancel()
	require.NoError(t, err)
	require.Equal(t, harness.StopCancelled, out.StopReason)
	out, err = first.Prompt(ctx, thread, harness.Input{Text: "still there?"}, nil)
	require.NoError(t, err)
	require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
	require.Contains(t, out.Text, "still there?")
	require.NoError(t, first.Stop(ctx))

	// A new process on the thread: the model sees the history; the reject
	// policy denies Bash.
	second := start(harness.PolicyReject, thread)
	require.NoError(t, second.Resume(ctx, thread, wt))
	model.Push(bash("echo denied > denied.txt"))
	out, err = second.Prompt(ctx, thread, harness.Input{Text: "try another file"}, nil)
	require.NoError(t, err)
	t.Logf("denied turn: %s %q", out.StopReason, out.Text)
	require.NoFileExists(t, filepath.Join(wt, "denied.txt"), "the denied command did not run")
	ts = turns(model)
	require.Contains(t, history(ts[len(ts)-1]), "say hello", "the resumed session sent its history")
}
