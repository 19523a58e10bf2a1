package daemon_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// TestUsage_openCodeReportsTheFakeModelsTokens: the real `opencode acp`
// on the fake model answers in two rooms; jam usage --by room --json
// shows, per room, exactly the tokens the fake model reported for that
// room's request (its words in and out, fakemodel's count).
func TestUsage_openCodeReportsTheFakeModelsTokens(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	oc := realagent.NewOpenCode(t, model)
	// Replies of the same length: whichever room gets which, each
	// reports three output tokens.
	model.Push(fakemodel.Reply{Text: []string{"Parser ", "fixed ", "here."}})
	model.Push(fakemodel.Reply{Text: []string{"Docs ", "written ", "here."}})

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
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "opencode", Runtime: openCodeRuntime(t, oc, "")})
	require.NoError(t, err)
	asks := map[string]string{} // room -> its request
	for i, title := range []string{"parser", "docs"} {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: title, Agents: []string{"opencode"}})
		require.NoError(t, err)
		asks[room.ID] = []string{"fix the parser", "write the docs"}[i]
		sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" "+asks[room.ID], []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryProcessed)
	}

	// What the fake model reported for each room's request.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	turns, err := model.WaitRequests(wctx, 2, fakemodel.Turn)
	require.NoError(t, err)
	require.Len(t, turns, 2, "one model request per turn")
	want := map[string]wire.UsageSum{}
	for room, ask := range asks {
		var in int64
		found := 0
		for _, req := range turns {
			if !strings.Contains(req.LastUser(), ask) {
				continue
			}
			found++
			for _, m := range req.Messages {
				in += int64(len(strings.Fields(string(m.Content))))
			}
		}
		require.Equal(t, 1, found, "the request of room %s", room)
		want[room] = wire.UsageSum{Turns: 1, InputTokens: in, OutputTokens: 3, Unpriced: 1}
	}

	var rep wire.UsageReport
	require.Eventually(t, func() bool {
		code, out := jamCLI(t, cfg.DataDir, "usage", "--by", "room", "--json")
		require.Equal(t, 0, code, out)
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		return rep.Total.Turns == 2
	}, 30*time.Second, 20*time.Millisecond, "both turns are recorded")
	got := map[string]wire.UsageSum{}
	for _, row := range rep.Rows {
		got[row.Key] = row.UsageSum
	}
	require.Equal(t, want, got)
}
