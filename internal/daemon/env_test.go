package daemon_test

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// TestOwned_envIsSealedAndReachesTheAgent: an owned agent's environment
// variable reaches its process on top of jamd's environment, while every
// read (the add's answer, the agent list, a configuration change) shows
// only its name, and neither the store's files nor the daemon's log hold
// the value.
func TestOwned_envIsSealedAndReachesTheAgent(t *testing.T) {
	t.Parallel()
	secret, changed := "s3cret-"+rand.Text(), "ch4nged-"+rand.Text()
	cfg := testConfig(t)
	sqliteOnly(t, cfg)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	out := t.TempDir()
	// The agent writes what it got, then runs the demo agent.
	script := `printf '%s|%s' "$JAM_TEST_SECRET" "$PATH" > "$2/env.out"; ` + demoAgentEnv + `="$1" exec "$0" -test.run='^$'`
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{
		// Local: the agent writes to a directory of the test's.
		Command: []string{"/bin/sh", "-c", script, os.Args[0], t.TempDir(), out}, Permission: "allow", Sandbox: "local",
		Env: []string{"JAM_TEST_SECRET=" + secret, "JAM_TEST_OTHER=x"}, HandshakeTimeout: "45s"}})
	require.NoError(t, err)
	require.NotNil(t, agent.Runtime)
	require.Equal(t, []string{"JAM_TEST_SECRET", "JAM_TEST_OTHER"}, agent.Runtime.Desired.EnvNames)
	require.Empty(t, agent.Runtime.Desired.Env, "values are not read back")
	require.Equal(t, "45s", agent.Runtime.Desired.HandshakeTimeout)
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	b, err := json.Marshal(agents)
	require.NoError(t, err)
	require.NotContains(t, string(b), secret)
	require.Contains(t, string(b), `"env_names":["JAM_TEST_SECRET","JAM_TEST_OTHER"]`)

	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "env", Agents: []string{"demo"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := os.ReadFile(filepath.Join(out, "env.out"))
		return err == nil && string(got) == secret+"|"+os.Getenv("PATH")
	}, 60*time.Second, 20*time.Millisecond, "the agent got the template's variable and jamd's PATH")
	require.Eventually(t, func() bool {
		agents, err := c.Agents(ctx)
		require.NoError(t, err)
		return agents[0].Runtime.EffectiveGeneration == 1
	}, 60*time.Second, 20*time.Millisecond, "the process runs the configuration")

	st, err := c.AgentConfig(ctx, "demo", wire.AgentConfigRequest{Set: map[string]string{"env.JAM_TEST_SECRET": changed, "env.JAM_TEST_OTHER": "", "handshake_timeout": "0"}})
	require.NoError(t, err)
	require.Contains(t, st.PendingChange, "env.JAM_TEST_OTHER")
	require.Contains(t, st.PendingChange, "env.JAM_TEST_SECRET")
	require.NotContains(t, st.PendingChange, changed, "a changed value is not shown")
	require.Equal(t, []string{"JAM_TEST_SECRET"}, st.Desired.EnvNames, "an empty value unsets")
	require.Empty(t, st.Desired.HandshakeTimeout, "0 is the default")
	require.Equal(t, []string{"JAM_TEST_SECRET", "JAM_TEST_OTHER"}, st.Effective.EnvNames)

	for _, set := range []map[string]string{{"env.": "x"}, {"env.A\x00": "x"}, {"env.A": "x\x00y"}, {"handshake_timeout": "2h"}} {
		_, err := c.AgentConfig(ctx, "demo", wire.AgentConfigRequest{Set: set})
		requireCode(t, err, wire.CodeInvalidArgument, "%q", set)
	}
	_, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "bad", Runtime: &wire.AgentRuntime{Command: []string{"true"}, Env: []string{"NOVALUE"}}})
	requireCode(t, err, wire.CodeInvalidArgument)

	// The store's files and the daemon's log hold neither value.
	_, _ = r.stop()
	entries, err := os.ReadDir(cfg.DataDir)
	require.NoError(t, err)
	read := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "jam.db") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, e.Name()))
		require.NoError(t, err)
		require.NotContains(t, string(b), secret, e.Name())
		require.NotContains(t, string(b), changed, e.Name())
		read++
	}
	require.NotZero(t, read, "the store's files were read")
	require.NotContains(t, r.log.String(), secret)
	require.NotContains(t, r.log.String(), changed)
}

