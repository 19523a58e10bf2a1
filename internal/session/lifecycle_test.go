package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// launches records the configurations a manager's launcher started
// processes with, and the processes.
type launches struct {
	mu    sync.Mutex
	cfgs  []store.TemplateConfig
	hosts []*fakeHost
}

func (l *launches) all() ([]store.TemplateConfig, []*fakeHost) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]store.TemplateConfig(nil), l.cfgs...), append([]*fakeHost(nil), l.hosts...)
}

// threadHost is a fake process that knows only the threads opened or
// resumed on it, as a real agent process does.
type threadHost struct {
	*fakeHost
	mu    sync.Mutex
	known map[harness.Thread]bool
	id    int
}

func (h *threadHost) Open(context.Context, string, ...harness.MCPServer) (harness.Thread, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	th := harness.Thread(fmt.Sprintf("thread-of-%d", h.id))
	h.known[th] = true
	return th, nil
}

func (h *threadHost) Resume(_ context.Context, th harness.Thread, _ string, _ ...harness.MCPServer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.known[th] = true
	return nil
}

func (h *threadHost) Prompt(ctx context.Context, th harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	h.mu.Lock()
	ok := h.known[th]
	h.mu.Unlock()
	if !ok {
		return harness.Outcome{}, fmt.Errorf("thread %s is not open on process %d", th, h.id)
	}
	return h.fakeHost.Prompt(ctx, th, in, updates)
}

// recordingManager is a manager whose processes answer with answer and
// whose launches are recorded.
func (b *bundle) recordingManager(t *testing.T, answer func(string) (harness.Outcome, error)) (*Manager, *launches) {
	t.Helper()
	rec := &launches{}
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(_ context.Context, cfg store.TemplateConfig, _ []harness.MCPServer) (harness.Process, error) {
			h := &fakeHost{answer: answer, exited: make(chan struct{})}
			rec.mu.Lock()
			rec.cfgs, rec.hosts = append(rec.cfgs, cfg), append(rec.hosts, h)
			n := len(rec.hosts)
			rec.mu.Unlock()
			return &threadHost{fakeHost: h, known: map[harness.Thread]bool{}, id: n}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	return m, rec
}

func answered(string) (harness.Outcome, error) {
	return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "done"}, nil
}

// settled waits for the next message the manager settles.
func (b *bundle) settled(t *testing.T) jam.PlatformMessageID {
	t.Helper()
	select {
	case msg := <-b.set.done:
		return msg
	case <-time.After(10 * time.Second):
		turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
		require.NoError(t, err)
		var states []string
		for _, tr := range turns {
			states = append(states, fmt.Sprintf("%s %s %s", tr.State, tr.Reason, tr.Detail))
		}
		t.Fatalf("no message settled within 10s; turns: %q", states)
		return ""
	}
}

// nthEnded waits for the session's n-th turn (from 1) to end, and returns it.
func (b *bundle) nthEnded(t *testing.T, n int) store.Turn {
	t.Helper()
	var got store.Turn
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
		require.NoError(t, err)
		if len(turns) < n {
			return false
		}
		got = turns[n-1]
		return got.State.Terminal()
	}, 10*time.Second, time.Millisecond)
	return got
}

// TestManager_configChangeReachesTheLiveProcessAtTheNextTurn: a change of
// the desired configuration while the agent's process runs replaces the
// process before the next turn, which runs on a new lease with the new
// model; the template shows nothing outstanding after.
func TestManager_configChangeReachesTheLiveProcessAtTheNextTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	m, rec := b.recordingManager(t, answered)
	first, second := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000101"), jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000102")
	b.deliver(t, m, first)
	require.Equal(t, first, b.settled(t))
	tm, err := b.st.TemplateGet(ctx, b.ws, b.sess.TemplateID)
	require.NoError(t, err)
	require.False(t, tm.Outstanding())
	c := tm.Desired
	c.Model = "model-2"
	tm, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: c, Change: "model=model-2", At: time.Now()})
	require.NoError(t, err)
	require.True(t, tm.Outstanding())

	b.deliver(t, m, second)
	require.Equal(t, second, b.settled(t))
	turn := b.nthEnded(t, 2)
	require.Equal(t, jam.TurnSucceeded, turn.State)
	require.Equal(t, int64(2), turn.LeaseGeneration, "the next turn runs on a new process")
	cfgs, hosts := rec.all()
	require.Len(t, cfgs, 2, "a second process was started")
	require.Equal(t, "", cfgs[0].Model)
	require.Equal(t, "model-2", cfgs[1].Model, "the new process runs the changed model")
	select {
	case <-hosts[0].exited:
	default:
		t.Fatal("the old process was not stopped")
	}
	tm, err = b.st.TemplateGet(ctx, b.ws, tm.ID)
	require.NoError(t, err)
	require.False(t, tm.Outstanding(), "the change is effective: %+v", tm)
	require.Equal(t, "model-2", tm.Effective.Model)
}

