package api

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestLifecycleRoutes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, path, body string
		backend                  fakeBackend
		wantStatus               int
		wantBody                 string
	}{
		{
			name: "agent remove", method: "POST", path: "/v1/agents/demo/remove", body: `{"delete_on_band":true}`,
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{AgentRemoveFunc: func(_ context.Context, a string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
				return wire.AgentRemoved{Agent: "local/" + a, Sessions: 1, Bindings: 2, Dropped: 3, DeletedOnBand: r.DeleteOnBand}, nil
			}}},
			wantStatus: 200,
			wantBody:   `{"agent":"local/demo","sessions":1,"bindings":2,"dropped":3,"deleted_on_band":true}`,
		},
		{
			name: "agent remove without a body keeps Band's agent", method: "POST", path: "/v1/agents/demo/remove",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{AgentRemoveFunc: func(_ context.Context, a string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
				return wire.AgentRemoved{Agent: a, DeletedOnBand: r.DeleteOnBand}, nil
			}}},
			wantStatus: 200,
			wantBody:   `{"agent":"demo","sessions":0,"bindings":0,"dropped":0,"deleted_on_band":false}`,
		},
		{
			name: "agent remove of an unknown agent", method: "POST", path: "/v1/agents/nobody/remove",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{AgentRemoveFunc: func(context.Context, string, wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
				return wire.AgentRemoved{}, fmt.Errorf("%w: no agent %q", jam.ErrNotFound, "nobody")
			}}},
			wantStatus: 404,
			wantBody:   `{"error":{"code":"not_found","message":"remove nobody: not found: no agent \"nobody\""}}`,
		},
		{name: "agent remove with an unknown field", method: "POST", path: "/v1/agents/demo/remove", body: `{"force":true}`, wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"request body: json: unknown field \"force\""}}`},
		{name: "agent remove is a POST", method: "GET", path: "/v1/agents/demo/remove", wantStatus: 405,
			wantBody: `{"error":{"code":"method_not_allowed","message":"method GET is not allowed on /v1/agents/demo/remove (allowed: POST)"}}`},
		{
			name: "agent restart", method: "POST", path: "/v1/agents/demo/restart",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{AgentRestartFunc: func(_ context.Context, a string) (wire.AgentRestarted, error) {
				return wire.AgentRestarted{Agent: a, Stopped: 1}, nil
			}}},
			wantStatus: 200, wantBody: `{"agent":"demo","stopped":1,"pending":0}`,
		},
		{
			name: "room leave", method: "POST", path: "/v1/rooms/r1/leave", body: `{"agent":"demo"}`,
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{RoomLeaveFunc: func(_ context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error) {
				return wire.RoomLeft{Room: room, Agent: r.Agent, Session: "sess_1", Dropped: 2}, nil
			}}},
			wantStatus: 200, wantBody: `{"room":"r1","agent":"demo","session":"sess_1","dropped":2}`,
		},
		{name: "room leave names an agent", method: "POST", path: "/v1/rooms/r1/leave", body: `{"agent":" "}`, wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"agent is empty"}}`},
		{
			name: "session archive", method: "POST", path: "/v1/sessions/sess_1/archive",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{SessionArchiveFunc: func(_ context.Context, s string) (wire.Session, error) {
				return wire.Session{ID: s, Lifecycle: "archived"}, nil
			}}},
			wantStatus: 200, wantBody: `{"id":"sess_1","agent":"","room":"","template":"","lifecycle":"archived","created_at":"0001-01-01T00:00:00Z"}`,
		},
		{
			name: "session close of a closed session", method: "POST", path: "/v1/sessions/sess_1/close",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{SessionCloseFunc: func(_ context.Context, s string) (wire.Session, error) {
				return wire.Session{}, fmt.Errorf("%w: session %s is closed", jam.ErrConflict, s)
			}}},
			wantStatus: 409, wantBody: `{"error":{"code":"conflict","message":"close sess_1: conflict: session sess_1 is closed"}}`,
		},
		{
			name: "turn retry", method: "POST", path: "/v1/turns/turn_1/retry",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{RetryTurnFunc: func(context.Context, string) (wire.Turn, error) {
				return wire.Turn{ID: "turn_2", Seq: 2, State: "queued", Message: "m1", Session: "sess_1"}, nil
			}}},
			wantStatus: 200,
			wantBody:   `{"id":"turn_2","seq":2,"state":"queued","message":"m1","created_at":"0001-01-01T00:00:00Z","updated_at":"0001-01-01T00:00:00Z","session":"sess_1"}`,
		},
		{
			name: "turn retry of a completed turn", method: "POST", path: "/v1/turns/turn_1/retry",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{RetryTurnFunc: func(context.Context, string) (wire.Turn, error) {
				return wire.Turn{}, fmt.Errorf("%w: turn turn_1 is succeeded", jam.ErrConflict)
			}}},
			wantStatus: 409, wantBody: `{"error":{"code":"conflict","message":"retry turn_1: conflict: turn turn_1 is succeeded"}}`,
		},
		{
			name: "account remove", method: "POST", path: "/v1/accounts/team/remove",
			backend: fakeBackend{Lifecycle: apitest.Lifecycle{AccountRemoveFunc: func(_ context.Context, p string) (wire.AccountRemoved, error) {
				return wire.AccountRemoved{Profile: p}, nil
			}}},
			wantStatus: 200, wantBody: `{"profile":"team"}`,
		},
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
