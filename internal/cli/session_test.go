package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
)

func TestSessionSendCommand(t *testing.T) {
	t.Parallel()
	answer := func(effective, turn string) func(context.Context, string, wire.SessionSendRequest) (wire.SessionSendResult, error) {
		return func(_ context.Context, s string, r wire.SessionSendRequest) (wire.SessionSendResult, error) {
			assert.Equal(t, "sess_1", s)
			assert.Equal(t, "fix it", r.Text)
			return wire.SessionSendResult{Message: wire.SessionMessage{ID: "msg_1", Session: s, Routing: effective, Turn: turn}, RoutingEffective: effective, Turn: turn}, nil
		}
	}
	routed := func(want string, effective, turn string) func(context.Context, string, wire.SessionSendRequest) (wire.SessionSendResult, error) {
		return func(ctx context.Context, s string, r wire.SessionSendRequest) (wire.SessionSendResult, error) {
			assert.Equal(t, want, r.Routing)
			return answer(effective, turn)(ctx, s, r)
		}
	}
	runCases(t, []cmdCase{
		{
			name:       "queue is the default",
			backend:    backend{SessionSendFunc: routed("queue", "queue", "turn_1")},
			inv:        invocation{args: []string{"session", "send", "sess_1", "fix it"}},
			wantStdout: "queued msg_1 as turn turn_1\n",
		},
		{
			name:       "note",
			backend:    backend{SessionSendFunc: routed("note", "note", "")},
			inv:        invocation{args: []string{"session", "send", "sess_1", "fix it", "--note"}},
			wantStdout: "noted msg_1: the next turn of sess_1 carries it\n",
		},
		{
			name:       "steer that was queued",
			backend:    backend{SessionSendFunc: routed("steer", "queue", "turn_2")},
			inv:        invocation{args: []string{"session", "send", "sess_1", "fix it", "--steer"}},
			wantStdout: "queued msg_1 as turn turn_2 (no running turn could take steering)\n",
		},
		{
			name:       "steer that reached the running turn",
			backend:    backend{SessionSendFunc: routed("steer", "steer", "turn_1")},
			inv:        invocation{args: []string{"session", "send", "sess_1", "fix it", "--steer"}},
			wantStdout: "steered msg_1 into running turn turn_1\n",
		},
		{
			name:       "json",
			backend:    backend{SessionSendFunc: routed("note", "note", "")},
			inv:        invocation{args: []string{"session", "send", "sess_1", "fix it", "--note", "--json"}},
			wantStdout: "{\n  \"message\": {\n    \"id\": \"msg_1\",\n    \"session\": \"sess_1\",\n    \"seq\": 0,\n    \"routing\": \"note\",\n    \"created_at\": \"0001-01-01T00:00:00Z\"\n  },\n  \"routing_effective\": \"note\"\n}\n",
		},
		{
			name:       "note and steer",
			inv:        invocation{args: []string{"session", "send", "sess_1", "fix it", "--note", "--steer"}},
			wantCode:   2,
			wantStderr: "jam: --note and --steer exclude each other\n",
		},
		{
			name:       "empty message",
			inv:        invocation{args: []string{"session", "send", "sess_1", " "}},
			wantCode:   2,
			wantStderr: "jam: the message is empty\n",
		},
		{
			name:       "text missing",
			inv:        invocation{args: []string{"session", "send", "sess_1"}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 1 (see jam session send --help)\n",
		},
	})
}
