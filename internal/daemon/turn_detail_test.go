package daemon_test

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// TestOwned_turnDetailSaysWhyItFailed: an owned agent whose command no
// longer exists (agent add checks it, so it is removed after) fails its
// turn at once, and the turn says why in words (naming the command),
// through the API and the turn's event.
func TestOwned_turnDetailSaysWhyItFailed(t *testing.T) {
	t.Parallel()
	r := start(t, testConfig(t))
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	cmd := filepath.Join(t.TempDir(), "jam-no-such-agent-7f3")
	require.NoError(t, os.WriteFile(cmd, []byte("#!/bin/sh\n"), 0o755))
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "ghost", Runtime: &wire.AgentRuntime{
		Command: []string{cmd, "acp"}, Permission: "allow"}})
	require.NoError(t, err)
	require.NoError(t, os.Remove(cmd))
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "ghost", Agents: []string{"ghost"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	tr := endedTurn(t, c)
	require.Equal(t, "failed", tr.State)
	require.Equal(t, "harness_error", tr.Reason)
	require.Contains(t, tr.Detail, "jam-no-such-agent-7f3")
	require.Contains(t, tr.Detail, "does not exist")
	require.Empty(t, tr.Executions, "no process started, so no attempt")
}

// TestOwned_turnDetailNeverShowsTheEnv: an agent that answers its
// handshake with an error holding a template variable's value fails the
// turn; the detail says why with the value hidden.
func TestOwned_turnDetailNeverShowsTheEnv(t *testing.T) {
	t.Parallel()
	secret := "s3cret-" + rand.Text()
	r := start(t, testConfig(t))
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	// Answers the first request (initialize) with an error quoting the
	// variable, then waits for its stdin to close.
	script := `read -r line; id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/'); ` +
		`printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"key %s rejected"}}\n' "$id" "$JAM_TEST_SECRET"; cat >/dev/null`
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "leaky", Runtime: &wire.AgentRuntime{
		Command: []string{"/bin/sh", "-c", script}, Permission: "allow", Env: []string{"JAM_TEST_SECRET=" + secret}}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "leaky", Agents: []string{"leaky"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	tr := endedTurn(t, c)
	require.Equal(t, "failed", tr.State)
	require.Contains(t, tr.Detail, "initialize")
	require.Contains(t, tr.Detail, "key [redacted] rejected")
	b, err := json.Marshal(tr)
	require.NoError(t, err)
	require.NotContains(t, string(b), secret)
}

// endedTurn waits for the first turn of the daemon's only session to end
// and returns it as GET /v1/turns/{turn} shows it.
func endedTurn(t *testing.T, c *apiclient.Client) wire.Turn {
	t.Helper()
	var got wire.Turn
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(t.Context())
		require.NoError(t, err)
		if len(ss) == 0 {
			return false
		}
		ts, err := c.Turns(t.Context(), ss[0].ID)
		require.NoError(t, err)
		if len(ts) == 0 || (ts[0].State != "failed" && ts[0].State != "succeeded" && ts[0].State != "interrupted" && ts[0].State != "cancelled") {
			return false
		}
		got, err = c.Turn(t.Context(), ts[0].ID)
		require.NoError(t, err)
		return true
	}, 60*time.Second, 20*time.Millisecond, "the turn ends")
	return got
}
