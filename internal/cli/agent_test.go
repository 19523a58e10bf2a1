package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
)

var alice = wire.Agent{Peer: "band/alice", Name: "alice", AgentID: "a-1", Handle: "alice-3f2", Account: "band", Bindings: []wire.Binding{}, State: "up"}

const aliceJSON = `{"peer":"band/alice","name":"alice","agent_id":"a-1","handle":"alice-3f2","account":"band","bindings":[],"queued":0,"unrouted":0,"state":"up"}`

func addAgent(t *testing.T, want wire.AgentAddRequest) backend {
	return backend{AgentAddFunc: func(_ context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
		assert.Equal(t, want, r)
		return alice, nil
	}}
}

func TestAgentAdd(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name:       "register",
			backend:    addAgent(t, wire.AgentAddRequest{Name: "alice", Description: "reviews code", Account: "band"}),
			inv:        invocation{args: []string{"agent", "add", "alice", "--description", "reviews code", "--account", "band"}},
			wantStdout: "added agent alice: handle alice-3f2, peer band/alice\n",
		},
		{
			name:     "import by key from stdin, json",
			backend:  addAgent(t, wire.AgentAddRequest{Name: "alice", Key: "band_a_k"}),
			inv:      invocation{args: []string{"agent", "add", "alice", "--key", "-", "--json"}, stdin: "band_a_k\n"},
			wantJSON: aliceJSON,
		},
		{
			name:       "no name",
			inv:        invocation{args: []string{"agent", "add"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam agent add --help)\n",
		},
		{
			name:       "empty key on stdin",
			inv:        invocation{args: []string{"agent", "add", "alice", "--key", "-"}},
			wantCode:   2,
			wantStderr: "jam: --key -: standard input holds no key\n",
		},
		{
			name: "unknown account",
			backend: backend{AgentAddFunc: func(context.Context, wire.AgentAddRequest) (wire.Agent, error) {
				return wire.Agent{}, fmt.Errorf("account work: %w", jam.ErrNotFound)
			}},
			inv:        invocation{args: []string{"agent", "add", "alice", "--account", "work"}},
			wantCode:   4,
			wantStderr: "jam: add agent alice: account work: not found (not_found)\n",
		},
		{
			name: "owned with env, model and handshake bound",
			backend: addAgent(t, wire.AgentAddRequest{Name: "alice", Runtime: &wire.AgentRuntime{Harness: "acp", Command: []string{"opencode", "acp"},
				Model: "fake/m", Placement: "shared", Permission: "reject", HandshakeTimeout: "1m30s",
				Env: []string{"A=1", "OPENCODE_CONFIG_CONTENT={\"x\":\"y=z\"}", "ANTHROPIC_API_KEY=sk-from-env", "EMPTY="}}}),
			inv: invocation{args: []string{"agent", "add", "alice", "--command", "opencode acp", "--model", "fake/m", "--handshake-timeout", "90s",
				"--env", "A=1", "--env", `OPENCODE_CONFIG_CONTENT={"x":"y=z"}`, "--env", "ANTHROPIC_API_KEY", "--env", "EMPTY="},
				env: map[string]string{"ANTHROPIC_API_KEY": "sk-from-env"}},
			wantStdout: "added agent alice: handle alice-3f2, peer band/alice\n",
		},
		{
			name:       "env NAME not set here",
			inv:        invocation{args: []string{"agent", "add", "alice", "--command", "x", "--env", "ANTHROPIC_API_KEY"}},
			wantCode:   2,
			wantStderr: "jam: --env ANTHROPIC_API_KEY: ANTHROPIC_API_KEY is not set in this environment (give --env ANTHROPIC_API_KEY=VALUE)\n",
		},
		{
			name:       "env without a command",
			inv:        invocation{args: []string{"agent", "add", "alice", "--env", "A=1"}},
			wantCode:   2,
			wantStderr: "jam: --env, --model, --handshake-timeout, --sandbox, --network, --read-only and --commit-turns are for owned agents: add --harness or --command\n",
		},
		{
			name: "owned, sandboxed without network, with a read-only path",
			backend: addAgent(t, wire.AgentAddRequest{Name: "alice", Runtime: &wire.AgentRuntime{Harness: "acp", Command: []string{"opencode", "acp"},
				Placement: "shared", Permission: "reject", Sandbox: "bwrap", Network: "off", ReadOnly: []string{"/srv/models", "/opt/tools"}}}),
			inv: invocation{args: []string{"agent", "add", "alice", "--command", "opencode acp", "--sandbox", "bwrap", "--network", "off",
				"--read-only", "/srv/models", "--read-only", "/opt/tools"}},
			wantStdout: "added agent alice: handle alice-3f2, peer band/alice\n",
		},
		{
			name:       "sandbox without a command",
			inv:        invocation{args: []string{"agent", "add", "alice", "--sandbox", "local"}},
			wantCode:   2,
			wantStderr: "jam: --env, --model, --handshake-timeout, --sandbox, --network, --read-only and --commit-turns are for owned agents: add --harness or --command\n",
		},
		{
			name: "a harness kind alone is owned, its command the daemon's default",
			backend: addAgent(t, wire.AgentAddRequest{Name: "alice", Runtime: &wire.AgentRuntime{Harness: "copilot",
				Model: "gpt-5", Placement: "shared", Permission: "allow"}}),
			inv:        invocation{args: []string{"agent", "add", "alice", "--harness", "copilot", "--model", "gpt-5", "--permission", "allow"}},
			wantStdout: "added agent alice: handle alice-3f2, peer band/alice\n",
		},
		{
			name: "a harness kind with a command of one's own",
			backend: addAgent(t, wire.AgentAddRequest{Name: "alice", Runtime: &wire.AgentRuntime{Harness: "opencode", Command: []string{"/opt/oc/opencode", "--pure"},
				Placement: "shared", Permission: "reject"}}),
			inv:        invocation{args: []string{"agent", "add", "alice", "--harness", "opencode", "--command", "/opt/oc/opencode --pure"}},
			wantStdout: "added agent alice: handle alice-3f2, peer band/alice\n",
		},
		{
			name:       "bad handshake timeout",
			inv:        invocation{args: []string{"agent", "add", "alice", "--command", "x", "--handshake-timeout", "soon"}},
			wantCode:   2,
			wantStderr: "jam: invalid argument \"soon\" for \"--handshake-timeout\" flag: must be a duration like \"30s\" or \"5m\" (see jam agent add --help)\n",
		},
		{
			name: "name taken",
			backend: backend{AgentAddFunc: func(context.Context, wire.AgentAddRequest) (wire.Agent, error) {
				return wire.Agent{}, fmt.Errorf("agent alice: %w", jam.ErrAlreadyExists)
			}},
			inv:        invocation{args: []string{"agent", "add", "alice"}},
			wantCode:   5,
			wantStderr: "jam: add agent alice: agent alice: already exists (already_exists)\n",
		},
	})
}

