package daemon_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/demoagent"
)

// TestWebUI_approvals: the demo agent under permission ask asks before
// each note. The room shows the question as a card above the composer
// (and the header counts it); Allow lets the note be written, Deny
// refuses it, an unanswered card goes by itself at the timeout, and one
// answered elsewhere goes too. The
// room's attention events read as messages, and the turns' output pages
// say each answer.
func TestWebUI_approvals(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	// Long enough for a click, and the steps that look at an unanswered
	// card, to land first on a loaded machine (at 8 s the timeout's
	// resolution was sometimes drawn before the question was looked at);
	// short enough to wait out.
	cfg.ApprovalTimeout = 20 * time.Second
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "ask"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Asks", Agents: []string{"demo"}})
	require.NoError(t, err)

	p := openBrowser(t)
	p.do(chromedp.EmulateViewport(1280, 800))
	p.signIn(signInLink(t, r))
	p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/rooms/" + room.ID))
	p.waitFor("the room", `document.querySelector('#compose') !== null && document.querySelector('.room-head h1').textContent === 'Asks'`)
	p.waitFor("no card yet", `document.querySelector('.asks').hidden && document.querySelector('#approvals').hidden`)

	card := func(id string) string { return `.asks .ask[data-approval=` + js(id) + `]` }
	button := func(id, decision string) string {
		return `.asks button[data-approval=` + js(id) + `][data-decision=` + js(decision) + `]`
	}
	// ask posts a prompt and waits for its question's card.
	ask := func(word string) wire.Approval {
		_, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" note "+word, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		a := waitApproval(t, c)
		p.waitFor("the approval's card", `document.querySelector(`+js(card(a.ID))+`) !== null`)
		return a
	}
	var turns []wire.Turn
	for i, decision := range []string{"allow", "deny"} {
		a := ask(decision)
		text := p.eval(`document.querySelector(` + js(card(a.ID)) + `).textContent`)
		require.Contains(t, text, "@"+agent.Handle+" asks to "+a.Title)
		require.Regexp(t, `\d+ s left`, text, "the time left")
		require.Equal(t, "Allow: @"+agent.Handle+" to "+a.Title, p.eval(`document.querySelector(`+js(button(a.ID, "allow"))+`).getAttribute('aria-label')`))
		require.Equal(t, "Always allow,Deny", p.eval(`[...document.querySelectorAll(`+js(card(a.ID)+` button`)+`)].slice(1).map((b) => b.textContent).join()`))
		p.waitFor("the header's count", `(document.querySelector('#approvals a[data-approvals-link]') || {textContent: ''}).textContent === '1 approval'`)
		require.Equal(t, "#/rooms/"+room.ID, p.eval(`document.querySelector('#approvals a').getAttribute('href')`))

		p.clickNow(button(a.ID, decision))
		p.waitFor("the card gone", `document.querySelector(`+js(card(a.ID))+`) === null && document.querySelector('.asks').hidden && document.querySelector('#approvals').hidden`)
		require.Equal(t, "", p.eval(`document.querySelector('#compose-error').textContent`))
		turns = append(turns, nthTurnEnds(t, c, i+1))
		require.Equal(t, 1, demoNotes(t, c), "%s: one note (written when allowed)", decision)
		ups := approvalUpdates(t, c, turns[i].ID)
		require.Len(t, ups, 1)
		require.Equal(t, decision, ups[0].Status)
	}

	// Unanswered: the card shows at both widths, then goes by itself.
	a := ask("timeout")
	p.waitFor("the question in the timeline, at its end above the card", `(() => { const w = document.querySelector('.timeline-wrap'); const last = [...document.querySelectorAll('.timeline .msg')].pop(); return last.dataset.type === 'attention' && last.textContent.includes(`+js(a.ID)+`) && w.scrollHeight - w.scrollTop - w.clientHeight < 2; })()`)
	p.atWidths("webui-approval")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	require.Equal(t, "true", p.eval(`String(document.documentElement.scrollWidth <= innerWidth && document.querySelector("#signout").getBoundingClientRect().right <= innerWidth)`), "the header with the count fits a phone")
	p.do(chromedp.EmulateViewport(1280, 800))
	p.waitFor("the card gone at the timeout", `document.querySelector(`+js(card(a.ID))+`) === null && document.querySelector('.asks').hidden`)
	turns = append(turns, nthTurnEnds(t, c, 3))
	require.Equal(t, 1, demoNotes(t, c), "timed out: no second note")

	// Answered elsewhere (jam approve): the card goes too.
	cli := ask("elsewhere")
	_, err = c.Approve(ctx, cli.ID, wire.ApproveRequest{Decision: "always"})
	require.NoError(t, err)
	p.waitFor("the card gone after the answer from elsewhere", `document.querySelector(`+js(card(cli.ID))+`) === null && document.querySelector('.asks').hidden && document.querySelector('#approvals').hidden`)
	nthTurnEnds(t, c, 4)
	require.Equal(t, 2, demoNotes(t, c), "always allowed: the second note")

	// Each question and its answer are attention events in the timeline,
	// drawn as messages.
	p.waitFor("the eight attention events", `document.querySelectorAll('.timeline .msg[data-type="attention"]').length === 8`)
	events := p.eval(`[...document.querySelectorAll('.timeline .msg[data-type="attention"] .msg-body')].map((e) => e.textContent).join('\n')`)
	require.Contains(t, events, a.ID)
	for _, prefix := range []string{"allow: ", "deny: ", "timeout: ", "always: "} {
		require.Contains(t, events, prefix+"@"+agent.Handle+" to "+a.Title)
	}
	p.fullShot("webui-approval-timeline")

	// The turns' output pages say each answer.
	me, err := owner.Profile(ctx)
	require.NoError(t, err)
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	session := ss[0].ID
	for i, decision := range []string{"allow", "deny", "timeout"} {
		by := me.Handle
		if decision == "timeout" {
			by = "jam"
		}
		p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/sessions/" + session + "/turns/" + turns[i].ID))
		p.waitFor("the turn's approval line", `(document.querySelector('.output .out-approval') || {}).dataset?.decision === `+js(decision))
		line := p.eval(`document.querySelector('.output .out-approval').textContent`)
		require.Equal(t, "Approval: "+a.Title+" — "+decision+" (by "+by+")", line)
		if decision == "allow" {
			p.atWidths("webui-approval-output")
		}
	}
	require.Contains(t, a.Title, demoagent.NotesFile)
}
