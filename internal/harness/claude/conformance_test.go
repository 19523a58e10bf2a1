package claude_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/claude"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/realagent"
)

func TestMain(m *testing.M) {
	// The test binary, started again, plays a scripted claude.
	runFakeClaudeIfAsked()
	// A real claude confined to a network namespace reaches the fake
	// model through this test binary, started as a bridge.
	realagent.RunBridgeIfAsked()
	goleak.VerifyTestMain(m)
}

// fake is the Subject of the scripted claude; its sessions are kept in
// state.
func fake(t *testing.T) harnesstest.Subject {
	state := t.TempDir()
	return harnesstest.Subject{
		Harness: claude.Harness{},
		Spec: harness.LaunchSpec{Argv: []string{os.Args[0], "-test.run=^$"}, Executor: local.New(), Dir: t.TempDir(),
			Env: append(os.Environ(), fakeEnv+"=1", stateEnv+"="+state)},
		Dir:  func(t *testing.T) string { return t.TempDir() },
		Echo: "say hello", Want: "echo: say hello", Slow: "[slow] think", Approval: "[tool] write a note",
		SawHistory: func(t *testing.T, earlier string) bool {
			entries, err := filepath.Glob(filepath.Join(state, "*.seen"))
			require.NoError(t, err)
			for _, e := range entries {
				b, _ := os.ReadFile(e)
				if strings.Contains(string(b), earlier) {
					return true
				}
			}
			return false
		},
	}
}

// TestHarness_conformance runs the seam's suite against the scripted
// claude.
func TestHarness_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, fake)
}

