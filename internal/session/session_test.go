package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHost is an agent process that answers from a function.
type fakeHost struct {
	answer func(text string) (harness.Outcome, error)
	// stream, when set, streams a turn's output before the answer.
	stream func(text string, updates func(harness.Update))
	exited chan struct{}
	once   sync.Once
}

func (h *fakeHost) Manifest() harness.Manifest {
	return harness.Manifest{Harness: "fake", Version: harness.ManifestVersion, Sessions: harness.SessionsMany, Resume: harness.ResumeInProcess}
}
func (h *fakeHost) Open(context.Context, string, ...harness.MCPServer) (harness.Thread, error) {
	return "thread-1", nil
}
func (h *fakeHost) Resume(context.Context, harness.Thread, string, ...harness.MCPServer) error {
	return nil
}
func (h *fakeHost) Interrupt(context.Context, harness.Thread) error { return nil }
func (h *fakeHost) Steer(context.Context, harness.Thread, harness.Input) error {
	return jam.ErrNotImplemented
}
func (h *fakeHost) Prompt(_ context.Context, _ harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	if h.stream != nil && updates != nil {
		h.stream(in.Text, updates)
	}
	return h.answer(in.Text)
}
func (h *fakeHost) Exited() <-chan struct{} { return h.exited }
func (h *fakeHost) Pid() int                { return 4242 }
func (h *fakeHost) Stop(context.Context) error {
	h.once.Do(func() { close(h.exited) })
	return nil
}

// settler records what the runtime settled.
type settler struct {
	mu      sync.Mutex
	replies map[jam.PlatformMessageID]string
	omitted map[jam.PlatformMessageID]int // made by Reply
	acks    map[jam.PlatformMessageID]bool
	done    chan jam.PlatformMessageID
	fails   map[jam.PlatformMessageID][]string // made by Fail
	// gone are the messages settled elsewhere meanwhile: Message does not
	// find them.
	gone map[jam.PlatformMessageID]bool
	// agents are the messages an agent sent (Message says so).
	agents map[jam.PlatformMessageID]bool
	// sends and events are what Send and RoomEvent posted, in order.
	sends  []engine.SendParams
	events []protocol.EventFields
	// roster is what Participants answers.
	roster []protocol.Participant
}

func (s *settler) Message(_ context.Context, _ jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (engine.InboxItem, error) {
	s.mu.Lock()
	gone := s.gone[msg]
	s.mu.Unlock()
	if gone {
		return engine.InboxItem{}, fmt.Errorf("%w: message %s", jam.ErrNotFound, msg)
	}
	if msg.IsNotice() {
		return engine.InboxItem{Peer: key, MessageID: msg, SenderName: "jam", SenderType: "System", Content: "note " + string(msg)}, nil
	}
	if s.agents[msg] {
		return engine.InboxItem{Peer: key, MessageID: msg, SenderName: "bot", SenderType: "Agent", Content: "do " + string(msg)}, nil
	}
	return engine.InboxItem{Peer: key, MessageID: msg, SenderName: "ann", SenderType: "User", Content: "do " + string(msg)}, nil
}
func (s *settler) Send(_ context.Context, sp engine.SendParams) (engine.SendResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends = append(s.sends, sp)
	return engine.SendResult{ID: jam.PlatformMessageID(fmt.Sprintf("sent-%d", len(s.sends)))}, nil
}
func (s *settler) Participants(context.Context, jam.WorkspaceID, jam.PeerKey, jam.RoomID) ([]protocol.Participant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]protocol.Participant(nil), s.roster...), nil
}
func (s *settler) RoomEvent(_ context.Context, _ jam.WorkspaceID, _ jam.PeerKey, _ jam.RoomID, ev protocol.EventFields) (protocol.EventCreated, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return protocol.EventCreated{ID: fmt.Sprintf("ev-%d", len(s.events)), Success: true}, nil
}
func (s *settler) Reply(_ context.Context, rp engine.ReplyParams) (engine.ReplyResult, error) {
	if rp.MessageID.IsNotice() {
		return engine.ReplyResult{}, engine.ErrNoticeReply
	}
	s.mu.Lock()
	s.replies[rp.MessageID] = rp.Text
	if s.omitted == nil {
		s.omitted = map[jam.PlatformMessageID]int{}
	}
	s.omitted[rp.MessageID] = rp.Omitted
	s.mu.Unlock()
	s.done <- rp.MessageID
	return engine.ReplyResult{}, nil
}
func (s *settler) Ack(_ context.Context, _ jam.WorkspaceID, _ jam.PeerKey, msg jam.PlatformMessageID) error {
	s.mu.Lock()
	s.acks[msg] = true
	s.mu.Unlock()
	s.done <- msg
	return nil
}
func (s *settler) Fail(_ context.Context, _ jam.WorkspaceID, _ jam.PeerKey, msg jam.PlatformMessageID, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails == nil {
		s.fails = map[jam.PlatformMessageID][]string{}
	}
	s.fails[msg] = append(s.fails[msg], reason)
	return nil
}

