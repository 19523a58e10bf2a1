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

	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// atLaunchHost is a process of a harness that holds one thread, named at
// launch (claude): started on resume, it resumes that thread only;
// otherwise Open gives its fresh thread.
type atLaunchHost struct {
	fakeHost
	thread harness.Thread
}

func (h *atLaunchHost) Manifest() harness.Manifest { return oneSession }
func (h *atLaunchHost) Open(context.Context, string, ...harness.MCPServer) (harness.Thread, error) {
	return h.thread, nil
}
func (h *atLaunchHost) Resume(_ context.Context, thread harness.Thread, _ string, _ ...harness.MCPServer) error {
	if thread != h.thread {
		return jam.ErrNotImplemented
	}
	return nil
}

var oneSession = harness.Manifest{Harness: "one", Version: harness.ManifestVersion, Sessions: harness.SessionsOne, Resume: harness.ResumeAtLaunch}

// oneSessionRig is an agent of the one-session harness in two rooms,
// under placement shared, with every launch recorded.
type oneSessionRig struct {
	*bundle
	m        *Manager
	sessions []store.Session
	trees    []string

	mu       sync.Mutex
	launched []store.TemplateConfig
	hosts    []*atLaunchHost
	// gone lists threads the CLI no longer has: a launch on one fails.
	gone map[harness.Thread]bool
}

func setupOneSession(t *testing.T) *oneSessionRig {
	t.Helper()
	r := &oneSessionRig{bundle: setup(t), gone: map[harness.Thread]bool{}}
	ctx := t.Context()
	key := jam.PeerKey{Profile: "local", Scope: "one"}
	tm, err := r.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](r.bundle.m), WorkspaceID: r.ws, Peer: key,
		Desired: store.TemplateConfig{Harness: "one", Command: []string{"claude"}, Placement: jam.PlacementShared, Permission: "allow"}, CreatedAt: time.Now()})
	require.NoError(t, err)
	for _, room := range []jam.RoomID{"0190a1b2-0000-4000-8000-0000000000e1", "0190a1b2-0000-4000-8000-0000000000e2"} {
		s, err := r.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](r.bundle.m), WorkspaceID: r.ws, TemplateID: tm.ID, Peer: key, Room: room, CreatedAt: time.Now()})
		require.NoError(t, err)
		dir := t.TempDir()
		_, err = r.st.WorktreePut(ctx, store.Worktree{ID: jam.New[jam.WorktreeID](r.bundle.m), WorkspaceID: r.ws, SessionID: s.ID, Path: dir, State: store.WorktreeActive, CreatedAt: time.Now()})
		require.NoError(t, err)
		r.sessions, r.trees = append(r.sessions, s), append(r.trees, dir)
	}
	n := 0
	r.m, err = New(Config{Workspace: r.ws, Store: r.st, Settler: r.set, Logger: slog.New(slog.DiscardHandler), Minter: r.bundle.m, RetryDelay: time.Millisecond,
		Manifest: func(name string) (harness.Manifest, error) {
			if name != "one" {
				return harness.Manifest{}, fmt.Errorf("%w: harness %q", jam.ErrInvalid, name)
			}
			return oneSession, nil
		},
		Launch: func(_ context.Context, cfg store.TemplateConfig, _ []harness.MCPServer) (harness.Process, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.launched = append(r.launched, cfg)
			if r.gone[harness.Thread(cfg.Resume)] {
				return nil, errors.New("claude: initialize: No conversation found")
			}
			n++
			h := &atLaunchHost{thread: harness.Thread(cfg.Resume)}
			if h.thread == "" {
				h.thread = harness.Thread(fmt.Sprintf("fresh-%d", n))
			}
			h.exited = make(chan struct{})
			h.answer = func(text string) (harness.Outcome, error) {
				return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "ran " + string(h.thread)}, nil
			}
			r.hosts = append(r.hosts, h)
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, r.m.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.m.Stop(context.Background())) })
	return r
}

