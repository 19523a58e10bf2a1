// Package harnesstest is the conformance suite every harness adapter
// passes: Exercise drives a Harness's real processes (a scripted agent,
// the demo agent, a real CLI) through the seam's invariants (see package
// harness): open and prompt with streamed text, cancel mid-turn, process
// death mid-turn, resume where the manifest says so, an approval answered
// by the callback, and no output after a turn ended. Edges adds what only
// a scripted process can be made to do (edges.go): a malformed or an
// endless line mid-turn fails the turn and ends the process, a handshake
// that never answers fails Launch within its timeout and leaves no
// process, and output after a cancelled turn reaches nobody. It is test
// support: only tests import it.
package harnesstest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// Subject is one harness to exercise, and how to drive it.
type Subject struct {
	Harness harness.Harness
	// Spec launches a process: Argv, Executor, Dir, Env at least. The
	// suite sets Logger (when nil) and Approve.
	Spec harness.LaunchSpec
	// Dir returns a fresh working directory for a thread.
	Dir func(t *testing.T) string
	// Echo is a prompt whose answer, streamed as text, contains Want.
	Echo, Want string
	// Slow is a prompt that streams output at once and then runs for
	// much longer than a test waits (until cancelled).
	Slow string
	// Approval is a prompt whose turn asks for at least one approval;
	// "" when the subject cannot be made to (the case is skipped).
	Approval string
	// BeforePrompt, when set, is called with each prompt before it is
	// sent: a subject driven by a scripted model queues the reply there.
	BeforePrompt func(prompt string)
	// SawHistory, when set, reports whether the last turn's request to
	// the model carried earlier, a prompt of an earlier turn: the Resume
	// case checks a resumed thread's history reached the model.
	SawHistory func(t *testing.T, earlier string) bool
	// Timeout bounds each step; 0 is 30 s.
	Timeout time.Duration
}

func (s Subject) before(prompt string) {
	if s.BeforePrompt != nil {
		s.BeforePrompt(prompt)
	}
}

// Factory makes a Subject for one case; each case launches its own
// processes.
type Factory func(t *testing.T) Subject

// Exercise runs the suite.
func Exercise(t *testing.T, f Factory) {
	t.Run("OpenAndPromptStreamsText", func(t *testing.T) { t.Parallel(); openAndPrompt(t, f(t)) })
	t.Run("CancelMidTurn", func(t *testing.T) { t.Parallel(); cancelMidTurn(t, f(t)) })
	t.Run("ProcessDeathMidTurn", func(t *testing.T) { t.Parallel(); deathMidTurn(t, f(t)) })
	t.Run("Resume", func(t *testing.T) { t.Parallel(); resume(t, f(t)) })
	t.Run("ApprovalAnsweredByTheCallback", func(t *testing.T) { t.Parallel(); approval(t, f(t)) })
}

func (s Subject) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 30 * time.Second
}

// launch starts a process, stopped at the end of the test.
func launch(t *testing.T, s Subject, approve harness.Approval) harness.Process {
	t.Helper()
	spec := s.Spec
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.DiscardHandler)
	}
	spec.Approve = approve
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	p, err := s.Harness.Launch(ctx, spec)
	require.NoError(t, err, "launch")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Stop(ctx)
		select {
		case <-p.Exited():
		default:
			t.Errorf("Exited is not closed after Stop")
		}
	})
	m := p.Manifest()
	require.Equal(t, s.Harness.Name(), m.Harness, "the process's manifest names its harness")
	require.Equal(t, harness.ManifestVersion, m.Version)
	require.Contains(t, []harness.Sessions{harness.SessionsOne, harness.SessionsMany}, m.Sessions)
	require.Contains(t, []harness.Resume{harness.ResumeInProcess, harness.ResumeAtLaunch, harness.ResumeNone}, m.Resume)
	require.Positive(t, p.Pid())
	return p
}

// stream collects a turn's updates, fails the test on one after Prompt
// returned, and signals the first.
type stream struct {
	t     *testing.T
	ended atomic.Bool
	mu    sync.Mutex
	got   []harness.Update
	first chan struct{}
	once  sync.Once
}

func newStream(t *testing.T) *stream { return &stream{t: t, first: make(chan struct{})} }

