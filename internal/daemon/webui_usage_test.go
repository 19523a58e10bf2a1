package daemon_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// TestWebUI_usage: what an owned agent's turn used shows in the web UI:
// the turn's tokens and cost on its session page, the agent's sum on the
// agents page, and the room's sum in the room's header.
func TestWebUI_usage(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Costly work", Agents: []string{"demo"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" count this [usage 1200 345]", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryProcessed)

	p := openBrowser(t)
	p.signIn(signInLink(t, r))
	p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/rooms/" + room.ID))
	p.waitFor("the room's usage", `(document.querySelector('[data-role="room-usage"]:not([hidden])') || {}).textContent?.includes('1,200 in')`)
	require.Equal(t, "1 turn · 1,200 in · 345 out · cost unknown", p.eval(`document.querySelector('[data-role="room-usage"]').textContent`))
	p.screenshot("webui-room-usage")

	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="agents"]`)))
	p.waitFor("the agent's usage", `(document.querySelector('[data-usage="local/demo"]') || {}).textContent?.includes('1,200 in')`)
	require.Equal(t, "1 turn · 1,200 in · 345 out · cost unknown", p.eval(`document.querySelector('[data-usage="local/demo"]').textContent`))
	p.screenshot("webui-agents-usage")

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/sessions/" + ss[0].ID))
	p.waitFor("the turn's usage", `(document.querySelector('[data-role="turn-usage"]:not([hidden])') || {}).textContent?.includes('1,200 input')`)
	require.Equal(t, "Usage: 1,200 input · 345 output · 0 cached · 0 reasoning tokens · cost unknown", p.eval(`document.querySelector('[data-role="turn-usage"]').textContent`))
	p.do(chromedp.EmulateViewport(1280, 1400))
	p.screenshot("webui-turn-usage")
}
