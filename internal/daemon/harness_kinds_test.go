package daemon_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
)

// TestAgentAdd_harnessKinds: an owned agent's harness may be any kind;
// without a command a kind runs its CLI from jamd's PATH, and when that
// is missing the add fails, before anything is registered, naming the
// harness and how to install its CLI; acp without a command is invalid.
// jam agent add --harness KIND alone makes the agent owned.
func TestAgentAdd_harnessKinds(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	c := r.client

	_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "plain", Runtime: &wire.AgentRuntime{Harness: "acp"}})
	requireCode(t, err, wire.CodeInvalidArgument)
	require.ErrorContains(t, err, "harness acp needs a command")
	for _, tc := range []struct{ kind, install string }{
		{"copilot", "npm install -g @github/copilot"},
		{"opencode", "npm install -g opencode-ai"},
	} {
		if _, err := exec.LookPath(tc.kind); err == nil {
			continue // installed here: nothing is missing
		}
		_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "no-" + tc.kind, Runtime: &wire.AgentRuntime{Harness: tc.kind}})
		requireCode(t, err, wire.CodeInvalidArgument, tc.kind)
		require.ErrorContains(t, err, `harness `+tc.kind+` runs "`+tc.kind+`", which is not found on jamd's PATH`, tc.kind)
		require.ErrorContains(t, err, tc.install, tc.kind)

		code, out := jamCLI(t, cfg.DataDir, "agent", "add", "cli-"+tc.kind, "--harness", tc.kind)
		require.Equal(t, int(cli.ExitUsage), code, out)
		require.Contains(t, out, tc.install)
	}
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	require.Empty(t, agents, "nothing was registered")

	// A command of one's own, for a named kind: kept as given (the
	// adapter adds the kind's own arguments when it starts it).
	a, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "oc", Runtime: &wire.AgentRuntime{Harness: "opencode", Command: []string{"/bin/sh"}}})
	require.NoError(t, err)
	require.Equal(t, "opencode", a.Runtime.Desired.Harness)
	require.Equal(t, []string{"/bin/sh"}, a.Runtime.Desired.Command)
	// And the plain acp kind with its command, as every existing agent.
	a, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "old", Runtime: &wire.AgentRuntime{Command: []string{"/bin/sh", "-c", "x"}}})
	require.NoError(t, err)
	require.Equal(t, "acp", a.Runtime.Desired.Harness)
	require.Equal(t, []string{"/bin/sh", "-c", "x"}, a.Runtime.Desired.Command)
}
