package session

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// overrideBundle is an agent with two sessions: plain runs the template
// as is, own has its own command. Every host answers with the command it
// was started with, so a reply shows which process ran the turn.
type overrideBundle struct {
	*bundle
	tmpl        store.Template
	plain, own  store.Session
	m           *Manager
	mu          sync.Mutex
	launched    [][]string  // guarded by mu: each host's command
	hosts       []*fakeHost // guarded by mu
	deliveryNum int
}

func setupOverrides(t *testing.T, placement jam.Placement) *overrideBundle {
	t.Helper()
	b := &overrideBundle{bundle: setup(t)}
	ctx := t.Context()
	key := jam.PeerKey{Profile: "local", Scope: "overridden"}
	var err error
	b.tmpl, err = b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.bundle.m), WorkspaceID: b.ws, Peer: key,
		Desired: store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Placement: placement, Permission: "allow"}, CreatedAt: time.Now()})
	require.NoError(t, err)
	for i, ov := range []store.SessionOverrides{{}, {Command: []string{"agent", "--fast"}}} {
		room := jam.RoomID([]string{"0190a1b2-0000-4000-8000-0000000000d1", "0190a1b2-0000-4000-8000-0000000000d2"}[i])
		s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.bundle.m), WorkspaceID: b.ws, TemplateID: b.tmpl.ID, Peer: key, Room: room,
			Overrides: ov, CreatedAt: time.Now()})
		require.NoError(t, err)
		_, err = b.st.WorktreePut(ctx, store.Worktree{ID: jam.New[jam.WorktreeID](b.bundle.m), WorkspaceID: b.ws, SessionID: s.ID, Path: t.TempDir(), State: store.WorktreeActive, CreatedAt: time.Now()})
		require.NoError(t, err)
		if i == 0 {
			b.plain = s
		} else {
			b.own = s
		}
	}
	b.m, err = New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.bundle.m, RetryDelay: time.Millisecond,
		Launch: func(_ context.Context, cfg store.TemplateConfig, _ []harness.MCPServer) (harness.Process, error) {
			cmd := strings.Join(cfg.Command, " ")
			h := &fakeHost{answer: func(string) (harness.Outcome, error) {
				return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "ran on " + cmd}, nil
			}, exited: make(chan struct{})}
			b.mu.Lock()
			b.launched = append(b.launched, cfg.Command)
			b.hosts = append(b.hosts, h)
			b.mu.Unlock()
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, b.m.Start(ctx))
	t.Cleanup(func() { require.NoError(t, b.m.Stop(context.Background())) })
	return b
}

// send delivers a new Band message to s and returns its id.
func (b *overrideBundle) send(t *testing.T, s store.Session) jam.PlatformMessageID {
	t.Helper()
	b.deliveryNum++
	msg := jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012x", 0xd00+b.deliveryNum))
	require.NoError(t, b.m.Deliver(t.Context(), engine.Delivery{
		Binding: store.Binding{SessionID: s.ID, Mode: jam.RuntimeOwned, Peer: s.Peer, Room: s.Room},
		Row:     store.QueueRow{MessageID: msg},
	}))
	return msg
}

// lastTurn waits until s's turn for msg has ended and returns it.
func (b *overrideBundle) lastTurn(t *testing.T, s store.Session, msg jam.PlatformMessageID) store.Turn {
	t.Helper()
	var got store.Turn
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, s.ID)
		require.NoError(t, err)
		for _, tr := range turns {
			if tr.SourceMessageID == msg && tr.State.Terminal() {
				got = tr
				return true
			}
		}
		return false
	}, 30*time.Second, 5*time.Millisecond, "the turn of %s ends", msg)
	return got
}

func (b *overrideBundle) commands() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]string(nil), b.launched...)
}

// TestManager_dedicatedSessionRunsItsOwnCommand: with placement dedicated
// each session's process starts with the template's configuration and the
// session's overrides applied; the session without overrides runs the
// template's command.
func TestManager_dedicatedSessionRunsItsOwnCommand(t *testing.T) {
	t.Parallel()
	b := setupOverrides(t, jam.PlacementDedicated)
	plainMsg := b.send(t, b.plain)
	require.Equal(t, plainMsg, <-b.set.done)
	ownMsg := b.send(t, b.own)
	require.Equal(t, ownMsg, <-b.set.done)
	b.set.mu.Lock()
	require.Equal(t, "ran on agent", b.set.replies[plainMsg])
	require.Equal(t, "ran on agent --fast", b.set.replies[ownMsg])
	b.set.mu.Unlock()
	require.Equal(t, [][]string{{"agent"}, {"agent", "--fast"}}, b.commands())
}