func (s *stream) add(u harness.Update) {
	if s.ended.Load() {
		s.t.Errorf("update after Prompt returned: %+v", u)
		return
	}
	s.mu.Lock()
	s.got = append(s.got, u)
	s.mu.Unlock()
	s.once.Do(func() { close(s.first) })
}

func (s *stream) text(kind harness.UpdateKind) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, u := range s.got {
		if u.Kind == kind {
			b.WriteString(u.Text)
		}
	}
	return b.String()
}

// prompt runs one turn to its end.
func prompt(t *testing.T, s Subject, p harness.Process, thread harness.Thread, text string) (harness.Outcome, *stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	st := newStream(t)
	s.before(text)
	out, err := p.Prompt(ctx, thread, harness.Input{Text: text}, st.add)
	st.ended.Store(true)
	require.NoError(t, err, "prompt %q", text)
	return out, st
}

func open(t *testing.T, s Subject, p harness.Process, dir string) harness.Thread {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	thread, err := p.Open(ctx, dir)
	require.NoError(t, err, "open")
	require.NotEmpty(t, thread)
	return thread
}

func openAndPrompt(t *testing.T, s Subject) {
	p := launch(t, s, harness.PolicyAllow.Approve)
	thread := open(t, s, p, s.Dir(t))
	out, st := prompt(t, s, p, thread, s.Echo)
	require.Equal(t, harness.StopCompleted, out.StopReason, "provider reason %q", out.ProviderReason)
	require.Contains(t, out.Text, s.Want)
	require.Contains(t, st.text(harness.UpdateText), s.Want, "the answer is streamed as text")
	// A second turn on the same thread.
	out, _ = prompt(t, s, p, thread, s.Echo)
	require.Equal(t, harness.StopCompleted, out.StopReason)
}