// failed returns the reasons msg was marked failed with.
func (s *settler) failed(msg jam.PlatformMessageID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.fails[msg]...)
}

// waitFailed waits until msg was marked failed, once, with reason.
func (s *settler) waitFailed(t *testing.T, msg jam.PlatformMessageID, reason string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(s.failed(msg)) > 0 }, 10*time.Second, time.Millisecond, "%s is marked failed on Band", msg)
	require.Equal(t, []string{reason}, s.failed(msg))
}

func (s *settler) Working(jam.WorkspaceID, jam.PeerKey, jam.RoomID) func() { return func() {} }

type bundle struct {
	st   *sqlite.Store
	ws   jam.WorkspaceID
	sess store.Session
	set  *settler
	m    *jam.Minter
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db"), Sealer: box})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	m := jam.NewMinter(nil, nil)
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "default", At: time.Now()})
	require.NoError(t, err)
	key := jam.PeerKey{Profile: "local", Scope: "demo"}
	tm, err := st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](m), WorkspaceID: w.ID, Peer: key,
		Desired: store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Placement: jam.PlacementShared, Permission: "allow"}, CreatedAt: time.Now()})
	require.NoError(t, err)
	s, err := st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: w.ID, TemplateID: tm.ID, Peer: key,
		Room: "0190a1b2-0000-4000-8000-0000000000aa", CreatedAt: time.Now()})
	require.NoError(t, err)
	_, err = st.WorktreePut(ctx, store.Worktree{ID: jam.New[jam.WorktreeID](m), WorkspaceID: w.ID, SessionID: s.ID, Path: t.TempDir(), State: store.WorktreeActive, CreatedAt: time.Now()})
	require.NoError(t, err)
	return &bundle{st: st, ws: w.ID, sess: s, m: m,
		set: &settler{replies: map[jam.PlatformMessageID]string{}, acks: map[jam.PlatformMessageID]bool{}, done: make(chan jam.PlatformMessageID, 16)}}
}

func (b *bundle) manager(t *testing.T, answer func(string) (harness.Outcome, error)) *Manager {
	t.Helper()
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return &fakeHost{answer: answer, exited: make(chan struct{})}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	return m
}

func (b *bundle) deliver(t *testing.T, m *Manager, msg jam.PlatformMessageID) {
	t.Helper()
	require.NoError(t, m.Deliver(t.Context(), engine.Delivery{
		Binding: store.Binding{SessionID: b.sess.ID, Mode: jam.RuntimeOwned, Peer: b.sess.Peer, Room: b.sess.Room},
		Row:     store.QueueRow{MessageID: msg},
	}))
}

func TestManager_repliesAcksAndDedupes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.manager(t, func(text string) (harness.Outcome, error) {
		if text == "ann wrote in the room:\ndo 0190a1b2-0000-4000-8000-000000000002" {
			return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: noReply}, nil
		}
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "done: " + text}, nil
	})
	first, second := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000001"), jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000002")
	b.deliver(t, m, first)
	b.deliver(t, m, first) // a redelivery of a message with an open turn adds none
	b.deliver(t, m, second)
	got := []jam.PlatformMessageID{<-b.set.done, <-b.set.done}
	require.Equal(t, []jam.PlatformMessageID{first, second}, got, "turns run in order")
	require.Contains(t, b.set.replies[first], "done: ann wrote in the room")
	require.True(t, b.set.acks[second], "NO_REPLY acknowledges")

	require.NoError(t, m.Stop(context.Background()))
	turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Len(t, turns, 2)
	for _, tr := range turns {
		require.Equal(t, jam.TurnSucceeded, tr.State)
		require.Equal(t, int64(1), tr.LeaseGeneration)
	}
}