// TestManager_configChangeThatChangesNothingBecomesEffective: a change
// that leaves the process's configuration as it is (the same value set
// again) keeps the process and is effective after the next turn.
func TestManager_configChangeThatChangesNothingBecomesEffective(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	m, rec := b.recordingManager(t, answered)
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000111")
	b.settled(t)
	tm, err := b.st.TemplateGet(ctx, b.ws, b.sess.TemplateID)
	require.NoError(t, err)
	_, err = b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: tm.ID, Desired: tm.Desired, Change: "permission=allow", At: time.Now()})
	require.NoError(t, err)
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000112")
	b.settled(t)
	require.Equal(t, int64(1), b.nthEnded(t, 2).LeaseGeneration)
	cfgs, _ := rec.all()
	require.Len(t, cfgs, 1)
	tm, err = b.st.TemplateGet(ctx, b.ws, tm.ID)
	require.NoError(t, err)
	require.False(t, tm.Outstanding())
}

// blockingHost answers a prompt only when told to.
type blockingHost struct {
	fakeHost
	prompted chan struct{}
	answer   chan struct{}
}

func (h *blockingHost) Prompt(ctx context.Context, _ harness.Thread, _ harness.Input, _ func(harness.Update)) (harness.Outcome, error) {
	h.prompted <- struct{}{}
	select {
	case <-h.answer:
	case <-ctx.Done():
		return harness.Outcome{StopReason: harness.StopCancelled}, nil
	}
	return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "done"}, nil
}

// TestManager_restartWaitsForTheRunningTurn: a restart while a turn runs
// lets the turn finish on its process, then stops the process; the next
// turn runs on a new lease of the next generation. A restart of an idle
// agent stops its process at once.
func TestManager_restartWaitsForTheRunningTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var mu sync.Mutex
	var hosts []*blockingHost
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			h := &blockingHost{fakeHost: fakeHost{exited: make(chan struct{})}, prompted: make(chan struct{}, 1), answer: make(chan struct{})}
			mu.Lock()
			hosts = append(hosts, h)
			mu.Unlock()
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	defer func() { require.NoError(t, m.Stop(context.Background())) }()
	host := func(i int) *blockingHost {
		mu.Lock()
		defer mu.Unlock()
		return hosts[i]
	}

	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000121")
	<-func() chan struct{} {
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(hosts) == 1 }, 10*time.Second, time.Millisecond)
		return host(0).prompted
	}()
	got, err := m.Restart(ctx, b.sess.TemplateID)
	require.NoError(t, err)
	require.Equal(t, Restarted{Pending: 1}, got, "the running turn's process waits for it")
	select {
	case <-host(0).exited:
		t.Fatal("the process stopped under its running turn")
	default:
	}
	close(host(0).answer)
	b.settled(t)
	require.Equal(t, jam.TurnSucceeded, b.nthEnded(t, 1).State, "the running turn finished")
	<-host(0).exited // stopped when the turn ended

	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000122")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(hosts) == 2 }, 10*time.Second, time.Millisecond)
	<-host(1).prompted
	close(host(1).answer)
	b.settled(t)
	require.Equal(t, int64(2), b.nthEnded(t, 2).LeaseGeneration, "the next turn runs on a new process")

	// Idle (or, when the worker has not yet left the turn it just
	// recorded, at that turn's boundary): stopped, and the lease ended as
	// restarted.
	got, err = m.Restart(ctx, b.sess.TemplateID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Stopped+got.Pending, "the one process is stopped, now or at its boundary: %+v", got)
	<-host(1).exited
	require.Eventually(t, func() bool {
		_, err := b.st.LeaseLive(ctx, b.ws, string(b.sess.TemplateID))
		return errors.Is(err, jam.ErrNotFound)
	}, 10*time.Second, time.Millisecond, "no live lease after a restart")
}

// TestManager_retryRunsTheMessageAgain: a failed turn of a Band message
// is retried as a new turn of the same message; a retry of a turn that
// succeeded, or of one whose message another turn answered, is a
// conflict.
func TestManager_retryRunsTheMessageAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var mu sync.Mutex
	fail := true
	m, _ := b.recordingManager(t, func(string) (harness.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "refusal"}, nil
		}
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "done"}, nil
	})
	msg := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000131")
	b.deliver(t, m, msg)
	failed := b.nthEnded(t, 1)
	require.Equal(t, jam.TurnFailed, failed.State)
	mu.Lock()
	fail = false
	mu.Unlock()

	retry, err := m.Retry(ctx, failed.ID)
	require.NoError(t, err)
	require.Equal(t, msg, retry.SourceMessageID, "the same message")
	require.Equal(t, failed.MessageID, retry.MessageID)
	require.Equal(t, msg, b.settled(t))
	done := b.nthEnded(t, 2)
	require.Equal(t, retry.ID, done.ID)
	require.Equal(t, jam.TurnSucceeded, done.State)

	_, err = m.Retry(ctx, done.ID)
	require.ErrorIs(t, err, jam.ErrConflict, "a completed turn")
	_, err = m.Retry(ctx, failed.ID)
	require.ErrorIs(t, err, jam.ErrConflict, "a message another turn answered")
	_, err = m.Retry(ctx, jam.New[jam.TurnID](b.m))
	require.ErrorIs(t, err, jam.ErrNotFound)

	// A failed turn whose message was settled meanwhile (answered from
	// elsewhere) is not retried.
	mu.Lock()
	fail = true
	mu.Unlock()
	other := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000132")
	b.deliver(t, m, other)
	lost := b.nthEnded(t, 3)
	require.Equal(t, jam.TurnFailed, lost.State)
	b.set.mu.Lock()
	b.set.gone = map[jam.PlatformMessageID]bool{other: true}
	b.set.mu.Unlock()
	_, err = m.Retry(ctx, lost.ID)
	require.ErrorIs(t, err, jam.ErrConflict)
	require.ErrorContains(t, err, "is settled or gone")
}

