package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/executor/bwrap"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// TestOwned_copilotEditsItsWorktree: an owned agent of the copilot kind,
// its command the real Copilot CLI with no protocol argument (the kind
// adds --acp --no-auto-update), in jam's sandbox without network, on the
// fake model with the person's own key. Mentioned in a room, it runs a
// bash call the allow policy lets through, which writes a file in the
// room's worktree; the reply reaches the room and the message settles.
func TestOwned_copilotEditsItsWorktree(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cp := realagent.NewCopilot(t, model)
	args, _ := json.Marshal(map[string]string{"command": "echo made > made.txt", "description": "make a file"})
	model.Push(fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "bash", Arguments: args}})

	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	defer func() {
		if t.Failed() {
			t.Log(r.log.String())
		}
	}()
	rt := &wire.AgentRuntime{Harness: "copilot", Command: cp.SandboxCommand(), Env: cp.SandboxEnv(), Permission: "allow",
		Repo: gitRepo(t, "app"), Sandbox: "bwrap", Network: "off", ReadOnly: []string{cp.Cache}}
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Logf("running copilot unsandboxed: %v", err)
		rt.Command, rt.Env, rt.Sandbox, rt.Network, rt.ReadOnly = cp.Command(), cp.Env, "local", "", nil
	}
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "copilot", Runtime: rt})
	require.NoError(t, err)
	require.Equal(t, "copilot", agent.Runtime.Desired.Harness)
	require.Equal(t, rt.Command, agent.Runtime.Desired.Command, "the command as given: the kind adds its arguments at launch")
	require.Contains(t, agent.Runtime.Desired.EnvNames, "COPILOT_PROVIDER_API_KEY")
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "app", Agents: []string{"copilot"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" make a file", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	var reply string
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, room.ID, "", 50)
		require.NoError(t, err)
		processed := false
		for _, m := range page.Messages {
			if m.SenderID == agent.AgentID {
				reply = m.Content
			}
			if m.ID == sent.ID && m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
				processed = true
			}
		}
		return processed
	}, 4*time.Minute, 50*time.Millisecond, "settled once answered")
	require.True(t, strings.HasSuffix(reply, "FAKE-DONE after tool"), "the model's answer after the tool is the reply: %q", reply)

	wts, err := c.Worktrees(ctx)
	require.NoError(t, err)
	require.Len(t, wts, 1)
	b, err := os.ReadFile(filepath.Join(wts[0].Path, "made.txt"))
	require.NoError(t, err, "the allowed bash call wrote in the room's worktree")
	require.Equal(t, "made\n", string(b))
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	require.NotEmpty(t, ss[0].ProviderThread, "Copilot's own session id is recorded")
}