func TestManager_startInterruptsTurnsADeadDaemonLeftActive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	msg := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000009")
	// A previous run: a lease and a running turn, then the daemon died.
	l, err := b.st.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.m), Holder: string(b.sess.TemplateID), Pid: 1, At: time.Now()})
	require.NoError(t, err)
	tr, err := b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.m), WorkspaceID: b.ws, SessionID: b.sess.ID, Routing: jam.RoutingQueue, SourceMessageID: msg, CreatedAt: time.Now()})
	require.NoError(t, err)
	for _, mv := range [][2]jam.TurnState{{jam.TurnQueued, jam.TurnPreparing}, {jam.TurnPreparing, jam.TurnRunning}} {
		_, err = b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: b.ws, ID: tr.ID, From: mv[0], To: mv[1], LeaseID: l.ID, LeaseGeneration: l.Generation,
			At: time.Now(), Execution: jam.New[jam.ExecutionID](b.m)})
		require.NoError(t, err)
	}

	var calls sync.Mutex
	n := 0
	m := b.manager(t, func(string) (harness.Outcome, error) {
		calls.Lock()
		defer calls.Unlock()
		n++
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "answered"}, nil
	})
	require.Equal(t, msg, <-b.set.done, "the message is answered by a new turn")
	require.NoError(t, m.Stop(context.Background()))
	turns, err := b.st.TurnList(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Len(t, turns, 2)
	require.Equal(t, jam.TurnInterrupted, turns[0].State)
	require.Equal(t, jam.ReasonDaemonRestarted, turns[0].Reason)
	require.Equal(t, jam.TurnSucceeded, turns[1].State)
	require.Equal(t, int64(2), turns[1].LeaseGeneration, "a new lease")
	require.Equal(t, 1, n)
	// Each turn was one attempt: the dead one ended with its turn, the
	// next one ran on the new lease.
	for i, want := range []struct {
		gen     int64
		outcome jam.TurnState
		reason  string
	}{{1, jam.TurnInterrupted, jam.ReasonDaemonRestarted}, {2, jam.TurnSucceeded, "end_turn"}} {
		execs, err := b.st.ExecutionList(ctx, b.ws, turns[i].ID)
		require.NoError(t, err)
		require.Len(t, execs, 1, "turn %d", i)
		require.Equal(t, store.ExecutionEnded, execs[0].State, "turn %d", i)
		require.Equal(t, want.gen, execs[0].LeaseGeneration, "turn %d", i)
		require.Equal(t, want.outcome, execs[0].Outcome, "turn %d", i)
		require.Equal(t, want.reason, execs[0].Reason, "turn %d", i)
	}
}

func TestManager_failedPromptSettlesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.manager(t, func(string) (harness.Outcome, error) { return harness.Outcome{}, errors.New("model unavailable") })
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000003")
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
		require.NoError(t, err)
		return len(turns) == 1 && turns[0].State == jam.TurnFailed
	}, 10*time.Second, time.Millisecond)
	require.Empty(t, b.set.replies)
	require.Empty(t, b.set.acks)
	b.set.waitFailed(t, "0190a1b2-0000-4000-8000-000000000003", "turn failed (harness_error): model unavailable")
}

// gatedHost holds NewSession until released, and its prompts end only
// when their context does.
type gatedHost struct {
	fakeHost
	opening chan struct{} // receives when NewSession is waiting
	release chan struct{}
	prompts chan string
}

func (h *gatedHost) Open(ctx context.Context, dir string, tools ...harness.MCPServer) (harness.Thread, error) {
	h.opening <- struct{}{}
	<-h.release
	return h.fakeHost.Open(ctx, dir, tools...)
}

func (h *gatedHost) Prompt(ctx context.Context, _ harness.Thread, in harness.Input, _ func(harness.Update)) (harness.Outcome, error) {
	h.prompts <- in.Text
	<-ctx.Done()
	return harness.Outcome{StopReason: harness.StopCancelled, ProviderReason: "cancelled"}, nil
}

// TestManager_cancelReachesTurnsAtEveryStage: a cancel while the worker
// prepares a turn (before the prompt is sent) ends it cancelled without a
// prompt; a cancel while it runs stops the prompt. Neither settles.
func TestManager_cancelReachesTurnsAtEveryStage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := &gatedHost{fakeHost: fakeHost{exited: make(chan struct{})}, opening: make(chan struct{}), release: make(chan struct{}), prompts: make(chan string, 4)}
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	defer func() { require.NoError(t, m.Stop(context.Background())) }()

	turnOf := func(i int, state jam.TurnState) store.Turn {
		var got store.Turn
		require.Eventually(t, func() bool {
			turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
			require.NoError(t, err)
			if len(turns) <= i {
				return false
			}
			got = turns[i]
			return got.State == state
		}, 10*time.Second, time.Millisecond)
		return got
	}

	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000011")
	<-h.opening
	first := turnOf(0, jam.TurnPreparing)
	require.NoError(t, m.Cancel(t.Context(), first.ID))
	close(h.release)
	first = turnOf(0, jam.TurnCancelled)
	require.Equal(t, jam.ReasonCancelledByUser, first.Reason)
	require.Empty(t, h.prompts, "a turn cancelled before its prompt sends none")

	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000012")
	<-h.prompts
	second := turnOf(1, jam.TurnRunning)
	require.NoError(t, m.Cancel(t.Context(), second.ID))
	second = turnOf(1, jam.TurnCancelled)
	require.Equal(t, jam.ReasonCancelledByUser, second.Reason)
	require.ErrorIs(t, m.Cancel(t.Context(), second.ID), jam.ErrConflict)
	require.Empty(t, b.set.replies)
	require.Empty(t, b.set.acks)
	for _, msg := range []jam.PlatformMessageID{"0190a1b2-0000-4000-8000-000000000011", "0190a1b2-0000-4000-8000-000000000012"} {
		b.set.waitFailed(t, msg, "turn cancelled (cancelled_by_user)")
	}
}