// TestAgentAdd_helpListsHarnessKinds: the help names every kind with the
// command it runs by default, from the one table the daemon uses.
func TestAgentAdd_helpListsHarnessKinds(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	code := cli.Main(t.Context(), []string{"agent", "add", "--help"}, &cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, cli.Deps{})
	require.Equal(t, 0, code, out.String())
	for _, k := range harness.Kinds {
		require.Contains(t, out.String(), k.Name, k.Name)
		if len(k.Command) > 0 {
			require.Contains(t, out.String(), k.Install, k.Name)
			require.Contains(t, out.String(), k.Name+" (runs "+k.Command[0]+")", "the flag's line names %s's default", k.Name)
		}
	}
	require.Contains(t, out.String(), "acp (needs --command)")
}

func TestAgentList(t *testing.T) {
	t.Parallel()
	bob := wire.Agent{Peer: "work/bob", Name: "bob", Handle: "bob", Account: "work", Queued: 12, Unrouted: 3, State: "reconnecting",
		Bindings: []wire.Binding{{ID: "bnd_1", Room: "r-1", Alias: "main"}, {ID: "bnd_2", Room: "r-2"}}}
	runCases(t, []cmdCase{
		{
			name:    "table",
			backend: backend{AgentsFunc: func(context.Context) ([]wire.Agent, error) { return []wire.Agent{alice, bob}, nil }},
			inv:     invocation{args: []string{"agent", "list"}},
			wantStdout: "" +
				"PEER        HANDLE     STATE         QUEUED  UNROUTED  BINDINGS\n" +
				"band/alice  alice-3f2  up            0       0         -\n" +
				"work/bob    bob        reconnecting  12      3         main=r-1,r-2\n",
		},
		{
			name: "owned agents get their runtime line, env names only",
			backend: backend{AgentsFunc: func(context.Context) ([]wire.Agent, error) {
				owned := alice
				owned.Runtime = &wire.AgentRuntimeStatus{Template: "tmpl_1", DesiredGeneration: 3, EffectiveGeneration: 2, PendingChange: "env.ANTHROPIC_API_KEY",
					Desired: wire.AgentRuntime{Harness: "acp", Command: []string{"claude-acp"}, Model: "sonnet", EnvNames: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}, HandshakeTimeout: "5m0s",
						Sandbox: "bwrap", Network: "off"}}
				return []wire.Agent{owned}, nil
			}},
			inv: invocation{args: []string{"agent", "list"}},
			wantStdout: "" +
				"PEER        HANDLE     STATE  QUEUED  UNROUTED  BINDINGS\n" +
				"band/alice  alice-3f2  up     0       0         -\n" +
				"owned band/alice: acp \"claude-acp\", model sonnet, env ANTHROPIC_API_KEY,ANTHROPIC_BASE_URL (values hidden), handshake 5m0s, sandbox bwrap (no network), generation 3 (effective 2; pending: env.ANTHROPIC_API_KEY)\n",
		},
		{
			name:       "none",
			backend:    backend{AgentsFunc: func(context.Context) ([]wire.Agent, error) { return nil, nil }},
			inv:        invocation{args: []string{"agent", "list"}},
			wantStdout: "no agents; add one with: jam agent add NAME\n",
		},
		{
			name:     "json",
			backend:  backend{AgentsFunc: func(context.Context) ([]wire.Agent, error) { return []wire.Agent{alice}, nil }},
			inv:      invocation{args: []string{"agent", "list", "--json"}},
			wantJSON: `{"agents":[` + aliceJSON + `]}`,
		},
		{
			name:     "json none",
			backend:  backend{AgentsFunc: func(context.Context) ([]wire.Agent, error) { return nil, nil }},
			inv:      invocation{args: []string{"agent", "list", "--json"}},
			wantJSON: `{"agents":[]}`,
		},
	})
}
