package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestRoomShow(t *testing.T) {
	t.Parallel()
	msgs := wire.RoomMessages{Room: roomID, Account: "local", Seq: 9, Messages: []wire.RoomMessage{
		{ID: "m1", Seq: 4, MessageType: "text", Content: "@[[a1]] build it\nplease", Text: "@owner/coder build it\nplease", SenderID: "u1", SenderType: "User", SenderName: "Owner",
			InsertedAt: "2026-01-02T03:04:05.000000Z", Delivery: []wire.AgentDelivery{
				{AgentID: "a1", Handle: "owner/coder", Status: wire.DeliveryProcessed, Attempt: 1},
				{AgentID: "a2", Status: wire.DeliveryFailed, Attempt: 2, Error: "out of\ntokens"},
			}},
		{ID: "m2", MessageType: "system", Content: "Reviewer joined", SenderID: "a2", SenderName: "Reviewer", InsertedAt: "2026-01-02T03:04:06.000000Z", Local: true},
		{ID: "m3", Seq: 9, MessageType: "thought", Content: "thinking", Text: "thinking", SenderID: "a1", InsertedAt: "2026-01-02T03:04:07+bad"},
	}}
	show := func(wantAccount string, wantLimit int, out wire.RoomMessages) backend {
		return backend{RoomMessagesFunc: func(_ context.Context, room, account string, limit int) (wire.RoomMessages, error) {
			assert.Equal(t, []any{roomID, wantAccount, wantLimit}, []any{room, account, limit})
			return out, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:    "blocks",
			backend: show("", wire.MaxRoomMessages, msgs),
			inv:     invocation{args: []string{"room", "show", roomID}},
			wantStdout: "#1  2026-01-02 03:04:05  Owner  m1\n" +
				"    @owner/coder build it\n" +
				"    please\n" +
				"    -> @owner/coder processed\n" +
				"    -> a2 failed (attempt 2): out of tokens\n" +
				"\n" +
				"#2  2026-01-02 03:04:06  Reviewer  [system]  [local]  m2\n" +
				"    Reviewer joined\n" +
				"\n" +
				"#3  2026-01-02T03:04:07+bad  a1  [thought]  m3\n" +
				"    thinking\n",
		},
		{
			name:       "limit and account",
			backend:    show("work", 2, wire.RoomMessages{Room: roomID}),
			inv:        invocation{args: []string{"room", "show", roomID, "--limit", "2", "--account", "work"}},
			wantStdout: "no messages\n",
		},
		{
			name:     "json",
			backend:  show("", wire.MaxRoomMessages, wire.RoomMessages{Room: roomID, Account: "local", Seq: 1}),
			inv:      invocation{args: []string{"room", "show", roomID, "--json"}},
			wantJSON: `{"room":"` + roomID + `","account":"local","seq":1,"messages":[]}`,
		},
		{
			name:       "limit out of range is refused by the daemon",
			inv:        invocation{args: []string{"room", "show", roomID, "--limit", "500"}},
			wantCode:   2,
			wantStderr: "jam: query parameter limit=500 is not a number from 1 to 100 (invalid_argument)\n",
		},
		{
			name: "not a participant",
			backend: backend{RoomMessagesFunc: func(context.Context, string, string, int) (wire.RoomMessages, error) {
				return wire.RoomMessages{}, fmt.Errorf("band 404: %w", jam.ErrNotFound)
			}},
			inv:        invocation{args: []string{"room", "show", roomID}},
			wantCode:   4,
			wantStderr: "jam: messages of room " + roomID + ": band 404: not found (not_found)\n",
		},
	})
}

func TestRoomPost(t *testing.T) {
	t.Parallel()
	post := func(want wire.RoomPostRequest, res wire.RoomPostResult) backend {
		return backend{RoomPostFunc: func(_ context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error) {
			assert.Equal(t, roomID, room)
			assert.Equal(t, want, r)
			return res, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "prints the id",
			backend:    post(wire.RoomPostRequest{Text: "@coder go"}, wire.RoomPostResult{ID: "m1", Body: "@[[a1]] go", Mentions: []string{"a1"}}),
			inv:        invocation{args: []string{"room", "post", roomID, "@coder go"}},
			wantStdout: "m1\n",
		},
		{
			name: "mentions, account and warnings",
			backend: post(wire.RoomPostRequest{Account: "work", Text: "hi @zed", Mentions: []string{"coder", "a2"}},
				wire.RoomPostResult{ID: "m2", Mentions: []string{"a1", "a2"}, Warnings: []string{"@zed was left\nas text"}}),
			inv:        invocation{args: []string{"room", "post", roomID, "hi @zed", "--mention", "coder", "--mention", "a2", "--account", "work"}},
			wantStdout: "m2\n",
			wantStderr: "jam: warning: @zed was left as text\n",
		},
		{
			name:     "stdin, json",
			backend:  post(wire.RoomPostRequest{Text: "from a pipe"}, wire.RoomPostResult{ID: "m3", Body: "@[[a1]] from a pipe"}),
			inv:      invocation{args: []string{"room", "post", roomID, "-", "--json"}, stdin: "from a pipe\n"},
			wantJSON: `{"id":"m3","body":"@[[a1]] from a pipe","mentions":[]}`,
		},
		{
			name:       "no text",
			inv:        invocation{args: []string{"room", "post", roomID}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 1 (see jam room post --help)\n",
		},
		{
			name: "nobody mentioned",
			backend: backend{RoomPostFunc: func(context.Context, string, wire.RoomPostRequest) (wire.RoomPostResult, error) {
				return wire.RoomPostResult{}, fmt.Errorf("%w: the message mentions nobody", jam.ErrInvalid)
			}},
			inv:        invocation{args: []string{"room", "post", roomID, "hello"}},
			wantCode:   2,
			wantStderr: "jam: post to room " + roomID + ": invalid argument: the message mentions nobody (invalid_argument)\n",
		},
	})
}
