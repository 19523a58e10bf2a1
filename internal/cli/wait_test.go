package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// nothingArrives is a WaitInbox that finds nothing before its deadline.
func nothingArrives(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
	<-ctx.Done()
	return wire.Inbox{}, ctx.Err()
}

func TestWait(t *testing.T) {
	t.Parallel()
	arrives := func(want wire.WaitRequest, msgs ...wire.InboxMessage) backend {
		return backend{WaitInboxFunc: func(_ context.Context, r wire.WaitRequest) (wire.Inbox, error) {
			assert.Equal(t, want, r)
			return wire.Inbox{Messages: msgs}, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "a message arrives",
			backend:    arrives(wire.WaitRequest{TimeoutMS: 30000, Limit: wire.DefaultInboxLimit}, msg1, msg2),
			inv:        invocation{args: []string{"wait"}},
			wantStdout: inboxText,
		},
		{
			name:       "ids only",
			backend:    arrives(wire.WaitRequest{Agent: "alice", TimeoutMS: 30000, Limit: wire.DefaultInboxLimit}, msg1, msg2),
			inv:        invocation{args: []string{"wait", "--agent", "alice", "-q"}},
			wantStdout: "m-1\nm-2\n",
		},
		{
			name:     "filters and timeout, json",
			backend:  arrives(wire.WaitRequest{Agent: "alice", Room: roomID, TimeoutMS: 1500, Limit: 7, After: "31"}, msg1),
			inv:      invocation{args: []string{"wait", "--agent", "alice", "--room", roomID, "--timeout", "1.5s", "--limit", "7", "--after", "31", "--json"}},
			wantJSON: `{"messages":[` + msg1JSON + `]}`,
		},
		{
			name:     "timeout",
			backend:  backend{WaitInboxFunc: nothingArrives},
			inv:      invocation{args: []string{"wait", "--timeout", "10ms"}},
			wantCode: 8,
		},
		{
			name:     "timeout, json",
			backend:  backend{WaitInboxFunc: nothingArrives},
			inv:      invocation{args: []string{"wait", "--timeout", "10ms", "--json"}},
			wantCode: 8, wantJSON: `{"messages":[]}`,
		},
		{
			name:       "zero timeout",
			inv:        invocation{args: []string{"wait", "--timeout", "0s"}},
			wantCode:   2,
			wantStderr: "jam: --timeout 0s is outside 1ms to 10m0s\n",
		},
		{
			name:       "timeout over ten minutes",
			inv:        invocation{args: []string{"wait", "--timeout", "11m"}},
			wantCode:   2,
			wantStderr: "jam: --timeout 11m0s is outside 1ms to 10m0s\n",
		},
		{
			name:       "not a duration",
			inv:        invocation{args: []string{"wait", "--timeout", "soon"}},
			wantCode:   2,
			wantStderr: "jam: invalid argument \"soon\" for \"--timeout\" flag: must be a duration like \"30s\" or \"5m\" (see jam wait --help)\n",
		},
		{
			name: "unknown agent",
			backend: backend{WaitInboxFunc: func(context.Context, wire.WaitRequest) (wire.Inbox, error) {
				return wire.Inbox{}, fmt.Errorf("%w: no agent %q", jam.ErrNotFound, "zed")
			}},
			inv:        invocation{args: []string{"wait", "--agent", "zed"}},
			wantCode:   4,
			wantStderr: "jam: wait inbox: not found: no agent \"zed\" (not_found)\n",
		},
		{
			name: "daemon stopping",
			backend: backend{WaitInboxFunc: func(context.Context, wire.WaitRequest) (wire.Inbox, error) {
				return wire.Inbox{}, jam.ErrStopping
			}},
			inv:        invocation{args: []string{"wait"}},
			wantCode:   7,
			wantStderr: "jam: wait inbox: stopping (stopping)\n",
		},
	})
}