// TestManager_closeCancelsTheRunningTurn: closing a session whose turn
// runs cancels the turn, waits for it, and closes the session; nothing is
// settled.
func TestManager_closeCancelsTheRunningTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	h := &blockingHost{fakeHost: fakeHost{exited: make(chan struct{})}, prompted: make(chan struct{}, 1), answer: make(chan struct{})}
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	defer func() { require.NoError(t, m.Stop(context.Background())) }()
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000151")
	<-h.prompted
	s, err := m.CloseSession(ctx, b.sess.ID)
	require.NoError(t, err)
	require.Equal(t, jam.SessionClosed, s.Lifecycle)
	turn := b.nthEnded(t, 1)
	require.Equal(t, jam.TurnCancelled, turn.State, "the running turn was cancelled before the close")
	require.Empty(t, b.set.replies)
	require.Empty(t, b.set.acks)
}

// TestManager_archivedSessionResumesOnAMessage: an archived session's
// worktree is archived; the next message resumes it (worktree active,
// session open) and its turn runs. A closed session cancels its queued
// turns, takes no message and no retry.
func TestManager_archivedSessionResumesOnAMessage(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	b := setup(t)
	ctx := t.Context()
	b.sess, _ = b.gitSession(t, repo)
	m, _ := b.recordingManager(t, answered)
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000141")
	b.settled(t)
	var s store.Session
	require.Eventually(t, func() bool { // once the worker lets the session go
		var err error
		s, err = m.ArchiveSession(ctx, b.sess.ID)
		if errors.Is(err, jam.ErrConflict) {
			return false
		}
		require.NoError(t, err)
		return true
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, jam.SessionArchived, s.Lifecycle)
	wt, err := b.st.WorktreeForSession(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorktreeArchived, wt.State)
	require.NoDirExists(t, wt.Path)
	got, err := b.st.SessionForRoom(ctx, b.ws, b.sess.Peer, b.sess.Room)
	require.NoError(t, err)
	require.Equal(t, b.sess.ID, got.ID, "the archived session is still the room's")

	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000142")
	b.settled(t)
	require.Equal(t, jam.TurnSucceeded, b.nthEnded(t, 2).State)
	s, err = b.st.SessionGet(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Equal(t, jam.SessionOpen, s.Lifecycle)
	wt, err = b.st.WorktreeForSession(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorktreeActive, wt.State)
	require.DirExists(t, wt.Path)

	// A queued turn when the session closes is cancelled. (The worktree
	// is archived first, so the worker leaves the turn queued.)
	require.Eventually(t, func() bool {
		_, err := m.ArchiveWorktree(ctx, b.sess.ID)
		if errors.Is(err, jam.ErrConflict) {
			return false
		}
		require.NoError(t, err)
		return true
	}, 10*time.Second, time.Millisecond)
	_, err = b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.m), WorkspaceID: b.ws, SessionID: b.sess.ID, Routing: jam.RoutingQueue,
		SourceMessageID: "0190a1b2-0000-4000-8000-000000000143", CreatedAt: time.Now()})
	require.NoError(t, err)
	s, err = m.CloseSession(ctx, b.sess.ID)
	require.NoError(t, err)
	require.Equal(t, jam.SessionClosed, s.Lifecycle)
	queued := b.nthEnded(t, 3)
	require.Equal(t, jam.TurnCancelled, queued.State)
	require.Equal(t, ReasonSessionClosed, queued.Reason)
	require.Empty(t, b.set.failed("0190a1b2-0000-4000-8000-000000000143"), "closing marks nothing failed on Band")
	_, err = m.Retry(ctx, queued.ID)
	require.ErrorIs(t, err, jam.ErrConflict)
	_, err = m.Send(ctx, b.sess.ID, "more", jam.RoutingQueue)
	require.ErrorIs(t, err, jam.ErrConflict)
	_, err = m.CloseSession(ctx, b.sess.ID)
	require.ErrorIs(t, err, jam.ErrConflict)
	_, err = b.st.SessionForRoom(ctx, b.ws, b.sess.Peer, b.sess.Room)
	require.ErrorIs(t, err, jam.ErrNotFound, "a closed session is no longer the room's")
	wt, err = b.st.WorktreeForSession(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorktreeArchived, wt.State, "archived, not removed: its branch keeps the work")
}
