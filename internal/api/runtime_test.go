package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestRuntimeRoutes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	cases := []struct {
		name, method, path, body string
		backend                  fakeBackend
		wantStatus               int
		wantBody                 string
	}{
		{
			name: "sessions", method: "GET", path: "/v1/sessions",
			backend: fakeBackend{SessionsFunc: func(context.Context) ([]wire.Session, error) {
				return []wire.Session{{ID: "sess_1", Agent: "local/demo", Room: "r1", Template: "tmpl_1", Lifecycle: "open", Worktree: "/w/sess_1", Created: at}}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"sessions":[{"id":"sess_1","agent":"local/demo","room":"r1","template":"tmpl_1","lifecycle":"open","worktree":"/w/sess_1","created_at":"2026-11-30T03:00:00Z"}]}`,
		},
		{
			name: "no sessions", method: "GET", path: "/v1/sessions",
			backend:    fakeBackend{SessionsFunc: func(context.Context) ([]wire.Session, error) { return nil, nil }},
			wantStatus: 200, wantBody: `{"sessions":[]}`,
		},
		{
			name: "turns", method: "GET", path: "/v1/sessions/sess_1/turns",
			backend: fakeBackend{TurnsFunc: func(_ context.Context, s string) ([]wire.Turn, error) {
				if s != "sess_1" {
					return nil, nil
				}
				return []wire.Turn{{ID: "turn_1", Seq: 1, State: "interrupted", Reason: "process_exited", Message: "m1", LeaseGeneration: 1, Created: at, Updated: at}}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"turns":[{"id":"turn_1","seq":1,"state":"interrupted","reason":"process_exited","message":"m1","lease_generation":1,"created_at":"2026-11-30T03:00:00Z","updated_at":"2026-11-30T03:00:00Z"}]}`,
		},
		{
			name: "config", method: "POST", path: "/v1/agents/demo/config", body: `{"set":{"model":"m2"}}`,
			backend: fakeBackend{AgentConfigFunc: func(_ context.Context, a string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error) {
				return wire.AgentRuntimeStatus{Template: "tmpl_1", DesiredGeneration: 2, EffectiveGeneration: 1, PendingChange: a + ":" + r.Set["model"]}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"template":"tmpl_1","desired":{"harness":"","command":null},"desired_generation":2,"effective":{"harness":"","command":null},"effective_generation":1,"pending_change":"demo:m2"}`,
		},
		{name: "config without keys", method: "POST", path: "/v1/agents/demo/config", body: `{"set":{}}`, wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"set names no key to change"}}`},
		{
			name: "turn output", method: "GET", path: "/v1/turns/turn_1/output",
			backend: fakeBackend{TurnOutputFunc: func(_ context.Context, turn string) (wire.TurnOutput, error) {
				return wire.TurnOutput{Turn: turn, Kept: true, Batches: 2, Updates: []wire.TurnUpdate{{Kind: "text", Text: "hi"}, {Kind: "plan", Plan: []wire.PlanEntry{{Content: "a", Status: "done"}}}}}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"turn":"turn_1","kept":true,"batches":2,"updates":[{"kind":"text","text":"hi"},{"kind":"plan","plan":[{"content":"a","status":"done"}]}]}`,
		},
		{
			name: "turn with its executions", method: "GET", path: "/v1/turns/turn_1",
			backend: fakeBackend{TurnFunc: func(_ context.Context, turn string) (wire.Turn, error) {
				return wire.Turn{ID: turn, Seq: 1, State: "interrupted", Reason: "process_exited", Lease: "lease_1", LeaseGeneration: 1, Created: at, Updated: at, Session: "sess_1",
					Executions: []wire.Execution{{ID: "exec_1", Lease: "lease_1", LeaseGeneration: 1, Pid: 42, State: "ended", Outcome: "interrupted", Reason: "process_exited",
						Started: at, Ended: at.Add(time.Second)}}}, nil
			}},
			wantStatus: 200,
			wantBody: `{"id":"turn_1","seq":1,"state":"interrupted","reason":"process_exited","lease":"lease_1","lease_generation":1,"created_at":"2026-11-30T03:00:00Z",` +
				`"updated_at":"2026-11-30T03:00:00Z","session":"sess_1","executions":[{"id":"exec_1","lease":"lease_1","lease_generation":1,"pid":42,"state":"ended",` +
				`"outcome":"interrupted","reason":"process_exited","started_at":"2026-11-30T03:00:00Z","ended_at":"2026-11-30T03:00:01Z"}]}`,
		},
		{
			name: "unknown turn", method: "GET", path: "/v1/turns/turn_9",
			backend: fakeBackend{TurnFunc: func(context.Context, string) (wire.Turn, error) {
				return wire.Turn{}, fmt.Errorf("%w: no such turn", jam.ErrNotFound)
			}},
			wantStatus: 404,
			wantBody:   `{"error":{"code":"not_found","message":"turn turn_9: not found: no such turn"}}`,
		},
		{
			name: "turn output not kept", method: "GET", path: "/v1/turns/turn_1/output",
			backend: fakeBackend{TurnOutputFunc: func(_ context.Context, turn string) (wire.TurnOutput, error) {
				return wire.TurnOutput{Turn: turn}, nil
			}},
			wantStatus: 200, wantBody: `{"turn":"turn_1","kept":false,"batches":0,"updates":[]}`,
		},
		{
			name: "worktrees", method: "GET", path: "/v1/worktrees",
			backend: fakeBackend{WorktreesFunc: func(context.Context) ([]wire.Worktree, error) {
				return []wire.Worktree{{ID: "wt_1", Session: "sess_1", Agent: "local/demo", Room: "r1", Path: "/w/sess_1", State: "active", Changes: 1, Updated: at}}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"worktrees":[{"id":"wt_1","session":"sess_1","agent":"local/demo","room":"r1","path":"/w/sess_1","state":"active","changes":1,"updated_at":"2026-11-30T03:00:00Z"}]}`,
		},
		{
			name: "worktree archive", method: "POST", path: "/v1/worktrees/sess_1/archive",
			backend: fakeBackend{WorktreeArchiveFunc: func(_ context.Context, s string) (wire.Worktree, error) {
				return wire.Worktree{Session: s, State: "archived", Updated: at}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"id":"","session":"sess_1","agent":"","room":"","path":"","state":"archived","changes":0,"updated_at":"2026-11-30T03:00:00Z"}`,
		},
		{
			name: "worktree remove forced", method: "POST", path: "/v1/worktrees/sess_1/remove", body: `{"force":true}`,
			backend: fakeBackend{WorktreeRemoveFunc: func(_ context.Context, s string, r wire.WorktreeRemoveRequest) (wire.Worktree, error) {
				assert.True(t, r.Force)
				return wire.Worktree{Session: s, State: "removed", Updated: at}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"id":"","session":"sess_1","agent":"","room":"","path":"","state":"removed","changes":0,"updated_at":"2026-11-30T03:00:00Z"}`,
		},
		{
			name: "worktree remove refused", method: "POST", path: "/v1/worktrees/sess_1/remove",
			backend: fakeBackend{WorktreeRemoveFunc: func(context.Context, string, wire.WorktreeRemoveRequest) (wire.Worktree, error) {
				return wire.Worktree{}, fmt.Errorf("%w: 2 uncommitted change(s)", jam.ErrConflict)
			}},
			wantStatus: 409,
			wantBody:   `{"error":{"code":"conflict","message":"remove the worktree of sess_1: conflict: 2 uncommitted change(s)"}}`,
		},
		{name: "worktree remove with an unknown field", method: "POST", path: "/v1/worktrees/sess_1/remove", body: `{"forced":true}`, wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"request body: json: unknown field \"forced\""}}`},
		{name: "worktree restore with GET", method: "GET", path: "/v1/worktrees/sess_1/restore", wantStatus: 405,
			wantBody: `{"error":{"code":"method_not_allowed","message":"method GET is not allowed on /v1/worktrees/sess_1/restore (allowed: POST)"}}`},
		{
			name: "session send", method: "POST", path: "/v1/sessions/sess_1/messages", body: `{"text":"faster","routing":"steer"}`,
			backend: fakeBackend{SessionSendFunc: func(_ context.Context, s string, r wire.SessionSendRequest) (wire.SessionSendResult, error) {
				return wire.SessionSendResult{Message: wire.SessionMessage{ID: "msg_1", Session: s, Seq: 1, Routing: "queue", Requested: r.Routing, Text: r.Text, Turn: "turn_1", Created: at},
					RoutingEffective: "queue", Turn: "turn_1"}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"message":{"id":"msg_1","session":"sess_1","seq":1,"routing":"queue","requested":"steer","text":"faster","turn":"turn_1","created_at":"2026-11-30T03:00:00Z"},"routing_effective":"queue","turn":"turn_1"}`,
		},
		{name: "session send without text", method: "POST", path: "/v1/sessions/sess_1/messages", body: `{"text":" "}`, wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"text is empty"}}`},
		{name: "session send with an unknown routing", method: "POST", path: "/v1/sessions/sess_1/messages", body: `{"text":"x","routing":"shout"}`, wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"routing \"shout\" (want note, queue or steer)"}}`},
		{
			name: "session messages", method: "GET", path: "/v1/sessions/sess_1/messages",
			backend: fakeBackend{SessionMessagesFunc: func(context.Context, string) ([]wire.SessionMessage, error) {
				return []wire.SessionMessage{{ID: "msg_1", Session: "sess_1", Seq: 1, Routing: "note", Text: "use tabs", Turn: "turn_2", Created: at, Consumed: at}}, nil
			}},
			wantStatus: 200,
			wantBody:   `{"messages":[{"id":"msg_1","session":"sess_1","seq":1,"routing":"note","text":"use tabs","turn":"turn_2","created_at":"2026-11-30T03:00:00Z","consumed_at":"2026-11-30T03:00:00Z"}]}`,
		},
		{name: "sessions with a query", method: "GET", path: "/v1/sessions?all=1", wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"unknown query parameter \"all\" (this route takes none)"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.backend, "")
			status, _, body := call(t, b, tc.method, tc.path, tc.body)
			require.Equal(t, tc.wantStatus, status, body)
			assert.JSONEq(t, tc.wantBody, body)
		})
	}
}