// slowTurn starts s.Slow and returns once it streamed; wait ends it.
func slowTurn(t *testing.T, s Subject, p harness.Process, thread harness.Thread) (cancel context.CancelFunc, wait func() (harness.Outcome, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	st := newStream(t)
	type result struct {
		out harness.Outcome
		err error
	}
	done := make(chan result, 1)
	s.before(s.Slow)
	go func() {
		out, err := p.Prompt(ctx, thread, harness.Input{Text: s.Slow}, st.add)
		st.ended.Store(true)
		done <- result{out, err}
	}()
	wait = func() (harness.Outcome, error) {
		select {
		case r := <-done:
			return r.out, r.err
		case <-time.After(s.timeout()):
			t.Fatalf("the turn did not end")
			return harness.Outcome{}, nil
		}
	}
	select {
	case <-st.first:
	case r := <-done:
		cancel()
		t.Fatalf("the slow turn ended before it streamed: %+v, %v", r.out, r.err)
	case <-time.After(s.timeout()):
		cancel()
		_, _ = wait()
		t.Fatalf("the slow turn streamed nothing")
	}
	return cancel, wait
}

func cancelMidTurn(t *testing.T, s Subject) {
	p := launch(t, s, harness.PolicyAllow.Approve)
	thread := open(t, s, p, s.Dir(t))
	cancel, wait := slowTurn(t, s, p, thread)
	cancel()
	out, err := wait()
	require.NoError(t, err)
	require.Equal(t, harness.StopCancelled, out.StopReason, "provider reason %q", out.ProviderReason)
	// The process is still usable, and what the cancelled turn still
	// said reached nobody (stream fails the test otherwise).
	out, _ = prompt(t, s, p, thread, s.Echo)
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Contains(t, out.Text, s.Want)
	require.NotContains(t, out.Text, "after cancel", "a cancelled turn's late output is not the next turn's answer")
}

func deathMidTurn(t *testing.T, s Subject) {
	p := launch(t, s, harness.PolicyAllow.Approve)
	thread := open(t, s, p, s.Dir(t))
	cancel, wait := slowTurn(t, s, p, thread)
	defer cancel()
	require.NoError(t, syscall.Kill(-p.Pid(), syscall.SIGKILL), "the process leads its group")
	_, err := wait()
	require.Error(t, err, "a turn whose process died fails")
	select {
	case <-p.Exited():
	case <-time.After(s.timeout()):
		t.Fatalf("Exited is not closed after the process died")
	}
	ctx, cancelP := context.WithTimeout(t.Context(), s.timeout())
	defer cancelP()
	_, err = p.Prompt(ctx, thread, harness.Input{Text: s.Echo}, nil)
	require.Error(t, err, "a dead process runs no turn")
}

func resume(t *testing.T, s Subject) {
	first := launch(t, s, harness.PolicyAllow.Approve)
	switch first.Manifest().Resume {
	case harness.ResumeNone:
		ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
		defer cancel()
		err := first.Resume(ctx, "no-such-thread", s.Dir(t))
		require.Error(t, err, "a process that cannot resume says so")
		t.Skip("the manifest says resume none")
	case harness.ResumeAtLaunch:
		resumeAtLaunch(t, s, first)
		return
	}
	dir := s.Dir(t)
	thread := open(t, s, first, dir)
	out, _ := prompt(t, s, first, thread, s.Echo)
	require.Equal(t, harness.StopCompleted, out.StopReason)
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	require.NoError(t, first.Stop(ctx))

	second := launch(t, s, harness.PolicyAllow.Approve)
	require.NoError(t, second.Resume(ctx, thread, dir), "a new process resumes the thread")
	out, st := prompt(t, s, second, thread, s.Echo)
	resumed(t, s, out, st)
	if s.SawHistory != nil {
		require.True(t, s.SawHistory(t, s.Echo), "the resumed thread's history reached the model")
	}
}

// resumeAtLaunch: a harness that names the thread when the process
// starts (claude --resume): the first process's thread, given to a
// second process as LaunchSpec.Resume, goes on there with its history;
// a process holds that one thread only.
func resumeAtLaunch(t *testing.T, s Subject, first harness.Process) {
	dir := s.Spec.Dir
	thread := open(t, s, first, dir)
	ctx, cancel := context.WithTimeout(t.Context(), s.timeout())
	defer cancel()
	_, err := first.Open(ctx, dir)
	require.Error(t, err, "a process of one thread opens no second one")
	earlier := s.Echo + " first"
	out, _ := prompt(t, s, first, thread, earlier)
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.NoError(t, first.Stop(ctx))

	s.Spec.Resume = thread
	second := launch(t, s, harness.PolicyAllow.Approve)
	require.NoError(t, second.Resume(ctx, thread, dir), "the process resumes the thread it was started on")
	require.Error(t, second.Resume(ctx, thread+"-other", dir), "and no other")
	out, st := prompt(t, s, second, thread, s.Echo)
	resumed(t, s, out, st)
	if s.SawHistory != nil {
		require.True(t, s.SawHistory(t, earlier), "the resumed thread's history reached the model")
	}
}

// resumed checks a resumed thread's first turn.
func resumed(t *testing.T, s Subject, out harness.Outcome, st *stream) {
	t.Helper()
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Contains(t, st.text(harness.UpdateText), s.Want, "a resumed thread's replayed history is not the new turn's output")
	require.NotContains(t, strings.Replace(st.text(harness.UpdateText), s.Want, "", 1), s.Want, "the history is not streamed again")
}

func approval(t *testing.T, s Subject) {
	if s.Approval == "" {
		t.Skip("the subject has no prompt that asks for approval")
	}
	var mu sync.Mutex
	var asked []harness.ApprovalRequest
	answer := harness.Reject
	p := launch(t, s, func(_ context.Context, req harness.ApprovalRequest) harness.Decision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		return answer
	})
	if !p.Manifest().Approvals {
		t.Skip("the manifest says the harness asks for no approvals")
	}
	thread := open(t, s, p, s.Dir(t))
	out, _ := prompt(t, s, p, thread, s.Approval)
	require.NotEqual(t, harness.StopCancelled, out.StopReason)
	mu.Lock()
	require.NotEmpty(t, asked, "the approval reached the callback")
	require.Equal(t, thread, asked[0].Thread, "the request names its thread")
	answer = harness.AllowOnce
	n := len(asked)
	mu.Unlock()
	_, _ = prompt(t, s, p, thread, s.Approval)
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(asked), n, "every request reaches the callback")
}