func requireCode(t *testing.T, err error, code wire.Code, msgAndArgs ...any) {
	t.Helper()
	var apiErr *apiclient.Error
	require.ErrorAs(t, err, &apiErr, msgAndArgs...)
	require.Equal(t, code, apiErr.Code, msgAndArgs...)
}

// TestOwned_modelTheAgentDoesNotOfferFailsTheTurn: the demo agent offers
// no model choice; an owned agent configured with a model does not answer
// on whatever model it has: the turn fails with harness_error, the message
// stays unsettled, and the log says which model and why.
func TestOwned_modelTheAgentDoesNotOfferFailsTheTurn(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Model: "big-model-9", Permission: "allow"}})
	require.NoError(t, err)
	require.Equal(t, "big-model-9", agent.Runtime.Desired.Model)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "model", Agents: []string{"demo"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	var turn wire.Turn
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		ts, err := c.Turns(ctx, ss[0].ID)
		require.NoError(t, err)
		if len(ts) == 0 || !jamTerminal(ts[0].State) {
			return false
		}
		turn = ts[0]
		return true
	}, 60*time.Second, 20*time.Millisecond, "the turn ends")
	require.Equal(t, "failed", turn.State)
	require.Equal(t, "harness_error", turn.Reason)
	require.Contains(t, r.log.String(), `model \"big-model-9\" is configured, but the agent offers no model selection`)
	page, err := owner.ChatMessages(ctx, room.ID, "", 50)
	require.NoError(t, err)
	for _, m := range page.Messages {
		require.NotEqual(t, agent.AgentID, m.SenderID, "no answer in the room")
		if m.ID == sent.ID {
			require.NotEqual(t, protocol.DeliveryProcessed, m.Metadata.DeliveryStatus[agent.AgentID].Status, "not settled")
		}
	}
}

func jamTerminal(state string) bool {
	switch state {
	case "succeeded", "failed", "cancelled", "interrupted":
		return true
	}
	return false
}

// TestOwned_envNamesAConnection: a template's variable whose value is
// connection:PROVIDER/NAME reaches the agent's process as the
// connection's current secret, which neither the agent's configuration
// nor the daemon's log ever shows.
func TestOwned_envNamesAConnection(t *testing.T) {
	t.Parallel()
	secret := "sk-ant-" + rand.Text()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	_, err := c.ConnectionAdd(ctx, wire.ConnectionAddRequest{Provider: "anthropic", Name: "work", Secret: secret})
	require.NoError(t, err)
	out := t.TempDir()
	script := `printf '%s' "$ANTHROPIC_API_KEY" > "$2/env.out"; ` + demoAgentEnv + `="$1" exec "$0" -test.run='^$'`
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{
		Command: []string{"/bin/sh", "-c", script, os.Args[0], t.TempDir(), out}, Permission: "allow", Sandbox: "local",
		Env: []string{"ANTHROPIC_API_KEY=connection:anthropic/work"}}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "env", Agents: []string{"demo"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := os.ReadFile(filepath.Join(out, "env.out"))
		return err == nil && string(got) == secret
	}, 60*time.Second, 20*time.Millisecond, "the agent got the connection's secret")
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	b, err := json.Marshal(agents)
	require.NoError(t, err)
	require.NotContains(t, string(b), secret)
	_, _ = r.stop()
	require.NotContains(t, r.log.String(), secret)
}