// edges is the scripted claude playing e.
func edges(t *testing.T, e harnesstest.Edge) harnesstest.EdgeSubject {
	s := fake(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s.Spec.Env = append(s.Spec.Env, edgeEnv+"="+string(e), pidFileEnv+"="+pidFile)
	s.Timeout = 20 * time.Second
	return harnesstest.EdgeSubject{Subject: s, LaunchedPid: func(t *testing.T) int {
		b, err := os.ReadFile(pidFile)
		require.NoError(t, err, "the scripted claude recorded no pid")
		pid, err := strconv.Atoi(string(b))
		require.NoError(t, err)
		return pid
	}}
}

// TestHarness_edges runs the seam's edge cases against the scripted
// claude.
func TestHarness_edges(t *testing.T) {
	t.Parallel()
	harnesstest.Edges(t, edges)
}

// launchFake starts the scripted claude with approve.
func launchFake(t *testing.T, s harnesstest.Subject, approve harness.Approval) harness.Process {
	t.Helper()
	s.Spec.Logger = slog.New(slog.DiscardHandler)
	s.Spec.Approve = approve
	p, err := claude.Harness{}.Launch(t.Context(), s.Spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// TestHarness_outcome: the result's usage (cache writes counted as input,
// cache reads as cached), the growth of the cumulative cost as the turn's
// cost, the init's model and version, the streamed answer without a
// sub-agent's text.
func TestHarness_outcome(t *testing.T) {
	t.Parallel()
	s := fake(t)
	p := launchFake(t, s, nil)
	thread, err := p.Open(t.Context(), s.Spec.Dir)
	require.NoError(t, err)
	var ups []harness.Update
	for i, want := range []float64{0.01, 0.01} {
		out, err := p.Prompt(t.Context(), thread, harness.Input{Text: "hi"}, func(u harness.Update) { ups = append(ups, u) })
		require.NoError(t, err)
		require.Equal(t, harness.StopCompleted, out.StopReason)
		require.Equal(t, "end_turn", out.ProviderReason)
		require.Equal(t, "echo: hi", out.Text, "turn %d", i)
		require.Equal(t, "fake-claude-model", out.Model)
		require.Equal(t, harness.Usage{InputTokens: 13, OutputTokens: 7, CachedTokens: 3, CostUSD: out.Usage.CostUSD}, out.Usage)
		require.InDelta(t, want, out.Usage.CostUSD, 1e-9, "turn %d's cost is the total's growth, not the total", i)
	}
	require.Equal(t, "claude-code 0.0.1-fake", p.Manifest().Agent)
	for _, u := range ups {
		require.NotContains(t, u.Text, "SUB", "a sub-agent's text is not streamed as the answer")
	}
}

// TestHarness_resumedCost: a resumed session's first turn costs the
// growth over the total get_usage reports at launch.
func TestHarness_resumedCost(t *testing.T) {
	t.Parallel()
	s := fake(t)
	p := launchFake(t, s, nil)
	thread, err := p.Open(t.Context(), s.Spec.Dir)
	require.NoError(t, err)
	for range 3 {
		_, err = p.Prompt(t.Context(), thread, harness.Input{Text: "hi"}, nil)
		require.NoError(t, err)
	}
	require.NoError(t, p.Stop(t.Context()))
	s.Spec.Resume = thread
	q := launchFake(t, s, nil)
	require.NoError(t, q.Resume(t.Context(), thread, s.Spec.Dir))
	_, err = q.Open(t.Context(), s.Spec.Dir)
	require.ErrorIs(t, err, jam.ErrInvalid, "a resumed process opens no new thread")
	out, err := q.Prompt(t.Context(), thread, harness.Input{Text: "hi"}, nil)
	require.NoError(t, err)
	require.InDelta(t, 0.01, out.Usage.CostUSD, 1e-9)
}

// TestHarness_resumeUnknownThread: a --resume of a thread the CLI does
// not have fails the launch with the CLI's reason, and no process is left.
func TestHarness_resumeUnknownThread(t *testing.T) {
	t.Parallel()
	s := fake(t)
	s.Spec.Logger = slog.New(slog.DiscardHandler)
	s.Spec.Resume = "11111111-2222-3333-4444-555555555555"
	_, err := claude.Harness{}.Launch(t.Context(), s.Spec)
	require.ErrorIs(t, err, jam.ErrUnavailable)
	require.Contains(t, err.Error(), "No conversation found")
}

// TestHarness_approvalRequest: can_use_tool reaches the callback in
// neutral terms, and an allow answers with the request's input.
func TestHarness_approvalRequest(t *testing.T) {
	t.Parallel()
	s := fake(t)
	var got []harness.ApprovalRequest
	p := launchFake(t, s, func(_ context.Context, r harness.ApprovalRequest) harness.Decision {
		got = append(got, r)
		return harness.AllowOnce
	})
	thread, err := p.Open(t.Context(), s.Spec.Dir)
	require.NoError(t, err)
	var ups []harness.Update
	out, err := p.Prompt(t.Context(), thread, harness.Input{Text: "[tool] go"}, func(u harness.Update) { ups = append(ups, u) })
	require.NoError(t, err)
	require.Equal(t, []harness.ApprovalRequest{{Thread: thread, ToolCallID: "toolu_1", Title: "Write NOTES.md", ToolKind: "edit"}}, got)
	require.Contains(t, out.Text, `(allow {"content":"note","file_path":"NOTES.md"})`, "allowed with the input unchanged")
	require.Contains(t, ups, harness.Update{Kind: harness.UpdateToolStart, ToolCallID: "toolu_1", Title: "Write NOTES.md", ToolKind: "edit", Status: harness.ToolInProgress})
	require.Contains(t, ups, harness.Update{Kind: harness.UpdateToolEnd, ToolCallID: "toolu_1", Status: harness.ToolCompleted})
}

// TestHarness_secretsHidden: a launch error hides the spec's secrets.
func TestHarness_secretsHidden(t *testing.T) {
	t.Parallel()
	s := fake(t)
	s.Spec.Logger = slog.New(slog.DiscardHandler)
	s.Spec.Resume = "sk-secret-value-1234"
	s.Spec.Secrets = []string{"sk-secret-value-1234"}
	_, err := claude.Harness{}.Launch(t.Context(), s.Spec)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "sk-secret-value-1234")
}
