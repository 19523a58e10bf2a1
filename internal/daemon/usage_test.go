package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/pricing"
)

// TestUsage_byRoomShowsExactlyTheReportedTokens: an owned ACP agent (the
// demo agent) answers in two rooms, reporting the tokens each prompt asks
// for; jam usage --by room --json shows exactly those tokens per room,
// with an unknown cost (the agent reports no cost and no model, so the
// price table in the data directory cannot price it: not zero); jam usage
// --by agent sums both rooms; jam turn show --json carries the turn's
// usage.
func TestUsage_byRoomShowsExactlyTheReportedTokens(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, pricing.FileName),
		[]byte("[models.\"demo-*\"]\ninput = 1.00\noutput = 2.00\n"), 0o600))
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	tokens := map[string][2]int64{}
	var rooms []string
	for i, title := range []string{"alpha", "beta"} {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: title, Agents: []string{"demo"}})
		require.NoError(t, err)
		rooms = append(rooms, room.ID)
		tokens[room.ID] = [][2]int64{{1200, 345}, {7, 5}}[i]
	}
	for _, room := range rooms {
		tk := tokens[room]
		sent, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" count this [usage "+itoa(tk[0])+" "+itoa(tk[1])+"]", []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		waitDelivery(t, c, room, sent.ID, agent.AgentID, protocol.DeliveryProcessed)
	}

	var rep wire.UsageReport
	require.Eventually(t, func() bool {
		code, out := jamCLI(t, cfg.DataDir, "usage", "--by", "room", "--json")
		require.Equal(t, 0, code, out)
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		return rep.Total.Turns == 2
	}, 10*time.Second, 20*time.Millisecond, "both turns are recorded")
	require.Equal(t, wire.UsageByRoom, rep.By)
	require.Len(t, rep.Rows, 2)
	for _, row := range rep.Rows {
		tk, ok := tokens[row.Key]
		require.True(t, ok, "a row per room: %s", row.Key)
		require.Equal(t, wire.UsageSum{Turns: 1, InputTokens: tk[0], OutputTokens: tk[1], Unpriced: 1}, row.UsageSum, "room %s", row.Key)
	}
	require.Equal(t, wire.UsageSum{Turns: 2, InputTokens: 1207, OutputTokens: 350, Unpriced: 2}, rep.Total)

	code, out := jamCLI(t, cfg.DataDir, "usage")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `local/demo\s+demo\s+2\s+1207\s+350\s+0\s+0\s+unknown\n`, out)

	// A since after the turns keeps none.
	code, out = jamCLI(t, cfg.DataDir, "usage", "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--json")
	require.Equal(t, 0, code, out)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Empty(t, rep.Rows)

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 2)
	for _, s := range ss {
		ts, err := c.Turns(ctx, s.ID)
		require.NoError(t, err)
		require.Len(t, ts, 1)
		code, out := jamCLI(t, cfg.DataDir, "turn", "show", ts[0].ID, "--json")
		require.Equal(t, 0, code, out)
		var shown struct {
			Turn wire.Turn `json:"turn"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &shown), out)
		tk := tokens[s.Room]
		require.Equal(t, &wire.ExecutionUsage{InputTokens: tk[0], OutputTokens: tk[1]}, shown.Turn.Usage)
		require.Equal(t, shown.Turn.Usage, shown.Turn.Executions[0].Usage)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestUsage_badPriceTableStopsTheStart: a price table that does not parse
// stops jamd at start with the file and the mistake named, rather than
// costing turns with a table the person did not mean.
func TestUsage_badPriceTableStopsTheStart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, pricing.FileName), []byte("[models.\"gpt-5\"]\ninput = -1\noutput = 10\n"), 0o600))
	// Bounded, so that a daemon that started anyway stops and the test
	// fails instead of hanging.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err := daemon.Run(ctx, cfg, daemon.Streams{Out: &syncBuffer{}, Err: &syncBuffer{}})
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, `prices.toml: invalid argument: price table: model "gpt-5": input: -1 is not a price`)
}