// deliver routes a message to session i and waits for it to settle.
func (r *oneSessionRig) deliver(t *testing.T, i int, msg jam.PlatformMessageID) {
	t.Helper()
	s := r.sessions[i]
	require.NoError(t, r.m.Deliver(t.Context(), engine.Delivery{
		Binding: store.Binding{SessionID: s.ID, Mode: jam.RuntimeOwned, Peer: s.Peer, Room: s.Room},
		Row:     store.QueueRow{MessageID: msg},
	}))
	<-r.set.done
}

func (r *oneSessionRig) thread(t *testing.T, i int) string {
	t.Helper()
	s, err := r.st.SessionGet(t.Context(), r.ws, r.sessions[i].ID)
	require.NoError(t, err)
	return s.ProviderThread
}

// TestManager_sessionsOnePerProcess: a harness whose manifest says one
// session per process gets a process per session, held by the session,
// started in the session's worktree, even under placement shared.
func TestManager_sessionsOnePerProcess(t *testing.T) {
	t.Parallel()
	r := setupOneSession(t)
	r.deliver(t, 0, "0190a1b2-0000-4000-8000-0000000000f1")
	r.deliver(t, 1, "0190a1b2-0000-4000-8000-0000000000f2")
	r.mu.Lock()
	launched := r.launched
	r.mu.Unlock()
	require.Len(t, launched, 2, "two rooms of one agent run two processes")
	for i, s := range r.sessions {
		require.Equal(t, s.ID, launched[i].Session, "the process is the session's")
		require.Equal(t, r.trees[i], launched[i].Dir, "started in the session's worktree")
		require.Empty(t, launched[i].Resume, "a new session starts a new thread")
		_, err := r.st.LeaseLive(t.Context(), r.ws, string(s.ID))
		require.NoError(t, err, "the lease is held by the session")
	}
	require.NotEqual(t, r.thread(t, 0), r.thread(t, 1))
}

// TestManager_resumeAtLaunch: a process that replaces a session's exited
// one is started on the session's thread (LaunchSpec.Resume); when that
// launch fails (the CLI no longer has the thread), a fresh process starts
// and its thread is recorded.
func TestManager_resumeAtLaunch(t *testing.T) {
	t.Parallel()
	r := setupOneSession(t)
	r.deliver(t, 0, "0190a1b2-0000-4000-8000-0000000000f3")
	first := r.thread(t, 0)
	require.NotEmpty(t, first)
	r.mu.Lock()
	_ = r.hosts[0].Stop(context.Background()) // the process dies
	r.mu.Unlock()
	r.deliver(t, 0, "0190a1b2-0000-4000-8000-0000000000f4")
	r.mu.Lock()
	require.Len(t, r.launched, 2)
	require.Equal(t, first, r.launched[1].Resume, "the replacement is started on the session's thread")
	r.gone[harness.Thread(first)] = true
	_ = r.hosts[1].Stop(context.Background())
	r.mu.Unlock()
	require.Equal(t, first, r.thread(t, 0), "the resumed thread stays the session's")
	require.Equal(t, "ran "+first, replyOf(r.set, "0190a1b2-0000-4000-8000-0000000000f4"))

	r.deliver(t, 0, "0190a1b2-0000-4000-8000-0000000000f5")
	r.mu.Lock()
	require.Len(t, r.launched, 4, "the resumed launch failed, a fresh one followed")
	require.Equal(t, first, r.launched[2].Resume)
	require.Empty(t, r.launched[3].Resume)
	r.mu.Unlock()
	fresh := r.thread(t, 0)
	require.NotEqual(t, first, fresh, "the fresh process's thread is recorded")
	require.Equal(t, "ran "+fresh, replyOf(r.set, "0190a1b2-0000-4000-8000-0000000000f5"))
}

// replyOf is what the settler posted for msg.
func replyOf(s *settler, msg jam.PlatformMessageID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replies[msg]
}
