package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
)

// bigAnswerAgentEnv makes the test binary an ACP agent that answers every
// prompt with two chunks of 1,000,000 bytes.
const bigAnswerAgentEnv = "JAM_TEST_BIG_ANSWER_AGENT"

func init() {
	if os.Getenv(bigAnswerAgentEnv) == "" {
		return
	}
	chunk := strings.Repeat("0123456789 ", 1_000_000/11) + "x"
	var conn *jsonrpc.Conn
	conn = jsonrpc.New(os.Stdin, os.Stdout, jsonrpc.Options{Handler: func(_ context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case acp.MethodInitialize:
			return map[string]any{"protocolVersion": acp.ProtocolVersion, "agentCapabilities": map[string]any{}}, nil
		case acp.MethodSessionNew:
			return map[string]any{"sessionId": "big-1"}, nil
		case acp.MethodSessionPrompt:
			var p acp.PromptParams
			_ = json.Unmarshal(params, &p)
			for range 2 {
				_ = conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": p.SessionID, "update": map[string]any{
					"sessionUpdate": acp.UpdateAgentMessageChunk, "content": map[string]any{"type": "text", "text": chunk}}})
			}
			return map[string]any{"stopReason": acp.StopEndTurn}, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method}
	}})
	if err := conn.Run(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestOwned_bigAnswerIsPostedTruncated: an owned agent answering with
// 2 MB once filled its room with 125 posts; now the room gets at most
// engine.MaxReplyParts of them, the last saying how much was cut.
func TestOwned_bigAnswerIsPostedTruncated(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	command := []string{"/bin/sh", "-c", bigAnswerAgentEnv + `=1 exec "$0" -test.run='^$'`, os.Args[0]}
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "talker", Runtime: &wire.AgentRuntime{Command: command, Permission: "reject"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "long", Agents: []string{"talker"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" tell me everything", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, room.ID, "", 200)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.ID == sent.ID && m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
				return true
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond, "the message is answered and settled")
	page, err := owner.ChatMessages(ctx, room.ID, "", 200)
	require.NoError(t, err)
	var posts []protocol.Message
	for _, m := range page.Messages {
		if m.SenderID == agent.AgentID {
			posts = append(posts, m)
		}
	}
	require.NotEmpty(t, posts)
	require.LessOrEqual(t, len(posts), engine.MaxReplyParts, "posts in the room for one answer")
	sort.SliceStable(posts, func(i, j int) bool { return posts[i].InsertedAt < posts[j].InsertedAt })
	for i, p := range posts {
		_, note, found := strings.Cut(p.Content, "[answer truncated: ")
		if i < len(posts)-1 {
			require.False(t, found, "only the last post carries the note")
			continue
		}
		require.True(t, found, "the last post carries the note")
		var more int
		_, err := fmt.Sscanf(note, "%d bytes more]", &more)
		require.NoError(t, err)
		require.Greater(t, more, 2_000_000-engine.MaxReplyParts*engine.MaxPartBytes, "the note counts what the harness dropped too")
	}
}
