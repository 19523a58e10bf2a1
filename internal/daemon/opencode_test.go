package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
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
	// The template's environment goes on top of jamd's (here the test
	// process's): it replaces everything that points opencode anywhere
	// (HOME, the XDG directories, its configuration, npm's registry), so
	// the rest of jamd's environment is harmless, and the traffic stays on
	// loopback (in a network namespace of its own when possible). The
	// model is not the configuration's default: jam sets it per session.
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "opencode", Runtime: &wire.AgentRuntime{Command: oc.Command(), Env: oc.Env,
		Model: realagent.FakeAltModelID, Permission: "allow"}})
	require.NoError(t, err)
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
