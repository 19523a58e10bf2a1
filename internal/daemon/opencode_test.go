package daemon_test

import (
	"context"
	"os"
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

// init, not TestMain: an agent confined to a network namespace reaches
// the fake model through this test binary, started as a bridge, and the
// bridge must take over before anything else runs.
func init() { realagent.RunBridgeIfAsked() }

// TestOwned_openCodeAnswersInTheRoom: an owned agent whose command is the
// real `opencode acp`, on the fake model. A person mentions it in a room;
// while the model holds its answer the message stays unsettled and the
// room has no reply; once the model answers, the reply reaches the room
// and only then is the message processed.
func TestOwned_openCodeAnswersInTheRoom(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	oc := realagent.NewOpenCode(t, model)
	gate := make(chan struct{})
	model.Push(fakemodel.Reply{Text: []string{"The parser ", "is fixed."}, Hold: gate})

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
	// The agent runs in jam's sandbox (bwrap) with the network cut: its
	// home is the sandbox's own, the template's environment points
	// opencode at the fake model and turns off what would reach out
	// (configuration, npm's registry), and the fake model is reached
	// through realagent's bridge inside the sandbox's network namespace.
	// Where bubblewrap cannot run (and JAM_REQUIRE_BWRAP is not 1) it runs
	// unsandboxed, in a network namespace of its own when possible. The
	// model is not the configuration's default: jam sets it per session.
	rt := openCodeRuntime(t, oc, "")
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "opencode", Runtime: rt})
	require.NoError(t, err)
	require.Equal(t, rt.Sandbox, agent.Runtime.Desired.Sandbox)
	require.Contains(t, agent.Runtime.Desired.EnvNames, "OPENCODE_CONFIG_CONTENT")
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "parser", Agents: []string{"opencode"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" fix the parser", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	// The turn reaches the model, which holds its answer.
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	turns, err := model.WaitRequests(wctx, 1, fakemodel.Turn)
	require.NoError(t, err, "opencode asks the model")
	require.Contains(t, turns[0].LastUser(), "fix the parser")
	require.Equal(t, realagent.AltModel, turns[0].Model, "the template's model")

	state := func() (reply string, processed bool) {
		page, err := owner.ChatMessages(ctx, room.ID, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.SenderID == agent.AgentID {
				reply = m.Content
			}
			if m.ID == sent.ID && m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
				processed = true
			}
		}
		return reply, processed
	}
	reply, processed := state()
	require.Empty(t, reply, "no reply before the model answers")
	require.False(t, processed, "not settled before the model answers")

	close(gate)
	require.Eventually(t, func() bool {
		reply, processed = state()
		return processed
	}, 3*time.Minute, 50*time.Millisecond, "settled once answered")
	// The reply addresses the person who asked, then gives the answer.
	require.True(t, strings.HasSuffix(reply, " The parser is fixed."), "the model's answer is the reply, posted before the settlement: %q", reply)

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	require.True(t, strings.HasPrefix(ss[0].ProviderThread, "ses_"), "opencode's own session id is recorded: %q", ss[0].ProviderThread)
	// The turn succeeds right after it settles.
	require.Eventually(t, func() bool {
		ts, err := c.Turns(ctx, ss[0].ID)
		require.NoError(t, err)
		require.Len(t, ts, 1)
		return ts[0].State == "succeeded"
	}, 30*time.Second, 20*time.Millisecond, "the turn succeeds")
}

// openCodeRuntime is the runtime of an owned `opencode acp` on the fake
// model (its alternative model, set per session), permission allow, on
// repo ("" for none): under jam's sandbox (bwrap) with the network cut,
// the fake model reached through realagent's bridge; where bubblewrap
// cannot run (and JAM_REQUIRE_BWRAP is not 1), unsandboxed.
func openCodeRuntime(t *testing.T, oc *realagent.OpenCode, repo string) *wire.AgentRuntime {
	t.Helper()
	rt := &wire.AgentRuntime{Command: oc.SandboxCommand(), Env: oc.SandboxEnv(), Model: realagent.FakeAltModelID, Permission: "allow",
		Sandbox: "bwrap", Network: "off", Repo: repo}
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Logf("running opencode unsandboxed: %v", err)
		rt = &wire.AgentRuntime{Command: oc.Command(), Env: oc.Env, Model: realagent.FakeAltModelID, Permission: "allow", Sandbox: "local", Repo: repo}
	}
	return rt
}
