package claude_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/claude"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// claudeEcho is Claude Code's name for the tool echo of the MCP server
// jam: mcp__SERVER__TOOL, as the tools of its model requests show.
const claudeEcho = "mcp__jam__echo"

// TestClaude_mcp: a real Claude Code process given the test MCP server
// (LaunchSpec.MCP) offers its tool to the model as mcp__jam__echo; the
// model's call reaches the server with the bearer token and runs without
// an approval request (the reject policy is in force), and its result
// reaches the model. The token is in no argv of the process's group; the
// configuration file is 0600 in the private directory, and gone after
// Stop. With a wrong token the server answers 401, the tool is not
// offered, and the turn still ends.
func TestClaude_mcp(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cl := realagent.NewClaude(t, model)
	const token = "jam-cap-0123456789abcdef-claude"
	srv := harnesstest.NewMCPServer(t, token)
	cl.Reach(srv.Sock, srv.Addr)

	run := func(t *testing.T, token, text string) (harness.Outcome, []fakemodel.Captured) {
		private := t.TempDir()
		spec := harness.LaunchSpec{Argv: cl.Command(), Executor: local.New(), Dir: t.TempDir(), Env: cl.Env, HandshakeTimeout: step,
			Logger: slog.New(slog.DiscardHandler), Policy: harness.PolicyReject,
			MCP: []harness.MCPServer{srv.Server("jam", token)}, PrivateDir: private}
		ctx, cancel := context.WithTimeout(t.Context(), 3*step)
		defer cancel()
		p, err := claude.Harness{}.Launch(ctx, spec)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		require.True(t, p.Manifest().MCPServers)
		for _, c := range harnesstest.GroupCmdlines(t, p.Pid()) {
			require.NotContains(t, c, token, "the token is in no argv")
		}
		files, err := os.ReadDir(private)
		require.NoError(t, err)
		require.Len(t, files, 1, "the MCP configuration")
		fi, err := files[0].Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

		thread, err := p.Open(ctx, spec.Dir, spec.MCP...)
		require.NoError(t, err)
		before := len(model.Requests())
		args, _ := json.Marshal(map[string]string{"text": text})
		model.Push(fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: claudeEcho, Arguments: args}})
		start := time.Now()
		out, err := p.Prompt(ctx, thread, harness.Input{Text: "call the echo tool"}, nil)
		require.NoError(t, err)
		t.Logf("turn: %s in %s, %q", out.StopReason, time.Since(start), out.Text)
		require.NoError(t, p.Stop(ctx))
		files, err = os.ReadDir(private)
		require.NoError(t, err)
		require.Empty(t, files, "the configuration is removed when the process stops")
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
		out, ts := run(t, token, "hi from claude")
		require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
		var names []string
		for _, tool := range ts[0].Tools {
			names = append(names, tool.Function.Name)
		}
		t.Logf("tools offered: %v", names)
		// Claude Code 2.1.332 defers MCP tools behind its ToolSearch tool:
		// the request names mcp__jam__echo among the deferred tools
		// instead of offering its schema (with ENABLE_TOOL_SEARCH=false
		// it is among the tools). A call by name runs either way.
		require.True(t, ts[0].OffersTool(claudeEcho) || strings.Contains(history(ts[0]), claudeEcho),
			"the MCP tool is offered, or named as deferred: %v", names)
		calls := srv.Calls()
		require.Len(t, calls, 1)
		require.Equal(t, harnesstest.MCPCall{Tool: "echo", Text: "hi from claude", Authorization: "Bearer " + token}, calls[0])
		require.GreaterOrEqual(t, len(ts), 2, "a request follows the tool call")
		results := ts[len(ts)-1].ToolResults()
		require.NotEmpty(t, results)
		require.Contains(t, string(results[len(results)-1].Content), "echo: hi from claude", "the tool's result reached the model")
	})

	// Without a private directory the configuration goes into a
	// temporary one, removed with it when the process stops.
	t.Run("TemporaryDir", func(t *testing.T) {
		spec := harness.LaunchSpec{Argv: cl.Command(), Executor: local.New(), Dir: t.TempDir(), Env: cl.Env, HandshakeTimeout: step,
			Logger: slog.New(slog.DiscardHandler), MCP: []harness.MCPServer{srv.Server("jam", token)}}
		ctx, cancel := context.WithTimeout(t.Context(), step)
		defer cancel()
		p, err := claude.Harness{}.Launch(ctx, spec)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		path := ""
		for _, c := range harnesstest.GroupCmdlines(t, p.Pid()) {
			if _, after, ok := strings.Cut(c, "--mcp-config "); ok {
				path, _, _ = strings.Cut(after, " ")
			}
		}
		require.NotEmpty(t, path, "the CLI is given --mcp-config")
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		require.NoError(t, p.Stop(ctx))
		_, err = os.Stat(filepath.Dir(path))
		require.ErrorIs(t, err, fs.ErrNotExist, "the temporary directory is removed")
	})

	t.Run("WrongToken", func(t *testing.T) {
		calls := len(srv.Calls())
		refused := srv.Refused()
		out, ts := run(t, "wrong-token-0123456789", "not served")
		require.Greater(t, srv.Refused(), refused, "the server answered 401")
		require.Len(t, srv.Calls(), calls, "no call was served")
		require.False(t, ts[0].OffersTool(claudeEcho) || strings.Contains(history(ts[0]), claudeEcho),
			"a server that refused the CLI offers no tools")
		require.NotEqual(t, harness.StopFailed, out.StopReason, "the turn ends: %s", out.ProviderReason)
		results := ts[len(ts)-1].ToolResults()
		require.NotEmpty(t, results, "the CLI answered the call")
		t.Logf("the CLI's answer to the call: %q", results[len(results)-1].Content)
		require.NotContains(t, string(results[len(results)-1].Content), "echo:")
	})
}

// TestMCPConfig is the --mcp-config file and flags for two servers.
func TestMCPConfig(t *testing.T) {
	t.Parallel()
	servers := []harness.MCPServer{
		{Name: "jam", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		{Name: "other", URL: "http://127.0.0.1:2/mcp"},
	}
	b, err := claude.MCPConfig(servers)
	require.NoError(t, err)
	require.JSONEq(t, `{"mcpServers":{
		"jam":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer s3cret"}},
		"other":{"type":"http","url":"http://127.0.0.1:2/mcp"}}}`, string(b))
	args := claude.MCPArgs("/private/mcp.json", servers)
	require.Equal(t, []string{"--mcp-config", "/private/mcp.json", "--strict-mcp-config", "--allowedTools", "mcp__jam,mcp__other"}, args)
	require.NotContains(t, strings.Join(args, " "), "s3cret")
	_, err = claude.MCPConfig([]harness.MCPServer{{Name: "a", URL: "u"}, {Name: "a", URL: "v"}})
	require.Error(t, err, "two servers of one name")
}
