package session

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestManager_placement: with placement shared, the agent's rooms share
// one process and one lease (held by the template); with dedicated, each
// session gets its own process and lease (held by the session).
func TestManager_placement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		placement jam.Placement
		processes int
	}{{jam.PlacementShared, 1}, {jam.PlacementDedicated, 2}} {
		t.Run(string(tc.placement), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := t.Context()
			key := jam.PeerKey{Profile: "local", Scope: "placed"}
			tm, err := b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.m), WorkspaceID: b.ws, Peer: key,
				Desired: store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Placement: tc.placement, Permission: "allow"}, CreatedAt: time.Now()})
			require.NoError(t, err)
			var sessions []store.Session
			for _, room := range []jam.RoomID{"0190a1b2-0000-4000-8000-0000000000b1", "0190a1b2-0000-4000-8000-0000000000b2"} {
				s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.m), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: key, Room: room, CreatedAt: time.Now()})
				require.NoError(t, err)
				_, err = b.st.WorktreePut(ctx, store.Worktree{ID: jam.New[jam.WorktreeID](b.m), WorkspaceID: b.ws, SessionID: s.ID, Path: t.TempDir(), State: store.WorktreeActive, CreatedAt: time.Now()})
				require.NoError(t, err)
				sessions = append(sessions, s)
			}
			var launched atomic.Int32
			m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
				Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
					launched.Add(1)
					return &fakeHost{answer: func(string) (harness.Outcome, error) {
						return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "done"}, nil
					}, exited: make(chan struct{})}, nil
				}})
			require.NoError(t, err)
			require.NoError(t, m.Start(ctx))
			defer func() { require.NoError(t, m.Stop(context.Background())) }()
			for i, s := range sessions {
				msg := jam.PlatformMessageID([]string{"0190a1b2-0000-4000-8000-0000000000c1", "0190a1b2-0000-4000-8000-0000000000c2"}[i])
				require.NoError(t, m.Deliver(ctx, engine.Delivery{
					Binding: store.Binding{SessionID: s.ID, Mode: jam.RuntimeOwned, Peer: s.Peer, Room: s.Room},
					Row:     store.QueueRow{MessageID: msg},
				}))
				<-b.set.done
			}
			require.Equal(t, int32(tc.processes), launched.Load())
			for _, s := range sessions {
				want := string(tm.ID)
				if tc.placement == jam.PlacementDedicated {
					want = string(s.ID)
				}
				l, err := b.st.LeaseLive(ctx, b.ws, want)
				require.NoError(t, err, "a live lease held by %s", want)
				turns, err := b.st.TurnList(ctx, b.ws, s.ID)
				require.NoError(t, err)
				require.Len(t, turns, 1)
				require.Equal(t, l.ID, turns[0].LeaseID, "the session's turn ran on its holder's lease")
			}
		})
	}
}
