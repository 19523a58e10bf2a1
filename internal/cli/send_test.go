package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestSend(t *testing.T) {
	t.Parallel()
	send := func(want wire.SendRequest, res wire.SendResult) backend {
		return backend{SendFunc: func(_ context.Context, r wire.SendRequest) (wire.SendResult, error) {
			assert.Equal(t, want, r)
			return res, nil
		}}
	}
	res := wire.SendResult{ID: "m-7", Body: "@bob hi", Mentions: []string{"bob"}}
	warned := res
	warned.Warnings = []string{"carol is not in the room", "two\nlines"}
	runCases(t, []cmdCase{
		{
			name:       "prints the id",
			backend:    send(wire.SendRequest{Room: roomID, Text: "hi"}, res),
			inv:        invocation{args: []string{"send", roomID, "hi"}},
			wantStdout: "m-7\n",
		},
		{
			name:       "recipients, agent and warnings",
			backend:    send(wire.SendRequest{Agent: "alice", Room: roomID, Text: "hi", Recipients: []string{"bob", "carol"}}, warned),
			inv:        invocation{args: []string{"send", roomID, "hi", "--agent", "alice", "--to", "bob", "--to", "carol"}},
			wantStdout: "m-7\n",
			wantStderr: "jam: warning: carol is not in the room\njam: warning: two lines\n",
		},
		{
			name:       "directed",
			backend:    send(wire.SendRequest{Room: roomID, Text: "@carol?", Recipients: []string{"bob"}, Directed: true}, res),
			inv:        invocation{args: []string{"send", roomID, "@carol?", "--to", "bob", "--directed"}},
			wantStdout: "m-7\n",
		},
		{
			name:     "stdin, json",
			backend:  send(wire.SendRequest{Room: roomID, Text: "from a pipe"}, res),
			inv:      invocation{args: []string{"send", roomID, "-", "--json"}, stdin: "from a pipe\n"},
			wantJSON: `{"id":"m-7","body":"@bob hi","mentions":["bob"]}`,
		},
		{
			name:       "empty text",
			inv:        invocation{args: []string{"send", roomID, "  "}},
			wantCode:   2,
			wantStderr: "jam: the message text is empty\n",
		},
		{
			name: "bad room",
			backend: backend{SendFunc: func(context.Context, wire.SendRequest) (wire.SendResult, error) {
				return wire.SendResult{}, fmt.Errorf("%w: room id %q is not a UUID", jam.ErrInvalid, "lobby")
			}},
			inv:        invocation{args: []string{"send", "lobby", "hi"}},
			wantCode:   2,
			wantStderr: "jam: send to room lobby: invalid argument: room id \"lobby\" is not a UUID (invalid_argument)\n",
		},
		{
			name: "band down",
			backend: backend{SendFunc: func(context.Context, wire.SendRequest) (wire.SendResult, error) {
				return wire.SendResult{}, fmt.Errorf("post message: %w", jam.ErrUnavailable)
			}},
			inv:        invocation{args: []string{"send", roomID, "hi"}},
			wantCode:   7,
			wantStderr: "jam: send to room " + roomID + ": post message: unavailable (unavailable)\n",
		},
	})
}

func TestNotice(t *testing.T) {
	t.Parallel()
	notice := func(want wire.NoticeRequest) backend {
		return backend{NoticeFunc: func(_ context.Context, r wire.NoticeRequest) (wire.NoticeResult, error) {
			assert.Equal(t, want, r)
			return wire.NoticeResult{ID: "jam-notice:msg_01"}, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "prints the id",
			backend:    notice(wire.NoticeRequest{Agent: "alice", Room: roomID, Text: "task 7 is yours"}),
			inv:        invocation{args: []string{"notice", roomID, "task 7 is yours", "--agent", "alice"}},
			wantStdout: "jam-notice:msg_01\n",
		},
		{
			name:       "json",
			backend:    notice(wire.NoticeRequest{Agent: "alice", Room: roomID, Text: "task 7 is yours"}),
			inv:        invocation{args: []string{"notice", roomID, "task 7 is yours", "--agent", "alice", "--json"}},
			wantStdout: "{\n  \"id\": \"jam-notice:msg_01\"\n}\n",
		},
		{
			name:       "stdin",
			backend:    notice(wire.NoticeRequest{Room: roomID, Text: "piped"}),
			inv:        invocation{args: []string{"notice", roomID, "-"}, stdin: "piped\n"},
			wantStdout: "jam-notice:msg_01\n",
		},
		{
			name:       "empty text",
			inv:        invocation{args: []string{"notice", roomID, " "}},
			wantCode:   2,
			wantStderr: "jam: the message text is empty\n",
		},
		{
			name:       "missing text",
			inv:        invocation{args: []string{"notice", roomID}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 1 (see jam notice --help)\n",
		},
	})
}
