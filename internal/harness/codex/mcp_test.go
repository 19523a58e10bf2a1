package codex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/codex"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// Codex offers the tools of the MCP server jam in a namespace tool
// (Responses API) named mcp__jam, the tool echo as its function echo.
const codexNamespace, codexEcho = "mcp__jam", "echo"

// offers says whether a request offers the server's echo tool.
func offers(c fakemodel.Captured) bool {
	for _, tool := range c.Tools {
		if tool.Namespace == codexNamespace && tool.Function.Name == codexEcho {
			return true
		}
	}
	return false
}

// TestCodex_mcp: the real `codex app-server` given the test MCP server at
// thread/start (config mcp_servers.jam) calls its tool with the thread's
// token, and the result reaches the model; the token is in no argv of the
// process's group. Codex asks before the call (an elicitation of kind
// mcp_tool_call), which the Approver answers: allowed, the call is made;
// rejected, it is not, and the model is told. With a wrong token the
// server answers 401, the tool is not offered, and the turn still ends.
func TestCodex_mcp(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cx := realagent.NewCodex(t, model)
	const token = "jam-cap-0123456789abcdef-codex"
	srv := harnesstest.NewMCPServer(t, token)
	cx.Reach(srv.Sock, srv.Addr)

	var asked atomic.Int32
	var reject atomic.Bool
	spec := harness.LaunchSpec{Argv: cx.Command(), Executor: local.New(), Dir: gitWorktree(t), Env: cx.Env,
		HandshakeTimeout: step, Secrets: []string{realagent.CodexKey}, Logger: slog.New(slog.DiscardHandler),
		Approve: func(_ context.Context, r harness.ApprovalRequest) harness.Decision {
			asked.Add(1)
			require.Equal(t, harness.ApprovalRequest{Thread: r.Thread, ToolCallID: r.ToolCallID, Title: "jam.echo", ToolKind: "other"}, r)
			require.NotEmpty(t, r.ToolCallID, "the call's item")
			if reject.Load() {
				return harness.Reject
			}
			return harness.AllowOnce
		}}
	ctx, cancel := context.WithTimeout(t.Context(), 6*step)
	defer cancel()
	p, err := codex.Harness{}.Launch(ctx, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(context.Background()) })

	turn := func(t *testing.T, token, text string) (harness.Outcome, []fakemodel.Captured) {
		thread, err := p.Open(ctx, gitWorktree(t), srv.Server("jam", token))
		require.NoError(t, err)
		for _, c := range harnesstest.GroupCmdlines(t, p.Pid()) {
			require.NotContains(t, c, "jam-cap-", "the token is in no argv")
			require.NotContains(t, c, "wrong-token-", "the token is in no argv")
		}
		before := len(model.Requests())
		args, _ := json.Marshal(map[string]string{"text": text})
		model.Push(fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Namespace: codexNamespace, Name: codexEcho, Arguments: args}})
		start := time.Now()
		out, err := p.Prompt(ctx, thread, harness.Input{Text: "call the echo tool"}, func(u harness.Update) {
			if u.Kind == harness.UpdateToolStart || u.Kind == harness.UpdateToolEnd {
				t.Logf("update: %+v", u)
			}
		})
		require.NoError(t, err)
		t.Logf("turn: %s %s in %s, %q", out.StopReason, out.ProviderReason, time.Since(start), out.Text)
		var ts []fakemodel.Captured
		for _, c := range model.Requests()[before:] {
			if fakemodel.Turn(c) {
				ts = append(ts, c)
			}
		}
		require.NotEmpty(t, ts)
		return out, ts
	}

	t.Run("Token", func(t *testing.T) {
		out, ts := turn(t, token, "hi from codex")
		var names []string
		for _, tool := range ts[0].Tools {
			names = append(names, tool.Namespace+"/"+tool.Function.Name)
		}
		t.Logf("tools offered: %v", names)
		require.Equal(t, int32(1), asked.Load(), "Codex asked before the MCP tool call (mcpServer/elicitation/request), the Approver answered")
		require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
		require.True(t, offers(ts[0]), "the MCP tool is offered: %v", names)
		calls := srv.Calls()
		require.Len(t, calls, 1)
		require.Equal(t, harnesstest.MCPCall{Tool: "echo", Text: "hi from codex", Authorization: "Bearer " + token}, calls[0])
		require.GreaterOrEqual(t, len(ts), 2, "a request follows the tool call")
		results := ts[len(ts)-1].ToolResults()
		require.NotEmpty(t, results)
		require.Contains(t, string(results[len(results)-1].Content), "echo: hi from codex", "the tool's result reached the model")
	})
	t.Run("Rejected", func(t *testing.T) {
		reject.Store(true)
		defer reject.Store(false)
		calls := len(srv.Calls())
		out, ts := turn(t, token, "rejected")
		require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
		require.Len(t, srv.Calls(), calls, "the rejected call was not made")
		results := ts[len(ts)-1].ToolResults()
		require.NotEmpty(t, results)
		require.Contains(t, string(results[len(results)-1].Content), "rejected", "the model is told")
	})
	t.Run("WrongToken", func(t *testing.T) {
		calls, refused := len(srv.Calls()), srv.Refused()
		out, ts := turn(t, "wrong-token-0123456789", "not served")
		require.Greater(t, srv.Refused(), refused, "the server answered 401")
		require.Len(t, srv.Calls(), calls, "no call was served")
		require.False(t, offers(ts[0]), "a server that refused the agent offers no tools")
		require.NotEqual(t, harness.StopFailed, out.StopReason, "the turn ends: %s", out.ProviderReason)
		if results := ts[len(ts)-1].ToolResults(); len(results) > 0 {
			t.Logf("the agent's answer to the call: %q", results[len(results)-1].Content)
			require.NotContains(t, string(results[len(results)-1].Content), "echo:")
		}
	})
	// Codex keeps the thread's overrides to itself: the token is in no
	// file of its home (its threads, its state database).
	require.NoError(t, filepath.WalkDir(cx.Home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil {
			require.False(t, bytes.Contains(b, []byte(token)), "the token is written in %s", path)
		}
		return nil
	}))
}
