package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// TestTurnOutput_keptAcrossARestart: a turn's output is stored as it is
// published, so after jamd restarts on the same data directory the
// control API still serves it, the same as before the restart.
func TestTurnOutput_keptAcrossARestart(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	ctx := t.Context()
	c := o.r.client
	_, err := o.owner.SendChatMessage(ctx, o.room.ID, "@"+o.agent.Handle+" keep this for later", []protocol.Mention{{ID: o.agent.AgentID}})
	require.NoError(t, err)

	var turn wire.Turn
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		turns, err := c.Turns(ctx, ss[0].ID)
		require.NoError(t, err)
		if len(turns) != 1 {
			return false
		}
		turn = turns[0]
		return turn.State == "succeeded"
	}, 60*time.Second, 20*time.Millisecond, "the turn ends")

	before, err := c.TurnOutput(ctx, turn.ID)
	require.NoError(t, err)
	require.True(t, before.Kept)
	require.Positive(t, before.Batches)
	var text strings.Builder
	tools := 0
	for _, u := range before.Updates {
		switch u.Kind {
		case "text":
			text.WriteString(u.Text)
		case "tool_call", "tool_call_update", "tool_call_end":
			tools++
		}
	}
	require.Contains(t, text.String(), "keep this for later")
	require.GreaterOrEqual(t, tools, 2, "the note's tool call and its completion")

	err, _ = o.r.stop()
	require.NoError(t, err)
	r2 := start(t, o.cfg)
	r2.waitReady(t)
	after, err := r2.client.TurnOutput(ctx, turn.ID)
	require.NoError(t, err)
	require.Equal(t, before, after, "the output outlives the daemon that ran the turn")
}
