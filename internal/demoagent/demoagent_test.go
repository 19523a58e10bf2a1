package demoagent_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/demoagent"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/jam"
)

// TestMain doubles as the demo agent: with JAM_DEMO_AGENT_CHILD set, the
// test binary serves ACP on its stdio, so the tests drive a real child
// process through the real harness.
func TestMain(m *testing.M) {
	if os.Getenv("JAM_DEMO_AGENT_CHILD") == "1" {
		err := demoagent.Run(context.Background(), demoagent.Config{StateDir: os.Getenv("JAM_DEMO_STATE"), WordDelay: 20 * time.Millisecond}, os.Stdin, os.Stdout)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// updates collects what the agent streams.
type updates struct {
	mu  sync.Mutex
	all []acp.Update
	ch  chan acp.Update
}

func (u *updates) add(x acp.Update) {
	u.mu.Lock()
	u.all = append(u.all, x)
	u.mu.Unlock()
	select {
	case u.ch <- x:
	default:
	}
}

func (u *updates) kinds() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, x := range u.all {
		k := x.SessionUpdate.SessionUpdate
		if x.Status != "" {
			k += ":" + x.Status
		}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// waitFor waits for an update of kind.
func (u *updates) waitFor(t *testing.T, kind string) {
	t.Helper()
	for {
		select {
		case x := <-u.ch:
			if x.SessionUpdate.SessionUpdate == kind {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s update", kind)
		}
	}
}

func start(t *testing.T, state string, policy harness.Policy) (*acp.Agent, *updates) {
	t.Helper()
	u := &updates{ch: make(chan acp.Update, 256)}
	a, err := acp.Start(t.Context(), acp.Config{
		Command: []string{os.Args[0], "-test.run=^$"},
		Env:     append(os.Environ(), "JAM_DEMO_AGENT_CHILD=1", "JAM_DEMO_STATE="+state),
		Approve: policy.Approve, OnUpdate: u.add, Logger: slog.New(slog.DiscardHandler), StopGrace: time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	return a, u
}

func TestDemoAgent_turnNotesAndResume(t *testing.T) {
	t.Parallel()
	state, work := t.TempDir(), t.TempDir()
	a, u := start(t, state, harness.PolicyAllow)
	require.Equal(t, harness.Manifest{Harness: "acp", Version: harness.ManifestVersion, Agent: "jam-demo-agent 1", Sessions: harness.SessionsMany,
		Resume: harness.ResumeInProcess, Interrupt: true, Approvals: true}, a.Manifest())

	id, err := a.NewSession(t.Context(), work)
	require.NoError(t, err)
	res, err := a.Prompt(t.Context(), id, "please fix the build")
	require.NoError(t, err)
	require.Equal(t, acp.TurnResult{StopReason: acp.StopEndTurn, Text: "You said: please fix the build"}, res)
	notes, err := os.ReadFile(filepath.Join(work, demoagent.NotesFile))
	require.NoError(t, err)
	require.Equal(t, "# Notes\n\n- please fix the build\n", string(notes))
	require.Equal(t, []string{"tool_call:pending", "tool_call_update:completed", "agent_message_chunk"}, u.kinds())

	// A new process resumes the session: history is replayed, and the
	// next turn appends to the same notes.
	require.NoError(t, a.Stop(t.Context()))
	b, u2 := start(t, state, harness.PolicyAllow)
	require.NoError(t, b.LoadSession(t.Context(), id, work))
	require.Equal(t, []string{"user_message_chunk", "agent_message_chunk"}, u2.kinds())
	_, err = b.Prompt(t.Context(), id, "and the tests")
	require.NoError(t, err)
	notes, err = os.ReadFile(filepath.Join(work, demoagent.NotesFile))
	require.NoError(t, err)
	require.Equal(t, "# Notes\n\n- please fix the build\n- and the tests\n", string(notes))
}

func TestDemoAgent_rejectedPermissionWritesNothing(t *testing.T) {
	t.Parallel()
	a, _ := start(t, t.TempDir(), harness.PolicyReject)
	work := t.TempDir()
	id, err := a.NewSession(t.Context(), work)
	require.NoError(t, err)
	res, err := a.Prompt(t.Context(), id, "hello")
	require.NoError(t, err)
	require.Contains(t, res.Text, "not allowed")
	_, err = os.Stat(filepath.Join(work, demoagent.NotesFile))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestDemoAgent_cancelEndsTheTurn(t *testing.T) {
	t.Parallel()
	a, u := start(t, t.TempDir(), harness.PolicyAllow)
	id, err := a.NewSession(t.Context(), t.TempDir())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan acp.TurnResult, 1)
	go func() {
		res, _ := a.Prompt(ctx, id, "[slow] think hard")
		done <- res
	}()
	u.waitFor(t, acp.UpdateAgentThoughtChunk)
	cancel()
	require.Equal(t, acp.StopCancelled, (<-done).StopReason)
	// The session still works afterwards.
	res, err := a.Prompt(t.Context(), id, "again")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
}

// TestDemoAgent_cancelRightAwayIsNotLost: a cancel that follows the
// prompt at once (the turn was cancelled before it began) stops that
// prompt; the agent does not take it for a cancel of an earlier one.
func TestDemoAgent_cancelRightAwayIsNotLost(t *testing.T) {
	t.Parallel()
	a, _ := start(t, t.TempDir(), harness.PolicyAllow)
	id, err := a.NewSession(t.Context(), t.TempDir())
	require.NoError(t, err)
	for range 20 {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		res, err := a.Prompt(ctx, id, "[slow] never mind")
		require.NoError(t, err)
		require.Equal(t, acp.StopCancelled, res.StopReason)
	}
	// A cancel with no prompt running is not kept for the next one.
	require.NoError(t, a.Cancel(id))
	res, err := a.Prompt(t.Context(), id, "hello")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
}

func TestDemoAgent_killedMidTurn(t *testing.T) {
	t.Parallel()
	a, u := start(t, t.TempDir(), harness.PolicyAllow)
	id, err := a.NewSession(t.Context(), t.TempDir())
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Prompt(t.Context(), id, "[slow] long job")
		errc <- err
	}()
	u.waitFor(t, acp.UpdateAgentThoughtChunk)
	require.NoError(t, syscall.Kill(-a.Pid(), syscall.SIGKILL))
	err = <-errc
	require.ErrorIs(t, err, jam.ErrUnavailable, "a turn whose process died is unavailable, not an answer")
	<-a.Exited()
}

func TestDemoAgent_sessionDirMustExist(t *testing.T) {
	t.Parallel()
	a, _ := start(t, t.TempDir(), harness.PolicyAllow)
	_, err := a.NewSession(t.Context(), filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = a.NewSession(t.Context(), "relative/dir")
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = a.Prompt(t.Context(), "nope", "x")
	require.ErrorIs(t, err, jam.ErrNotFound)
	require.True(t, strings.HasPrefix(a.Manifest().Agent, demoagent.Name))
}

// TestDemoAgent_reportsTheUsageAskedFor: "[usage IN OUT]" in a prompt is
// the usage its answer reports, through ACP into the turn's result; a
// prompt without it reports none.
func TestDemoAgent_reportsTheUsageAskedFor(t *testing.T) {
	t.Parallel()
	a, _ := start(t, t.TempDir(), harness.PolicyAllow)
	id, err := a.NewSession(t.Context(), t.TempDir())
	require.NoError(t, err)
	for _, tt := range []struct {
		prompt string
		want   harness.Usage
	}{
		{"count this [usage 120 30]", harness.Usage{InputTokens: 120, OutputTokens: 30}},
		{"and this [usage 0 7] too", harness.Usage{OutputTokens: 7}},
		{"nothing to report [usage 1]", harness.Usage{}},
	} {
		res, err := a.Prompt(t.Context(), id, tt.prompt)
		require.NoError(t, err)
		require.Equal(t, tt.want, res.Usage, tt.prompt)
	}
}
