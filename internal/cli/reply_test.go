package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestReply(t *testing.T) {
	t.Parallel()
	reply := func(want wire.ReplyRequest, res wire.ReplyResult) backend {
		return backend{ReplyFunc: func(_ context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error) {
			assert.Equal(t, "m-1", msg)
			assert.Equal(t, want, r)
			return res, nil
		}}
	}
	runCases(t, []cmdCase{
		{
			name:       "reply",
			backend:    reply(wire.ReplyRequest{Text: "on it"}, wire.ReplyResult{Posted: []string{"m-9"}}),
			inv:        invocation{args: []string{"reply", "m-1", "on it"}},
			wantStdout: "replied to m-1: posted m-9\n",
		},
		{
			name:       "text from stdin, mentions, agent",
			backend:    reply(wire.ReplyRequest{Agent: "alice", Text: "line one\nline two", Mentions: []string{"ann", "bob"}}, wire.ReplyResult{Posted: []string{"m-9", "m-10"}, Mentions: []string{"u-ann", "u-bob"}, Handles: []string{"ann", ""}}),
			inv:        invocation{args: []string{"reply", "m-1", "-", "--agent", "alice", "--mention", "ann", "--mention", "bob"}, stdin: "line one\nline two\n\n"},
			wantStdout: "replied to m-1: posted m-9, m-10, mentioning @ann, u-bob\n",
		},
		{
			name:     "json",
			backend:  reply(wire.ReplyRequest{Text: "ok"}, wire.ReplyResult{Posted: []string{"m-9"}, Resumed: true}),
			inv:      invocation{args: []string{"reply", "m-1", "ok", "--json"}},
			wantJSON: `{"posted":["m-9"],"mentions":[],"resumed":true}`,
		},
		{
			name:       "empty text",
			inv:        invocation{args: []string{"reply", "m-1", "-"}, stdin: "\n"},
			wantCode:   2,
			wantStderr: "jam: the message text is empty\n",
		},
		{
			name:       "no text",
			inv:        invocation{args: []string{"reply", "m-1"}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 1 (see jam reply --help)\n",
		},
		{
			name: "already settled",
			backend: backend{ReplyFunc: func(context.Context, string, wire.ReplyRequest) (wire.ReplyResult, error) {
				return wire.ReplyResult{}, fmt.Errorf("message m-1 is settled: %w", jam.ErrConflict)
			}},
			inv:        invocation{args: []string{"reply", "m-1", "late"}},
			wantCode:   5,
			wantStderr: "jam: reply to m-1: message m-1 is settled: conflict (conflict)\n",
		},
		{
			name: "unknown message",
			backend: backend{ReplyFunc: func(context.Context, string, wire.ReplyRequest) (wire.ReplyResult, error) {
				return wire.ReplyResult{}, fmt.Errorf("message m-1: %w", jam.ErrNotFound)
			}},
			inv:        invocation{args: []string{"reply", "m-1", "hello"}},
			wantCode:   4,
			wantStderr: "jam: reply to m-1: message m-1: not found (not_found)\n",
		},
	})
}

func TestAck(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name: "ack",
			backend: backend{AckFunc: func(_ context.Context, msg string, r wire.AckRequest) error {
				assert.Equal(t, "m-1", msg)
				assert.Equal(t, "alice", r.Agent)
				return nil
			}},
			inv:        invocation{args: []string{"ack", "m-1", "--agent", "alice"}},
			wantStdout: "acknowledged m-1\n",
		},
		{
			name: "unknown message",
			backend: backend{AckFunc: func(context.Context, string, wire.AckRequest) error {
				return fmt.Errorf("message m-1: %w", jam.ErrNotFound)
			}},
			inv:        invocation{args: []string{"ack", "m-1"}},
			wantCode:   4,
			wantStderr: "jam: ack m-1: message m-1: not found (not_found)\n",
		},
		{
			name:       "no message",
			inv:        invocation{args: []string{"ack"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam ack --help)\n",
		},
	})
}