// TestManager_sharedHostRefusesASessionWithItsOwnCommand: the template is
// (now) shared, and one session has a command of its own. Its turns fail
// with placement_incompatible and settle nothing, and no process is
// started for them; the other session's turns run on the shared host. A
// change of the template's command to the session's replaces the idle
// shared host at the next turn, and the session is served there.
func TestManager_sharedHostRefusesASessionWithItsOwnCommand(t *testing.T) {
	t.Parallel()
	b := setupOverrides(t, jam.PlacementShared)
	ctx := t.Context()

	ownMsg := b.send(t, b.own)
	refused := b.lastTurn(t, b.own, ownMsg)
	require.Equal(t, jam.TurnFailed, refused.State)
	require.Equal(t, jam.ReasonPlacementIncompatible, refused.Reason)
	require.Empty(t, refused.LeaseID, "the refused turn never ran on a lease")
	require.Empty(t, b.commands(), "no process started for a refused session")

	plainMsg := b.send(t, b.plain)
	require.Equal(t, plainMsg, <-b.set.done, "only the plain session's message is settled")
	b.set.mu.Lock()
	require.Equal(t, "ran on agent", b.set.replies[plainMsg])
	_, replied := b.set.replies[ownMsg]
	require.False(t, replied || b.set.acks[ownMsg], "the refused message is not settled")
	b.set.mu.Unlock()

	// The template's command changes to the session's. The live host is
	// idle, so the next turn replaces it with one that runs the new
	// command, and the session is served there.
	_, err := b.st.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: b.ws, ID: b.tmpl.ID,
		Desired: store.TemplateConfig{Harness: "acp", Command: []string{"agent", "--fast"}, Placement: jam.PlacementShared, Permission: "allow"},
		Change:  "command=agent --fast", At: time.Now()})
	require.NoError(t, err)
	ownMsg2 := b.send(t, b.own)
	require.Equal(t, ownMsg2, <-b.set.done)
	b.set.mu.Lock()
	require.Equal(t, "ran on agent --fast", b.set.replies[ownMsg2])
	b.set.mu.Unlock()
	plainMsg2 := b.send(t, b.plain)
	require.Equal(t, plainMsg2, <-b.set.done)
	b.set.mu.Lock()
	require.Equal(t, "ran on agent --fast", b.set.replies[plainMsg2], "the plain session follows the shared process")
	b.set.mu.Unlock()
	require.Equal(t, [][]string{{"agent"}, {"agent", "--fast"}}, b.commands())
}

// TestSessionOverrides: which configuration a session's host runs, and
// when a shared host cannot run the session.
func TestSessionOverrides(t *testing.T) {
	t.Parallel()
	base := store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Repo: "/src/main", Placement: jam.PlacementShared, Permission: "allow"}
	dedicated := base
	dedicated.Placement = jam.PlacementDedicated
	for _, tc := range []struct {
		name         string
		desired      store.TemplateConfig
		ov           store.SessionOverrides
		wantCommand  []string
		wantRepo     string
		incompatible bool
	}{
		{name: "none, shared", desired: base, wantCommand: []string{"agent"}, wantRepo: "/src/main"},
		{name: "repo, shared", desired: base, ov: store.SessionOverrides{Repo: "/src/other"}, wantCommand: []string{"agent"}, wantRepo: "/src/main"},
		{name: "same command, shared", desired: base, ov: store.SessionOverrides{Command: []string{"agent"}}, wantCommand: []string{"agent"}, wantRepo: "/src/main"},
		{name: "own command, shared", desired: base, ov: store.SessionOverrides{Command: []string{"agent", "-x"}}, wantCommand: []string{"agent"}, wantRepo: "/src/main", incompatible: true},
		{name: "own command, dedicated", desired: dedicated, ov: store.SessionOverrides{Command: []string{"agent", "-x"}}, wantCommand: []string{"agent", "-x"}, wantRepo: "/src/main"},
		{name: "both, dedicated", desired: dedicated, ov: store.SessionOverrides{Command: []string{"other"}, Repo: "/src/other"}, wantCommand: []string{"other"}, wantRepo: "/src/other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tm := store.Template{ID: "tmpl_x", Desired: tc.desired}
			s := store.Session{ID: "sess_x", Overrides: tc.ov}
			got := launchConfig(tm, s, harness.Manifest{Sessions: harness.SessionsMany}, "")
			require.Equal(t, tc.wantCommand, got.Command)
			require.Equal(t, tc.wantRepo, got.Repo)
			require.Equal(t, tc.incompatible, tc.desired.Placement == jam.PlacementShared && tc.ov.DiffersPerProcess(got))
			require.Equal(t, tc.desired.Command, tm.Desired.Command, "applying overrides leaves the template alone")
		})
	}
}
