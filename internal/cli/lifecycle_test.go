package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var (
	lifecycleAgent = wire.Agent{Peer: "local/demo", Name: "demo", Handle: "demo-bot", Account: "local", Queued: 3,
		Bindings: []wire.Binding{{ID: "b1", Room: "r1"}, {ID: "b2", Room: "r2"}}}
	lifecycleSessions = []wire.Session{
		{ID: "sess_1", Agent: "local/demo", Room: "r1", Lifecycle: "open"},
		{ID: "sess_2", Agent: "local/demo", Room: "r2", Lifecycle: "archived"},
		{ID: "sess_0", Agent: "local/demo", Room: "r1", Lifecycle: "closed"},
	}
)

func TestLifecycleCommands(t *testing.T) {
	t.Parallel()
	agents := func(context.Context) ([]wire.Agent, error) { return []wire.Agent{lifecycleAgent}, nil }
	sessions := func(context.Context) ([]wire.Session, error) { return lifecycleSessions, nil }
	removed := func(_ context.Context, agent string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
		assert.Equal(t, "@demo-bot", agent)
		return wire.AgentRemoved{Agent: "local/demo", Sessions: 2, Bindings: 2, Dropped: 3, DeletedOnBand: r.DeleteOnBand}, nil
	}
	never := func(t *testing.T) apitest.Lifecycle {
		fail := func() { t.Error("changed without confirmation") }
		return apitest.Lifecycle{
			AgentRemoveFunc: func(context.Context, string, wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
				fail()
				return wire.AgentRemoved{}, nil
			},
			RoomLeaveFunc: func(context.Context, string, wire.RoomLeaveRequest) (wire.RoomLeft, error) {
				fail()
				return wire.RoomLeft{}, nil
			},
			SessionCloseFunc: func(context.Context, string) (wire.Session, error) { fail(); return wire.Session{}, nil },
			AccountRemoveFunc: func(context.Context, string) (wire.AccountRemoved, error) {
				fail()
				return wire.AccountRemoved{}, nil
			},
		}
	}
	removeQ := "Remove agent demo (local/demo) and its 2 rooms' sessions (2 sessions)? Its 3 queued messages leave jam's queue, unsettled on Band. Band's agent is kept. [y/N] "
	runCases(t, []cmdCase{
		{
			name:       "agent remove without a terminal or --yes refuses",
			backend:    backend{Lifecycle: never(t)},
			inv:        invocation{args: []string{"agent", "remove", "demo"}},
			wantCode:   2,
			wantStderr: "jam: refusing to remove agent demo without confirmation: no terminal to ask on (pass --yes)\n",
		},
		{
			name:       "agent remove declined on a terminal",
			backend:    backend{AgentsFunc: agents, SessionsFunc: sessions, Lifecycle: never(t)},
			inv:        invocation{args: []string{"agent", "remove", "demo"}, interactive: true, stdin: "n\n"},
			wantCode:   1,
			wantStderr: removeQ + "jam: nothing changed\n",
		},
		{
			name:       "agent remove confirmed on a terminal, by handle",
			backend:    backend{AgentsFunc: agents, SessionsFunc: sessions, Lifecycle: apitest.Lifecycle{AgentRemoveFunc: removed}},
			inv:        invocation{args: []string{"agent", "remove", "@demo-bot"}, interactive: true, stdin: "y\n"},
			wantStdout: "removed local/demo: 2 sessions closed, 2 bindings retired, 3 messages dropped from jam's queue (unsettled on Band); kept on Band\n",
			wantStderr: removeQ,
		},
		{
			name:     "agent remove --yes --delete-on-band --json",
			backend:  backend{Lifecycle: apitest.Lifecycle{AgentRemoveFunc: removed}},
			inv:      invocation{args: []string{"agent", "remove", "@demo-bot", "--yes", "--delete-on-band", "--json"}},
			wantJSON: `{"agent":"local/demo","sessions":2,"bindings":2,"dropped":3,"deleted_on_band":true}`,
		},
		{
			name:       "agent remove of an unknown agent on a terminal",
			backend:    backend{AgentsFunc: agents, Lifecycle: never(t)},
			inv:        invocation{args: []string{"agent", "remove", "nobody"}, interactive: true, stdin: "y\n"},
			wantCode:   4,
			wantStderr: "jam: no agent \"nobody\" (see jam agent list)\n",
		},
		{
			name: "agent restart",
			backend: backend{Lifecycle: apitest.Lifecycle{AgentRestartFunc: func(_ context.Context, agent string) (wire.AgentRestarted, error) {
				assert.Equal(t, "demo", agent)
				return wire.AgentRestarted{Agent: "local/demo", Stopped: 0, Pending: 1}, nil
			}}},
			inv:        invocation{args: []string{"agent", "restart", "demo"}},
			wantStdout: "restarting local/demo: 0 processes stopped now, 1 process when the running turn ends; the next turn starts a new one\n",
		},
		{
			name: "agent restart of an attached agent is a conflict",
			backend: backend{Lifecycle: apitest.Lifecycle{AgentRestartFunc: func(context.Context, string) (wire.AgentRestarted, error) {
				return wire.AgentRestarted{}, fmt.Errorf("%w: local/demo is attached: jam runs no process for it", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"agent", "restart", "demo"}},
			wantCode:   5,
			wantStderr: "jam: restart demo: conflict: local/demo is attached: jam runs no process for it (conflict)\n",
		},
		{
			name:       "room leave without a terminal or --yes refuses",
			backend:    backend{Lifecycle: never(t)},
			inv:        invocation{args: []string{"room", "leave", "r1", "demo"}},
			wantCode:   2,
			wantStderr: "jam: refusing to demo leaving room r1 without confirmation: no terminal to ask on (pass --yes)\n",
		},
		{
			name: "room leave confirmed",
			backend: backend{AgentsFunc: agents, SessionsFunc: sessions, Lifecycle: apitest.Lifecycle{RoomLeaveFunc: func(_ context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error) {
				assert.Equal(t, "r1", room)
				assert.Equal(t, "demo", r.Agent)
				return wire.RoomLeft{Room: "r1", Agent: "local/demo", Session: "sess_1", Dropped: 1}, nil
			}}},
			inv:        invocation{args: []string{"room", "leave", "r1", "demo"}, interactive: true, stdin: "yes\n"},
			wantStdout: "local/demo left room r1; session sess_1 closed; 1 message dropped from jam's queue (unsettled on Band)\n",
			wantStderr: "Remove demo (local/demo) from room r1 on Band? Its session sess_1 there is closed and its worktree archived. [y/N] ",
		},
		{
			name: "session archive needs no confirmation",
			backend: backend{Lifecycle: apitest.Lifecycle{SessionArchiveFunc: func(_ context.Context, s string) (wire.Session, error) {
				assert.Equal(t, "sess_1", s)
				return wire.Session{ID: "sess_1", Agent: "local/demo", Room: "r1", Lifecycle: "archived"}, nil
			}}},
			inv:        invocation{args: []string{"session", "archive", "sess_1"}},
			wantStdout: "archived session sess_1 (local/demo in room r1); the next message resumes it\n",
		},
		{
			name:       "session close without a terminal or --yes refuses",
			backend:    backend{Lifecycle: never(t)},
			inv:        invocation{args: []string{"session", "close", "sess_1"}},
			wantCode:   2,
			wantStderr: "jam: refusing to close session sess_1 without confirmation: no terminal to ask on (pass --yes)\n",
		},
		{
			name: "session close confirmed, --json",
			backend: backend{SessionsFunc: sessions, Lifecycle: apitest.Lifecycle{SessionCloseFunc: func(context.Context, string) (wire.Session, error) {
				return wire.Session{ID: "sess_1", Agent: "local/demo", Room: "r1", Lifecycle: "closed", Created: created}, nil
			}}},
			inv:        invocation{args: []string{"session", "close", "sess_1", "--json"}, interactive: true, stdin: "y\n"},
			wantJSON:   `{"id":"sess_1","agent":"local/demo","room":"r1","template":"","lifecycle":"closed","created_at":"2026-01-02T03:04:05Z"}`,
			wantStderr: "Close session sess_1 of local/demo in room r1? Its queued turns are cancelled and it takes no further turns; the room's next messages start a new session. [y/N] ",
		},
		{
			name: "turn retry",
			backend: backend{Lifecycle: apitest.Lifecycle{RetryTurnFunc: func(_ context.Context, turn string) (wire.Turn, error) {
				assert.Equal(t, "turn_1", turn)
				return wire.Turn{ID: "turn_2", Seq: 2, Session: "sess_1", State: "queued"}, nil
			}}},
			inv:        invocation{args: []string{"turn", "retry", "turn_1"}},
			wantStdout: "retrying turn_1 as turn turn_2 (#2 of sess_1)\n",
		},
		{
			name: "turn retry of a completed turn is a conflict",
			backend: backend{Lifecycle: apitest.Lifecycle{RetryTurnFunc: func(context.Context, string) (wire.Turn, error) {
				return wire.Turn{}, fmt.Errorf("%w: turn turn_1 is succeeded; only a failed, cancelled or interrupted turn is retried", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"turn", "retry", "turn_1"}},
			wantCode:   5,
			wantStderr: "jam: retry turn_1: conflict: turn turn_1 is succeeded; only a failed, cancelled or interrupted turn is retried (conflict)\n",
		},
		{
			name:       "account remove without a terminal or --yes refuses",
			backend:    backend{Lifecycle: never(t)},
			inv:        invocation{args: []string{"account", "remove", "work"}},
			wantCode:   2,
			wantStderr: "jam: refusing to remove account work without confirmation: no terminal to ask on (pass --yes)\n",
		},
		{
			name: "account remove while agents use it is a conflict",
			backend: backend{Lifecycle: apitest.Lifecycle{AccountRemoveFunc: func(context.Context, string) (wire.AccountRemoved, error) {
				return wire.AccountRemoved{}, fmt.Errorf("%w: agents use account work: [work/demo] (remove them first with jam agent remove)", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"account", "remove", "work", "--yes"}},
			wantCode:   5,
			wantStderr: "jam: remove account work: conflict: agents use account work: [work/demo] (remove them first with jam agent remove) (conflict)\n",
		},
		{
			name: "account remove confirmed",
			backend: backend{
				AccountsFunc: func(context.Context) ([]wire.Account, error) {
					return []wire.Account{{Profile: "work", Handle: "ann", BandURL: "https://band.example"}}, nil
				},
				Lifecycle: apitest.Lifecycle{AccountRemoveFunc: func(_ context.Context, p string) (wire.AccountRemoved, error) {
					return wire.AccountRemoved{Profile: p}, nil
				}},
			},
			inv:        invocation{args: []string{"account", "remove", "work"}, interactive: true, stdin: "y\n"},
			wantStdout: "removed account work\n",
			wantStderr: "Remove account work (@ann at https://band.example)? Its sealed key is deleted. [y/N] ",
		},
	})
}
