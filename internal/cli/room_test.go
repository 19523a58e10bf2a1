package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

const roomID = "0f6f3f6e-7b8a-4a43-9d4e-2f1e0c1b2a39"

var planning = wire.Room{ID: roomID, Title: "planning", Account: "band", Participants: []string{"alice-3f2"}}

func TestRoomCreate(t *testing.T) {
	t.Parallel()
	create := func(want wire.RoomCreateRequest) backend {
		return backend{RoomCreateFunc: func(_ context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
			assert.Equal(t, want, r)
			return planning, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "prints the id",
			backend:    create(wire.RoomCreateRequest{Title: "planning"}),
			inv:        invocation{args: []string{"room", "create", "planning"}},
			wantStdout: roomID + "\n",
		},
		{
			name:       "with agents and an account",
			backend:    create(wire.RoomCreateRequest{Title: "sprint 12", Account: "work", Agents: []string{"alice", "work/bob"}}),
			inv:        invocation{args: []string{"room", "create", "sprint 12", "--agent", "alice", "--agent", "work/bob", "--account", "work"}},
			wantStdout: roomID + "\n",
		},
		{
			name:     "json",
			backend:  create(wire.RoomCreateRequest{Title: "planning"}),
			inv:      invocation{args: []string{"room", "create", "planning", "--json"}},
			wantJSON: `{"id":"` + roomID + `","title":"planning","account":"band","participants":["alice-3f2"]}`,
		},
		{
			name:       "blank title is refused by the daemon",
			inv:        invocation{args: []string{"room", "create", " "}},
			wantCode:   2,
			wantStderr: "jam: title is required (invalid_argument)\n",
		},
		{
			name:       "no title",
			inv:        invocation{args: []string{"room", "create"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam room create --help)\n",
		},
		{
			name: "unknown agent",
			backend: backend{RoomCreateFunc: func(context.Context, wire.RoomCreateRequest) (wire.Room, error) {
				return wire.Room{}, fmt.Errorf("%w: no agent %q", jam.ErrNotFound, "zed")
			}},
			inv:        invocation{args: []string{"room", "create", "planning", "--agent", "zed"}},
			wantCode:   4,
			wantStderr: "jam: create room: not found: no agent \"zed\" (not_found)\n",
		},
	})
}

func TestRoomList(t *testing.T) {
	t.Parallel()
	rooms := func(want string, list ...wire.Room) backend {
		return backend{RoomsFunc: func(_ context.Context, account string) ([]wire.Room, error) {
			assert.Equal(t, want, account)
			return list, nil
		}}
	}
	other := wire.Room{ID: "r-2", Title: "", Account: "band", LastMessageAt: "2026-01-02T03:04:05Z"}
	runCases(t, []cmdCase{
		{
			name:    "table",
			backend: rooms("", planning, other),
			inv:     invocation{args: []string{"room", "list"}},
			wantStdout: "" +
				"ID                                    TITLE     ACCOUNT  LAST MESSAGE\n" +
				roomID + "  planning  band     -\n" +
				"r-2                                   -         band     2026-01-02T03:04:05Z\n",
		},
		{
			name:       "none, of one account",
			backend:    rooms("work"),
			inv:        invocation{args: []string{"room", "list", "--account", "work"}},
			wantStdout: "no rooms; create one with: jam room create TITLE\n",
		},
		{
			name:     "json",
			backend:  rooms("", other),
			inv:      invocation{args: []string{"room", "list", "--json"}},
			wantJSON: `{"rooms":[{"id":"r-2","title":"","account":"band","last_message_at":"2026-01-02T03:04:05Z"}]}`,
		},
		{
			name:     "json none",
			backend:  rooms(""),
			inv:      invocation{args: []string{"room", "list", "--json"}},
			wantJSON: `{"rooms":[]}`,
		},
	})
}

func TestRoomAdd(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name: "adds",
			backend: backend{RoomAddFunc: func(_ context.Context, room string, r wire.RoomAddRequest) error {
				assert.Equal(t, roomID, room)
				assert.Equal(t, "alice", r.Agent)
				return nil
			}},
			inv:        invocation{args: []string{"room", "add", roomID, "alice"}},
			wantStdout: "added alice to room " + roomID + "\n",
		},
		{
			name:       "one argument",
			inv:        invocation{args: []string{"room", "add", roomID}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 1 (see jam room add --help)\n",
		},
		{
			name: "unknown room",
			backend: backend{RoomAddFunc: func(context.Context, string, wire.RoomAddRequest) error {
				return fmt.Errorf("room %s: %w", roomID, jam.ErrNotFound)
			}},
			inv:        invocation{args: []string{"room", "add", roomID, "alice"}},
			wantCode:   4,
			wantStderr: "jam: add alice to room " + roomID + ": room " + roomID + ": not found (not_found)\n",
		},
	})
}
