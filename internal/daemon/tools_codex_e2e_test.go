package daemon_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// codexTools is the real `codex app-server` (harness codex) under bwrap
// with the network on, configured by -c options, on the fake model: it
// offers the tools of jam's MCP server, named jam by jamd, as functions
// of the Responses namespace tool mcp__jam, and asks before each call,
// which the allow policy approves.
var codexTools = toolAgent{
	runtime: func(t *testing.T, model *fakemodel.Server) *wire.AgentRuntime {
		cx := realagent.NewCodex(t, model)
		return &wire.AgentRuntime{Harness: "codex", Command: append([]string{cx.Binary}, realagent.CodexOptions(model.URL())...), Env: cx.SandboxEnv(),
			Permission: "allow", Sandbox: "bwrap", Network: "on", HandshakeTimeout: (3 * time.Minute).String()}
	},
	call: func(tool string, args map[string]any) fakemodel.Reply {
		b, _ := json.Marshal(args)
		return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Namespace: "mcp__jam", Name: tool, Arguments: b}}
	},
	step: 3 * time.Minute,
}

// TestToolsE2E_codexAgentsTalkUntilTheHopLimit: two owned Codex agents
// answer each other through jam's room_reply until the hop limit (3)
// stops the chain; see agentsTalkUntilTheHopLimit.
func TestToolsE2E_codexAgentsTalkUntilTheHopLimit(t *testing.T) {
	t.Parallel()
	agentsTalkUntilTheHopLimit(t, codexTools, 3)
}
