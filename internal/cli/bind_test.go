package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestBind(t *testing.T) {
	t.Parallel()
	bound := wire.Binding{ID: "bnd_1", Peer: "band/alice", Room: roomID, Alias: "main", SessionID: "sess_1", Mode: "attached", Created: created}
	bind := func(want wire.BindRequest, moved int) backend {
		return backend{BindFunc: func(_ context.Context, r wire.BindRequest) (wire.Binding, error) {
			assert.Equal(t, want, r)
			b := bound
			b.Moved = moved
			return b, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "bind",
			backend:    bind(wire.BindRequest{Agent: "alice", Room: roomID, Alias: "main"}, 0),
			inv:        invocation{args: []string{"bind", roomID, "--agent", "alice", "--alias", "main"}},
			wantStdout: "bound band/alice to room " + roomID + " as main: binding bnd_1, session sess_1\n",
		},
		{
			name:    "moved messages",
			backend: bind(wire.BindRequest{Agent: "alice", Room: roomID}, 2),
			inv:     invocation{args: []string{"bind", roomID, "--agent", "alice"}},
			wantStdout: "bound band/alice to room " + roomID + " as main: binding bnd_1, session sess_1\n" +
				"moved 2 queued messages to this binding\n",
		},
		{
			name:     "json",
			backend:  bind(wire.BindRequest{Agent: "alice", Room: roomID}, 1),
			inv:      invocation{args: []string{"bind", roomID, "--agent", "alice", "--json"}},
			wantJSON: `{"id":"bnd_1","peer":"band/alice","room":"` + roomID + `","alias":"main","session_id":"sess_1","mode":"attached","created_at":"2026-01-02T03:04:05Z","moved":1}`,
		},
		{
			name:       "no agent",
			inv:        invocation{args: []string{"bind", roomID}},
			wantCode:   2,
			wantStderr: "jam: --agent is required\n",
		},
		{
			name:       "no room",
			inv:        invocation{args: []string{"bind", "--agent", "alice"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam bind --help)\n",
		},
		{
			name: "unknown agent",
			backend: backend{BindFunc: func(context.Context, wire.BindRequest) (wire.Binding, error) {
				return wire.Binding{}, fmt.Errorf("%w: no agent %q", jam.ErrNotFound, "zed")
			}},
			inv:        invocation{args: []string{"bind", roomID, "--agent", "zed"}},
			wantCode:   4,
			wantStderr: "jam: bind zed to room " + roomID + ": not found: no agent \"zed\" (not_found)\n",
		},
	})
}

func TestUnbind(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name: "unbind",
			backend: backend{UnbindFunc: func(_ context.Context, id string) error {
				assert.Equal(t, "main", id)
				return nil
			}},
			inv:        invocation{args: []string{"unbind", "main"}},
			wantStdout: "removed binding main\n",
		},
		{
			name: "unknown binding",
			backend: backend{UnbindFunc: func(context.Context, string) error {
				return fmt.Errorf("%w: no binding %q", jam.ErrNotFound, "nope")
			}},
			inv:        invocation{args: []string{"unbind", "nope"}},
			wantCode:   4,
			wantStderr: "jam: unbind nope: not found: no binding \"nope\" (not_found)\n",
		},
		{
			name:       "no binding",
			inv:        invocation{args: []string{"unbind"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam unbind --help)\n",
		},
	})
}
