package acp_test

import (
	"context"
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
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// copilotSubject is the real `copilot --acp` (through the copilot kind)
// against its own fake model: the model echoes a prompt unless the case
// queues a slow answer or a bash call. Copilot puts the date before the
// person's text in the message it sends, so the echo holds the prompt
// after it.
func copilotSubject(t *testing.T) harnesstest.Subject {
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cp := realagent.NewCopilot(t, model)
	slow := make([]string, 200)
	for i := range slow {
		slow[i] = "slow "
	}
	const echo, slowPrompt, approve = "say hello", "take your time", "make a file"
	return harnesstest.Subject{
		Harness: acp.Copilot,
		Spec:    harness.LaunchSpec{Argv: cp.Command(), Executor: local.New(), Dir: gitWorktree(t), Env: cp.Env, HandshakeTimeout: step},
		Dir:     gitWorktree,
		Echo:    echo, Want: "\n\n" + echo, Slow: slowPrompt, Approval: approve,
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
}

// TestCopilot_conformance runs the seam's suite against the real Copilot
// CLI in its ACP mode (JAM_REQUIRE_COPILOT=1 requires it).
func TestCopilot_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, copilotSubject)
}

// TestCopilot_policyDecidesBash: a bash call the allow policy lets run
// creates its file in the worktree, and one the reject policy refuses
// does not; the usage Copilot reports for a turn is the Outcome's; the
// configured model, which Copilot's ACP sessions cannot select, reaches
// the model through its command line.
func TestCopilot_policyDecidesBash(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cp := realagent.NewCopilot(t, model)
	t.Logf("copilot %s, network namespace: %v", cp.Binary, cp.Isolated)
	ctx, cancel := context.WithTimeout(t.Context(), 6*step)
	defer cancel()
	for _, tc := range []struct {
		policy harness.Policy
		file   string
	}{{harness.PolicyAllow, "allowed.txt"}, {harness.PolicyReject, "denied.txt"}} {
		wt := gitWorktree(t)
		logs := &syncBuffer{}
		p, err := acp.Copilot.Launch(ctx, harness.LaunchSpec{Argv: cp.Command(), Executor: local.New(), Dir: wt, Env: cp.Env,
			HandshakeTimeout: step, Policy: tc.policy, Model: realagent.AltModel, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = p.Stop(context.Background())
			if t.Failed() {
				t.Logf("copilot log:\n%s", logs.String())
			}
		})
		require.Equal(t, "copilot", p.Manifest().Harness)
		thread, err := p.Open(ctx, wt)
		require.NoError(t, err)
		before := len(model.Requests())
		model.Push(bash("echo made > " + tc.file))
		var updates []harness.Update
		out, err := p.Prompt(ctx, thread, harness.Input{Text: "make " + tc.file}, func(u harness.Update) { updates = append(updates, u) })
		require.NoError(t, err)
		t.Logf("%s: %s %q usage %+v", tc.policy, out.StopReason, out.Text, out.Usage)
		require.Equal(t, harness.StopCompleted, out.StopReason)
		var toolEnd *harness.Update
		for i := range updates {
			if updates[i].Kind == harness.UpdateToolEnd {
				toolEnd = &updates[i]
			}
		}
		require.NotNil(t, toolEnd, "the tool call ended: %+v", updates)
		require.Equal(t, reportedUsage(t, model.Requests()[before:]), out.Usage, "the usage the model reported over the turn's requests")
		for _, c := range model.Requests()[before:] {
			require.Equal(t, realagent.AltModel, c.Model, "the configured model, not the environment's")
		}
		if tc.policy == harness.PolicyAllow {
			b, err := os.ReadFile(filepath.Join(wt, tc.file))
			require.NoError(t, err, "the allowed command ran in the worktree")
			require.Equal(t, "made\n", string(b))
			require.Equal(t, harness.ToolCompleted, toolEnd.Status)
		} else {
			require.NoFileExists(t, filepath.Join(wt, tc.file), "the refused command did not run")
			require.Equal(t, harness.ToolFailed, toolEnd.Status)
		}
		require.NoError(t, p.Stop(ctx))
	}
}

// reportedUsage is what the fake model reported for these requests of
// one turn: the first answered with the scripted bash call (one output
// token), a later one answering the tool's result with "FAKE-DONE after
// tool" (three); input tokens are the words of each request's messages.
func reportedUsage(t *testing.T, reqs []fakemodel.Captured) harness.Usage {
	t.Helper()
	var u harness.Usage
	for i, c := range reqs {
		require.True(t, fakemodel.Turn(c), "request %d is one of the turn's", c.Seq)
		for _, m := range c.Messages {
			u.InputTokens += int64(len(strings.Fields(string(m.Content))))
		}
		switch {
		case i == 0:
			u.OutputTokens++
		case len(c.ToolResults()) > 0:
			u.OutputTokens += 3
		default:
			t.Fatalf("request %d is neither the bash call nor its follow-up", c.Seq)
		}
	}
	return u
}
