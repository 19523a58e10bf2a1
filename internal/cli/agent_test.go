package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
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
