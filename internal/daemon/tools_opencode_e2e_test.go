package daemon_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// openCodeTools is the real `opencode acp` (harness opencode) under
// bwrap with the network on, on the fake model: it calls a tool of jam's
// MCP server, named jam by jamd, as jam_TOOL, without asking.
var openCodeTools = toolAgent{
	runtime: func(t *testing.T, model *fakemodel.Server) *wire.AgentRuntime {
		oc := realagent.NewOpenCode(t, model)
		return &wire.AgentRuntime{Harness: "opencode", Command: []string{oc.Binary, "--pure"}, Env: oc.SandboxEnv(),
			Model: realagent.FakeAltModelID, Permission: "allow", Sandbox: "bwrap", Network: "on", HandshakeTimeout: (3 * time.Minute).String()}
	},
	call: func(tool string, args map[string]any) fakemodel.Reply {
		b, _ := json.Marshal(args)
		return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "jam_" + tool, Arguments: b}}
	},
	step: 3 * time.Minute,
}

// TestToolsE2E_openCodeAgentsTalkUntilTheHopLimit: two owned OpenCode
// agents answer each other through jam's room_reply until the hop limit
// (3) stops the chain; see agentsTalkUntilTheHopLimit.
func TestToolsE2E_openCodeAgentsTalkUntilTheHopLimit(t *testing.T) {
	t.Parallel()
	agentsTalkUntilTheHopLimit(t, openCodeTools, 3)
}
