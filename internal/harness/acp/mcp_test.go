package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/realagent"
)

// openCodeEcho is OpenCode's name for the tool echo of the MCP server
// jam: SERVER_TOOL, as the tools of its model requests show.
const openCodeEcho = "jam_echo"

// TestMCPServers is the encoding of the servers session/new and
// session/load carry.
func TestMCPServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		tools []harness.MCPServer
		want  string
	}{
		{"None", nil, `[]`},
		{"OneWithToken", []harness.MCPServer{{Name: "jam", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer t"}}},
			`[{"type":"http","name":"jam","url":"http://127.0.0.1:1/mcp","headers":[{"name":"Authorization","value":"Bearer t"}]}]`},
		{"NoHeaders", []harness.MCPServer{{Name: "a", URL: "http://127.0.0.1:2/"}},
			`[{"type":"http","name":"a","url":"http://127.0.0.1:2/","headers":[]}]`},
		{"HeadersSorted", []harness.MCPServer{{Name: "a", URL: "u", Headers: map[string]string{"X-B": "2", "Authorization": "1"}}},
			`[{"type":"http","name":"a","url":"u","headers":[{"name":"Authorization","value":"1"},{"name":"X-B","value":"2"}]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(acp.NewSessionParams{Cwd: "/w", MCPServers: acp.MCPServers(tc.tools)})
			require.NoError(t, err)
			require.JSONEq(t, `{"cwd":"/w","mcpServers":`+tc.want+`}`, string(b))
		})
	}
}

// TestHarness_mcpServers: the scripted agent that says it takes HTTP MCP
// servers gets them in session/new and session/load; one that does not
// gets none, its sessions open, and the adapter says so once in its log,
// without the header values.
func TestHarness_mcpServers(t *testing.T) {
	t.Parallel()
	const secret = "Bearer jam-cap-scripted-0123456789"
	tools := []harness.MCPServer{{Name: "jam", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": secret}}}
	for _, tc := range []struct {
		name string
		http bool
		want string
	}{
		{"HTTP", true, `[{"type":"http","name":"jam","url":"http://127.0.0.1:1/mcp","headers":[{"name":"Authorization","value":"` + secret + `"}]}]`},
		{"NoHTTP", false, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := conformance(t)
			record := filepath.Join(t.TempDir(), "mcp.txt")
			s.Spec.Env = append(s.Spec.Env, mcpFileEnv+"="+record)
			if tc.http {
				s.Spec.Env = append(s.Spec.Env, mcpHTTPEnv+"=1")
			}
			logs := &syncBuffer{}
			s.Spec.Logger = slog.New(slog.NewTextHandler(logs, nil))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			p, err := s.Harness.Launch(ctx, s.Spec)
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Stop(context.Background()) })
			require.Equal(t, tc.http, p.Manifest().MCPServers)
			dir := t.TempDir()
			th, err := p.Open(ctx, dir, tools...)
			require.NoError(t, err)
			_, err = p.Open(ctx, dir, tools...)
			require.NoError(t, err)
			require.NoError(t, p.Resume(ctx, th, dir, tools...))
			b, err := os.ReadFile(record)
			require.NoError(t, err)
			want := fmt.Sprintf("session/new %s\nsession/new %s\nsession/load %s\n", tc.want, tc.want, tc.want)
			require.Equal(t, want, string(b))
			require.NotContains(t, logs.String(), "jam-cap-", "no header value is logged")
			if tc.http {
				require.NotContains(t, logs.String(), "cannot take")
			} else {
				require.Equal(t, 1, strings.Count(logs.String(), "the agent cannot take HTTP MCP servers"), "said once: %s", logs)
			}
		})
	}
}

// TestOpenCode_mcp: the real `opencode acp`, whose handshake says it
// takes HTTP MCP servers, is given the test MCP server at session/new; the
// model's call of jam_echo reaches the server with the bearer token and
// its result reaches the model. The token is in no argv of the process's
// group; OpenCode asks no approval for it. With a wrong token the server
// answers 401, the tool is not offered, and the turn still ends; the
// first session keeps its own server and token.
func TestOpenCode_mcp(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	oc := realagent.NewOpenCode(t, model)
	const token = "jam-cap-0123456789abcdef-opencode"
	srv := harnesstest.NewMCPServer(t, token)
	oc.Reach(srv.Sock, srv.Addr)

	var asked atomic.Int32
	spec := harness.LaunchSpec{Argv: oc.KindCommand(), Executor: local.New(), Dir: gitWorktree(t), Env: oc.Env,
		Model: realagent.FakeAltModelID, HandshakeTimeout: step, Logger: slog.New(slog.DiscardHandler),
		Approve: func(context.Context, harness.ApprovalRequest) harness.Decision {
			asked.Add(1)
			return harness.AllowOnce
		}}
	ctx, cancel := context.WithTimeout(t.Context(), 6*step)
	defer cancel()
	p, err := acp.OpenCode.Launch(ctx, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	require.True(t, p.Manifest().MCPServers, "opencode says mcpCapabilities.http")

	var first harness.Thread
	turn := func(t *testing.T, token, text string) (harness.Outcome, []fakemodel.Captured) {
		thread := first
		if token != "" {
			var err error
			thread, err = p.Open(ctx, gitWorktree(t), srv.Server("jam", token))
			require.NoError(t, err)
		}
		if first == "" {
			first = thread
		}
		for _, c := range harnesstest.GroupCmdlines(t, p.Pid()) {
			require.NotContains(t, c, "jam-cap-", "the token is in no argv")
			require.NotContains(t, c, "wrong-token-", "the token is in no argv")
		}
		before := len(model.Requests())
		args, _ := json.Marshal(map[string]string{"text": text})
		model.Push(fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: openCodeEcho, Arguments: args}})
		start := time.Now()
		out, err := p.Prompt(ctx, thread, harness.Input{Text: "call the echo tool"}, nil)
		require.NoError(t, err)
		t.Logf("turn: %s in %s, %q", out.StopReason, time.Since(start), out.Text)
		var ts []fakemodel.Captured
		for _, c := range model.Requests()[before:] {
			if fakemodel.Turn(c) {
				ts = append(ts, c)
			}
		}
		require.NotEmpty(t, ts)
		return out, ts
	}

	// One after the other: both sessions share the process.
	t.Run("Token", func(t *testing.T) {
		out, ts := turn(t, token, "hi from opencode")
		require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
		var names []string
		for _, tool := range ts[0].Tools {
			names = append(names, tool.Function.Name)
		}
		t.Logf("tools offered: %v; approvals asked: %d", names, asked.Load())
		require.True(t, ts[0].OffersTool(openCodeEcho), "the MCP tool is offered: %v", names)
		calls := srv.Calls()
		require.Len(t, calls, 1)
		require.Equal(t, harnesstest.MCPCall{Tool: "echo", Text: "hi from opencode", Authorization: "Bearer " + token}, calls[0])
		require.GreaterOrEqual(t, len(ts), 2, "a request follows the tool call")
		results := ts[len(ts)-1].ToolResults()
		require.NotEmpty(t, results)
		require.Contains(t, string(results[len(results)-1].Content), "echo: hi from opencode", "the tool's result reached the model")
	})
	t.Run("WrongToken", func(t *testing.T) {
		calls, refused := len(srv.Calls()), srv.Refused()
		out, ts := turn(t, "wrong-token-0123456789", "not served")
		require.Greater(t, srv.Refused(), refused, "the server answered 401")
		require.Len(t, srv.Calls(), calls, "no call was served")
		require.False(t, ts[0].OffersTool(openCodeEcho), "a server that refused the agent offers no tools")
		require.NotEqual(t, harness.StopFailed, out.StopReason, "the turn ends: %s", out.ProviderReason)
		if results := ts[len(ts)-1].ToolResults(); len(results) > 0 {
			t.Logf("the agent's answer to the call: %q", results[len(results)-1].Content)
			require.NotContains(t, string(results[len(results)-1].Content), "echo:")
		}
	})
	// The first session keeps its own server and token after another
	// session of the process opened with a server of the same name and
	// another token: OpenCode keeps a session's MCP servers per session.
	t.Run("FirstAgain", func(t *testing.T) {
		calls := len(srv.Calls())
		out, ts := turn(t, "", "first again")
		require.Equal(t, harness.StopCompleted, out.StopReason, out.ProviderReason)
		require.True(t, ts[0].OffersTool(openCodeEcho))
		require.Equal(t, []harnesstest.MCPCall{{Tool: "echo", Text: "first again", Authorization: "Bearer " + token}}, srv.Calls()[calls:])
	})
}
