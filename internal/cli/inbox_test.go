package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var (
	msg1 = wire.InboxMessage{ID: "m-1", Peer: "band/alice", Room: roomID, Binding: "bnd_1", SenderID: "u-1", SenderName: "ann", Content: "please review\nthe PR", State: "queued", ReceivedAt: created}
	msg2 = wire.InboxMessage{ID: "m-2", Peer: "band/alice", Room: roomID, SenderID: "u-2", Content: "ping", AddressedToUser: true, State: "queued", ReceivedAt: created}
)

const (
	msg1JSON = `{"id":"m-1","peer":"band/alice","room":"` + roomID + `","binding":"bnd_1","sender_id":"u-1","sender_name":"ann","content":"please review\nthe PR","addressed_to_user":false,"state":"queued","received_at":"2026-01-02T03:04:05Z"}`
	// inboxText is how jam prints msg1 and msg2.
	inboxText = "m-1  room " + roomID + "  from ann (u-1)\n" +
		"    please review\n" +
		"    the PR\n" +
		"\n" +
		"m-2  room " + roomID + "  from u-2\n" +
		"    ping\n"
)

func TestInbox(t *testing.T) {
	t.Parallel()
	inbox := func(agent, room string, unrouted bool, msgs ...wire.InboxMessage) backend {
		return backend{InboxFunc: func(_ context.Context, q wire.InboxQuery) (wire.Inbox, error) {
			assert.Equal(t, []any{agent, room, unrouted, wire.DefaultInboxLimit}, []any{q.Agent, q.Room, q.Unrouted, q.Limit})
			return wire.Inbox{Messages: msgs}, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "blocks",
			backend:    inbox("", "", false, msg1, msg2),
			inv:        invocation{args: []string{"inbox"}},
			wantStdout: inboxText,
		},
		{
			name:       "filters",
			backend:    inbox("alice", roomID, false, msg2),
			inv:        invocation{args: []string{"inbox", "--agent", "alice", "--room", roomID}},
			wantStdout: "m-2  room " + roomID + "  from u-2\n    ping\n",
		},
		{
			name:       "ids only",
			backend:    inbox("", "", false, msg1, msg2),
			inv:        invocation{args: []string{"inbox", "-q"}},
			wantStdout: "m-1\nm-2\n",
		},
		{
			name:       "ids only, none",
			backend:    inbox("", "", false),
			inv:        invocation{args: []string{"inbox", "--quiet"}},
			wantStdout: "",
		},
		{
			name:       "ids or JSON",
			inv:        invocation{args: []string{"inbox", "-q", "--json"}},
			wantCode:   2,
			wantStderr: "jam: --quiet and --json do not go together\n",
		},
		{
			name:       "unrouted, empty",
			backend:    inbox("", "", true),
			inv:        invocation{args: []string{"inbox", "--unrouted"}},
			wantStdout: "no messages\n",
		},
		{
			name:     "json",
			backend:  inbox("", "", false, msg1),
			inv:      invocation{args: []string{"inbox", "--json"}},
			wantJSON: `{"messages":[` + msg1JSON + `]}`,
		},
		{
			name:     "json empty",
			backend:  inbox("", "", false),
			inv:      invocation{args: []string{"inbox", "--json"}},
			wantJSON: `{"messages":[]}`,
		},
		{
			name: "unknown agent",
			backend: backend{InboxFunc: func(context.Context, wire.InboxQuery) (wire.Inbox, error) {
				return wire.Inbox{}, fmt.Errorf("%w: no agent %q", jam.ErrNotFound, "zed")
			}},
			inv:        invocation{args: []string{"inbox", "--agent", "zed"}},
			wantCode:   4,
			wantStderr: "jam: inbox: not found: no agent \"zed\" (not_found)\n",
		},
		{
			name:       "arguments",
			inv:        invocation{args: []string{"inbox", "alice"}},
			wantCode:   2,
			wantStderr: "jam: unknown command \"alice\" for \"jam inbox\" (see jam inbox --help)\n",
		},
		{
			name: "a page, and the cursor of the next",
			backend: backend{InboxFunc: func(_ context.Context, q wire.InboxQuery) (wire.Inbox, error) {
				assert.Equal(t, wire.InboxQuery{Limit: 2, After: "7"}, q)
				return wire.Inbox{Messages: []wire.InboxMessage{msg1, msg2}, More: true, NextCursor: "12"}, nil
			}},
			inv:        invocation{args: []string{"inbox", "--limit", "2", "--after", "7"}},
			wantStdout: inboxText + "\nmore messages wait: list them with --after 12\n",
		},
		{
			name:       "limit out of range",
			inv:        invocation{args: []string{"inbox", "--limit", "0"}},
			wantCode:   2,
			wantStderr: "jam: --limit 0 is outside 1 to 1000\n",
		},
	})
}
