package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// TestRoomAdd_overrides: --repo and --command reach the daemon as the
// room's overrides (the command split like a shell would), and a refusal
// by the agent's placement exits with the conflict code.
func TestRoomAdd_overrides(t *testing.T) {
	t.Parallel()
	add := func(want wire.RoomAddRequest) backend {
		return backend{RoomAddFunc: func(_ context.Context, room string, r wire.RoomAddRequest) error {
			assert.Equal(t, roomID, room)
			assert.Equal(t, want, r)
			return nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "repository",
			backend:    add(wire.RoomAddRequest{Agent: "alice", Overrides: wire.SessionOverrides{Repo: "/src/other"}}),
			inv:        invocation{args: []string{"room", "add", roomID, "alice", "--repo", "/src/other"}},
			wantStdout: "added alice to room " + roomID + "\n",
		},
		{
			name:       "command",
			backend:    add(wire.RoomAddRequest{Agent: "alice", Overrides: wire.SessionOverrides{Command: []string{"env", "MODE=fast", "jam", "demo-agent", "--say", "a b"}}}),
			inv:        invocation{args: []string{"room", "add", roomID, "alice", "--command", `env MODE=fast jam demo-agent --say "a b"`}},
			wantStdout: "added alice to room " + roomID + "\n",
		},
		{
			name:       "both",
			backend:    add(wire.RoomAddRequest{Agent: "alice", Overrides: wire.SessionOverrides{Command: []string{"agent"}, Repo: "/r"}}),
			inv:        invocation{args: []string{"room", "add", roomID, "alice", "--command", "agent", "--repo", "/r"}},
			wantStdout: "added alice to room " + roomID + "\n",
		},
		{
			name:       "unbalanced quote",
			inv:        invocation{args: []string{"room", "add", roomID, "alice", "--command", `agent "oops`}},
			wantCode:   2,
			wantStderr: "jam: --command: invalid argument: command \"agent \\\"oops\" has an unterminated quote\n",
		},
		{
			name:       "blank command",
			inv:        invocation{args: []string{"room", "add", roomID, "alice", "--command", "   "}},
			wantCode:   2,
			wantStderr: "jam: --command: invalid argument: the command is empty\n",
		},
		{
			name: "refused by the placement",
			backend: backend{RoomAddFunc: func(context.Context, string, wire.RoomAddRequest) error {
				return fmt.Errorf("%w: the agent runs one shared process", jam.ErrIncompatible)
			}},
			inv:        invocation{args: []string{"room", "add", roomID, "alice", "--command", "other"}},
			wantCode:   5,
			wantStderr: "jam: add alice to room " + roomID + ": incompatible with the placement: the agent runs one shared process (placement_incompatible)\n",
		},
	})
}
