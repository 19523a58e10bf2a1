package harnesstest

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// Edge names a misbehaviour a scripted process plays for Edges; a real
// CLI cannot be made to, so only scripted subjects run them.
type Edge string

const (
	// EdgeMalformedLine: the turn streams some output, then the process
	// writes a line that is not the protocol's and lives on.
	EdgeMalformedLine Edge = "malformed-line"
	// EdgeOversizeLine: the turn streams some output, then the process
	// writes a line that never ends (far beyond the protocol's bound on
	// a message) and lives on.
	EdgeOversizeLine Edge = "oversize-line"
	// EdgeSilentHandshake: the process records its pid (LaunchedPid) and
	// never answers its handshake.
	EdgeSilentHandshake Edge = "silent-handshake"
	// EdgeOutputAfterCancel: Slow's turn, once cancelled, ends at once
	// and the process then sends more output on its thread, all of it
	// before it answers its next request (an Open; for a process of one
	// thread, Manifest Sessions one, the next turn).
	EdgeOutputAfterCancel Edge = "output-after-cancel"
)

// EdgeSubject is a scripted subject playing one Edge.
type EdgeSubject struct {
	Subject
	// LaunchedPid returns the pid the last launched process recorded
	// (EdgeSilentHandshake only).
	LaunchedPid func(t *testing.T) int
}

// EdgeFactory makes a subject whose processes play e.
type EdgeFactory func(t *testing.T, e Edge) EdgeSubject

// edgeHandshake is the handshake timeout EdgeSilentHandshake launches
// with when the subject sets none.
const edgeHandshake = 500 * time.Millisecond

// Edges runs the edge cases against scripted processes: a malformed or an
// oversize line mid-turn fails the turn (no hang, no panic) and ends the
// process; a handshake that never answers fails Launch within the
// handshake timeout and leaves no process behind; output a process sends
// after a cancelled turn returned reaches nobody.
func Edges(t *testing.T, f EdgeFactory) {
	t.Run("MalformedLineMidTurn", func(t *testing.T) { t.Parallel(); brokenLine(t, f(t, EdgeMalformedLine)) })
	t.Run("OversizeLineMidTurn", func(t *testing.T) { t.Parallel(); brokenLine(t, f(t, EdgeOversizeLine)) })
	t.Run("HandshakeNeverAnswers", func(t *testing.T) { t.Parallel(); silentHandshake(t, f(t, EdgeSilentHandshake)) })
	t.Run("OutputAfterCancel", func(t *testing.T) { t.Parallel(); outputAfterCancel(t, f(t, EdgeOutputAfterCancel)) })
}

// brokenLine: the turn fails, without a hang, and the process is gone.
func brokenLine(t *testing.T, s EdgeSubject) {
	p := launch(t, s.Subject, harness.PolicyAllow.Approve)
	thread := open(t, s.Subject, p, s.Dir(t))
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	st := newStream(t)
	s.before(s.Echo)
	_, err := p.Prompt(ctx, thread, harness.Input{Text: s.Echo}, st.add)
	st.ended.Store(true)
	require.Error(t, err, "a turn whose process broke the protocol fails")
	require.NoError(t, ctx.Err(), "the turn failed at the broken line, not at the test's deadline: %v", err)
	select {
	case <-p.Exited():
	case <-time.After(s.timeout()):
		t.Fatalf("Exited is not closed after the process broke the protocol")
	}
	_, err = p.Prompt(ctx, thread, harness.Input{Text: s.Echo}, nil)
	require.Error(t, err, "a process that broke the protocol runs no turn")
}

func silentHandshake(t *testing.T, s EdgeSubject) {
	spec := s.Spec
	if spec.HandshakeTimeout == 0 {
		spec.HandshakeTimeout = edgeHandshake
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.DiscardHandler)
	}
	spec.Approve = harness.PolicyAllow.Approve
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	start := time.Now()
	p, err := s.Harness.Launch(ctx, spec)
	took := time.Since(start)
	if err == nil {
		_ = p.Stop(context.Background())
		t.Fatalf("Launch succeeded against a process that never answers its handshake")
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, "the error says the handshake timed out")
	// The handshake timeout, and the stop that follows it.
	require.Less(t, took, spec.HandshakeTimeout+10*time.Second, "Launch failed only after %v", took)
	require.NoError(t, ctx.Err(), "Launch failed at the test's deadline")
	pid := s.LaunchedPid(t)
	require.Positive(t, pid)
	// Launch has returned: the process must be reaped already (a zombie
	// still answers signal 0), and its group empty.
	require.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "process %d outlived its failed launch", pid)
	require.True(t, errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH), "process group %d outlived its failed launch", pid)
}

func outputAfterCancel(t *testing.T, s EdgeSubject) {
	p := launch(t, s.Subject, harness.PolicyAllow.Approve)
	thread := open(t, s.Subject, p, s.Dir(t))
	cancel, wait := slowTurn(t, s.Subject, p, thread)
	cancel()
	out, err := wait()
	require.NoError(t, err)
	require.Equal(t, harness.StopCancelled, out.StopReason, "provider reason %q", out.ProviderReason)
	// The process answers this only after its late output: once it
	// returns, the late output has been read, and reached nobody (the
	// cancelled turn's stream fails the test otherwise). A process of one
	// thread has no second to open: its next request is the next turn,
	// which must not take the late output for its own.
	if p.Manifest().Sessions != harness.SessionsOne {
		open(t, s.Subject, p, s.Dir(t))
	}
	// The process still runs turns.
	out, _ = prompt(t, s.Subject, p, thread, s.Echo)
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Contains(t, out.Text, s.Want)
	require.NotContains(t, out.Text, "late", "a cancelled turn's late output is not the next turn's answer")
}
