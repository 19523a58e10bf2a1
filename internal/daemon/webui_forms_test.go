package daemon_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// uiDaemon starts a daemon with the web UI and a signed-in browser at
// desktop width.
func uiDaemon(t *testing.T) (*running, *page) {
	t.Helper()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	r.waitReady(t)
	p := openBrowser(t)
	p.do(chromedp.EmulateViewport(1280, 800))
	p.signIn(signInLink(t, r))
	return r, p
}

// typeInto replaces an input's value as typing would.
func (p *page) typeInto(sel, text string) {
	p.t.Helper()
	p.eval(`(() => { const el = document.querySelector(` + js(sel) + `); el.value = ''; el.focus(); return ''; })()`)
	p.do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// clickNow clicks the element sel selects at once, in the page: for
// elements the page draws again on live events, which a click from
// outside (find the node, then click it) can miss.
func (p *page) clickNow(sel string) {
	p.t.Helper()
	require.Equal(p.t, "clicked", p.eval(`(() => { const el = document.querySelector(`+js(sel)+`); if (!el) return 'missing'; el.click(); return 'clicked'; })()`), sel)
}

// choose picks an option of a select as a person would.
func (p *page) choose(sel, value string) {
	p.t.Helper()
	require.Equal(p.t, value, p.eval(`(() => { const el = document.querySelector(`+js(sel)+`); el.value = `+js(value)+`; el.dispatchEvent(new Event('change', {bubbles: true})); return el.value; })()`))
}

// TestWebUI_createRoom: the rooms page's New room form creates a room
// with the agents ticked and opens it; a refused create says why in words.
func TestWebUI_createRoom(t *testing.T) {
	t.Parallel()
	r, p := uiDaemon(t)
	ctx := t.Context()
	c := r.client
	coder, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	_, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "reviewer"})
	require.NoError(t, err)

	p.waitFor("the rooms page", `document.querySelector('button[data-action="new-room"]') !== null`)
	p.clickNow(`button[data-action="new-room"]`)
	p.waitFor("the form with the agents", `!document.querySelector('#new-room').hidden && document.querySelectorAll('#new-room input[name=agents]').length === 2 && document.activeElement.id === 'room-title'`)
	// No title: the form says so and sends nothing.
	p.clickNow(`#new-room button[type=submit]`)
	p.waitFor("the missing title", `document.querySelector('[data-role="new-room-error"]').textContent.includes('title')`)

	p.typeInto(`#room-title`, "Launch plan")
	p.clickNow(`#new-room input[value="local/coder"]`)
	p.fullShot("webui-new-room")
	p.clickNow(`#new-room button[type=submit]`)
	p.waitFor("the new room", `location.hash.startsWith('#/rooms/') && document.querySelector('#compose') !== null && document.querySelector('.room-head h1').textContent === 'Launch plan'`)
	p.waitFor("coder in it", `document.querySelector('[data-participant=`+js(coder.AgentID)+`]') !== null`)

	rooms, err := c.Rooms(ctx, "")
	require.NoError(t, err)
	i := slices.IndexFunc(rooms, func(rm wire.Room) bool { return rm.Title == "Launch plan" })
	require.GreaterOrEqual(t, i, 0, "the room exists: %+v", rooms)
	require.Equal(t, "#/rooms/"+rooms[i].ID, p.eval(`location.hash`))
	ps, err := c.RoomParticipants(ctx, rooms[i].ID, "")
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(ps, func(x wire.Participant) bool { return x.ID == coder.AgentID }), "coder is a participant")
	require.False(t, slices.ContainsFunc(ps, func(x wire.Participant) bool { return x.Handle == "owner/reviewer" }), "reviewer was not ticked")
	p.atWidths("webui-room-created")

	// A blank message: the composer says so.
	p.typeInto(`#compose`, "   ")
	p.clickNow(`.composer button[type=submit]`)
	p.waitFor("the blank refusal", `document.querySelector('#compose-error').textContent === 'Write a message first.'`)

	// A message that mentions nobody: refused, and said in words.
	p.typeInto(`#compose`, "no mention here")
	p.clickNow(`.composer button[type=submit]`)
	p.waitFor("the refusal", `document.querySelector('#compose-error').textContent !== ''`)
	refusal := p.eval(`document.querySelector('#compose-error').textContent`)
	require.Contains(t, refusal, "Mention someone with @")
	require.NotContains(t, refusal, rooms[i].ID, "no room id in the sentence")
	require.NotContains(t, refusal, "invalid argument")
}

// TestWebUI_addAgentAndSettings: the agents page's Add agent form adds an
// attached agent and an owned one; an owned agent's Settings change its
// configuration; a taken name is refused in words; and a room's people
// panel adds an agent to the room.
func TestWebUI_addAgentAndSettings(t *testing.T) {
	t.Parallel()
	r, p := uiDaemon(t)
	ctx := t.Context()
	c := r.client
	script := filepath.Join(t.TempDir(), "my agent.sh")
	demoAgentScript(t, script)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Empty room"})
	require.NoError(t, err)

	p.clickNow(`a[data-nav="agents"]`)
	p.waitFor("the agents page", `document.querySelector('button[data-action="add-agent"]') !== null`)
	open := func() {
		p.clickNow(`button[data-action="add-agent"]`)
		p.waitFor("the add form", `!document.querySelector('#add-agent-form').hidden && document.activeElement.id === 'agent-name'`)
	}

	// An attached agent.
	open()
	p.typeInto(`#agent-name`, "helper")
	p.clickNow(`#kind-attached`)
	p.waitFor("the owned fields hidden", `document.querySelector('.owned-fields').hidden`)
	p.clickNow(`#add-agent-form button[type=submit]`)
	p.waitFor("helper in the table", `document.querySelector('tr[data-peer="local/helper"]') !== null`)
	helper := agentNamed(t, c, "owner/helper")
	require.Nil(t, helper.Runtime, "an attached agent has no runtime")

	// An owned agent with a command (quoted: its path has a space).
	open()
	p.typeInto(`#agent-name`, "runner")
	p.choose(`#agent-harness`, "acp")
	p.typeInto(`#agent-command`, `'`+script+`'`)
	p.typeInto(`#agent-model`, "small")
	p.fullShot("webui-add-agent")
	p.clickNow(`#add-agent-form button[type=submit]`)
	p.waitFor("runner in the table", `document.querySelector('tr[data-peer="local/runner"]') !== null`)
	runner := agentNamed(t, c, "owner/runner")
	require.NotNil(t, runner.Runtime)
	require.Equal(t, []string{script}, runner.Runtime.Desired.Command)
	require.Equal(t, "small", runner.Runtime.Desired.Model)
	// An owned agent shows what it does, not its socket's state; one that
	// never ran has no settings pending, even after a change.
	runnerRow := `tr[data-peer="local/runner"]`
	p.waitFor("runner's status", `document.querySelector(`+js(runnerRow+` .chip[data-owned]`)+`) !== null`)
	require.Contains(t, []string{"idle", "starting", "stopped"}, p.eval(`document.querySelector(`+js(runnerRow+` .chip[data-owned]`)+`).textContent`))

	// The same name again: refused in words.
	open()
	p.typeInto(`#agent-name`, "helper")
	p.clickNow(`#kind-attached`)
	p.clickNow(`#add-agent-form button[type=submit]`)
	p.waitFor("the refusal", `document.querySelector('[data-role="add-agent-error"]').textContent !== ''`)
	refusal := p.eval(`document.querySelector('[data-role="add-agent-error"]').textContent`)
	require.Contains(t, refusal, "helper was not added")
	require.NotContains(t, refusal, "{")
	require.NotContains(t, refusal, "request ")
	p.clickNow(`#add-agent-form button.btn--quiet`)

	// Settings: change the model and the permission answer.
	p.clickNow(`button[data-settings="local/runner"]`)
	form := `form[data-settings-for="local/runner"]`
	p.waitFor("the settings form", `document.querySelector(`+js(form)+`) !== null`)
	require.Equal(t, "small", p.eval(`document.querySelector('#set-local_runner-model').value`))
	p.typeInto(`#set-local_runner-model`, "large")
	p.choose(`#set-local_runner-permission`, "reject")
	p.clickNow(form + ` button[type=submit]`)
	p.waitFor("saved", `document.querySelector(`+js(form+` [data-role="settings-result"]`)+`).textContent.startsWith('Saved')`)
	runner = agentNamed(t, c, "owner/runner")
	require.Equal(t, "large", runner.Runtime.Desired.Model)
	require.Equal(t, "reject", runner.Runtime.Desired.Permission)
	require.Equal(t, []string{script}, runner.Runtime.Desired.Command, "an unchanged field is not sent")
	require.Empty(t, runner.Runtime.PendingChange, "no process of runner ran: nothing is pending")
	p.waitFor("runner's new settings shown", `(document.querySelector(`+js(runnerRow+` .runtime`)+`) || {textContent: ''}).textContent.includes('model large')`)
	require.NotContains(t, p.eval(`document.querySelector(`+js(runnerRow+` .runtime`)+`).textContent`), "next starts", "nothing ran: no change is pending")
	require.NotContains(t, p.eval(`document.querySelector('table tbody').textContent`), "null", "no stray text between rows")
	p.atWidths("webui-agent-settings")

	// A room's people panel adds helper to the room.
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + room.ID))
	p.waitFor("the add-agent form", `document.querySelector('form.add-agent') !== null && !document.querySelector('form.add-agent').hidden && document.querySelector('#add-agent option[value="local/helper"]') !== null`)
	p.choose(`#add-agent`, "local/helper")
	p.clickNow(`form.add-agent button[type=submit]`)
	p.waitFor("helper in the room", `document.querySelector('[data-participant=`+js(helper.AgentID)+`]') !== null`)
	require.Contains(t, p.eval(`document.querySelector('[data-role="add-agent-result"]').textContent`), "joined the room")
	require.Equal(t, "", p.eval(`document.querySelector('#add-agent option[value="local/helper"]') ? 'still offered' : ''`), "a participant is no longer offered")
}

// ownedSlowRoom adds the owned demo agent "slow" and a room with it, and
// posts a [slow] message for it as the person.
func ownedSlowRoom(t *testing.T, r *running, command []string) (wire.Agent, wire.Room, protocol.MessageSent) {
	t.Helper()
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "slow", Runtime: &wire.AgentRuntime{Command: command, Permission: "allow", Sandbox: "local"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "slow", Agents: []string{"slow"}})
	require.NoError(t, err)
	owner := ownerClient(t, r.waitReady(t))
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] think it over", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	return agent, room, sent
}

// TestWebUI_cancelTurn: a running turn's page has a Cancel turn button;
// it cancels the turn, the page shows it cancelled, and the button goes.
func TestWebUI_cancelTurn(t *testing.T) {
	t.Parallel()
	r, p := uiDaemon(t)
	ctx := t.Context()
	c := r.client
	agent, room, sent := ownedSlowRoom(t, r, demoAgentCommand(t))

	var s wire.Session
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) == 0 {
			return false
		}
		s = ss[0]
		return s.CurrentTurnState == "running"
	}, 60*time.Second, 20*time.Millisecond, "the turn runs")
	p.do(chromedp.Navigate(signInBase(t, r) + "#/sessions/" + s.ID))
	cancel := `button[data-action="cancel-turn"]`
	p.waitFor("the Cancel turn button", `document.querySelector(`+js(cancel)+`) !== null && !document.querySelector(`+js(cancel)+`).hidden`)
	p.clickNow(cancel) // at once: the [slow] turn lasts a few seconds
	require.Equal(t, "true", p.eval(`String(document.querySelector('button[data-action="retry-turn"]').hidden)`), "a running turn is not retried")
	p.waitFor("the cancelled turn", `(document.querySelector(`+js(`tr[data-turn=`+js(s.CurrentTurn)+`]`)+`) || {dataset: {}}).dataset.state === 'cancelled' && document.querySelector(`+js(cancel)+`).hidden`)
	tr, err := c.Turn(ctx, s.CurrentTurn)
	require.NoError(t, err)
	require.Equal(t, "cancelled", tr.State)
	require.Equal(t, "cancelled_by_user", tr.Reason)
	d := waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryFailed)
	require.Contains(t, d.Error, "cancelled")
	p.waitFor("Retry offered", `!document.querySelector('button[data-action="retry-turn"]').hidden`)
	p.waitFor("the page says the turn was cancelled", `document.querySelector('[data-role="turn-action"]').textContent === 'Turn 1 was cancelled.'`)

	// The executions table fits at 1280 px: nothing clipped, no sideways
	// scrolling.
	p.waitFor("the executions table", `document.querySelector('table[data-role="executions"] tbody tr') !== null`)
	require.Equal(t, "true", p.eval(`(() => { const w = document.querySelector('table[data-role="executions"]').parentElement; return String(w.scrollWidth <= w.clientWidth); })()`),
		"the executions table fits its box")
	require.Equal(t, "true", p.eval(`String([...document.querySelectorAll('table[data-role="executions"] time')].every((el) => el.getClientRects().length === 1))`), "times do not wrap")

	// Navigating (here from the keyboard: Enter on a link) moves focus
	// to the new page's heading, which shows no ring; a control focused
	// from the keyboard still shows one.
	p.eval(`(() => { document.querySelector('a[data-nav="agents"]').focus(); return ''; })()`)
	p.do(chromedp.KeyEvent("\r"))
	p.waitFor("the agents page, its heading focused", `document.body.dataset.route === 'agents' && document.activeElement && document.activeElement.id === 'page-title'`)
	require.Equal(t, "none", p.eval(`getComputedStyle(document.activeElement).outlineStyle`), "no ring on the heading")
	p.do(chromedp.KeyEvent("\t"))
	p.waitFor("a control focused by Tab", `document.activeElement && document.activeElement.matches('a, button, input, select, textarea')`)
	require.NotEqual(t, "none", p.eval(`getComputedStyle(document.activeElement).outlineStyle`), "the keyboard's focus shows")
	p.do(chromedp.Navigate(signInBase(t, r) + "#/sessions/" + s.ID))
	p.waitFor("the session again", `document.querySelector('table[data-role="executions"] tbody tr') !== null`)
	p.atWidths("webui-turn-cancelled")
}

// TestWebUI_retryTurn: a turn that failed (its command was missing) has
// a Retry button; once the command is back, Retry runs the message again
// as a new turn, which the page follows to its answer.
func TestWebUI_retryTurn(t *testing.T) {
	t.Parallel()
	r, p := uiDaemon(t)
	ctx := t.Context()
	c := r.client
	script := filepath.Join(t.TempDir(), "agent.sh")
	demoAgentScript(t, script)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "flaky", Runtime: &wire.AgentRuntime{Command: []string{script}, Permission: "allow", Sandbox: "local"}})
	require.NoError(t, err)
	require.NoError(t, os.Remove(script))
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Flaky", Agents: []string{"flaky"}})
	require.NoError(t, err)
	posted, err := c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@" + agent.Handle + " hello again"})
	require.NoError(t, err)
	waitDelivery(t, c, room.ID, posted.ID, agent.AgentID, protocol.DeliveryFailed)

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	ts, err := c.Turns(ctx, ss[0].ID)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	failed := ts[0]
	require.Equal(t, "failed", failed.State)

	p.do(chromedp.Navigate(signInBase(t, r) + "#/sessions/" + ss[0].ID + "/turns/" + failed.ID))
	retry := `button[data-action="retry-turn"]`
	p.waitFor("the Retry button", `document.querySelector(`+js(retry)+`) !== null && !document.querySelector(`+js(retry)+`).hidden`)
	require.Equal(t, "true", p.eval(`String(document.querySelector('button[data-action="cancel-turn"]').hidden)`), "an ended turn is not cancelled")
	p.atWidths("webui-turn-failed")

	demoAgentScript(t, script) // the command is back
	p.clickNow(retry)
	p.waitFor("the new turn", `location.hash.includes('/turns/') && !location.hash.endsWith(`+js(failed.ID)+`)`)
	p.waitFor("the new turn succeeded", `[...document.querySelectorAll('tr[data-turn]')].some((tr) => tr.dataset.state === 'succeeded')`)
	ts, err = c.Turns(ctx, ss[0].ID)
	require.NoError(t, err)
	require.Len(t, ts, 2, "the retry is a new turn")
	require.Equal(t, failed.Message, ts[1].Message, "of the same message")
	require.Equal(t, "#/sessions/"+ss[0].ID+"/turns/"+ts[1].ID, p.eval(`location.hash`))
	waitDelivery(t, c, room.ID, posted.ID, agent.AgentID, protocol.DeliveryProcessed)
	p.atWidths("webui-turn-retried")
}

// TestWebUI_replyLinks: an owned agent's reply links to the message it
// answers and to its turn; the message links to its turn and its reply;
// following the reply's link shows the message it answers.
func TestWebUI_replyLinks(t *testing.T) {
	t.Parallel()
	r, p := uiDaemon(t)
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Sandbox: "local"}})
	require.NoError(t, err)
	coder, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Answers", Agents: []string{"demo", "coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + room.ID))
	p.waitFor("the room", `document.querySelector('#compose') !== null`)
	posted, err := c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@" + agent.Handle + " what is in the plan?"})
	require.NoError(t, err)
	waitDelivery(t, c, room.ID, posted.ID, agent.AgentID, protocol.DeliveryProcessed)

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 1)
	ts, err := c.Turns(ctx, ss[0].ID)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	turn := ts[0]
	page, err := c.RoomMessages(ctx, room.ID, apiclient.RoomMessagesQuery{})
	require.NoError(t, err)
	var reply string
	for _, m := range page.Messages {
		if m.SenderID == agent.AgentID && m.MessageType == "text" {
			reply = m.ID
		}
	}
	require.NotEmpty(t, reply, "the agent replied")

	replySel, srcSel := msgSelector(reply), msgSelector(posted.ID)
	p.waitFor("the reply's links", `document.querySelector(`+js(replySel+` a[data-reply-to=`+js(posted.ID)+`]`)+`) !== null && document.querySelector(`+js(replySel+` a[data-turn-link=`+js(turn.ID)+`]`)+`) !== null`)
	require.Contains(t, p.eval(`document.querySelector(`+js(replySel+` a.reply-to`)+`).textContent`), "In reply to you: “@"+agent.Handle+" what is in the plan?”")
	require.Equal(t, "#/sessions/"+ss[0].ID+"/turns/"+turn.ID, p.eval(`document.querySelector(`+js(replySel+` a[data-turn-link]`)+`).getAttribute('href')`))
	p.waitFor("the message's links", `document.querySelector(`+js(srcSel+` a[data-turn-link=`+js(turn.ID)+`]`)+`) !== null && document.querySelector(`+js(srcSel+` a[data-reply-link=`+js(reply)+`]`)+`) !== null`)
	p.waitFor("the turn's state", `document.querySelector(`+js(srcSel+` a[data-turn-link]`)+`).textContent === 'Turn 1: succeeded'`)
	p.atWidths("webui-reply-links")

	// The page is open when an attached agent replies (jam reply): the
	// reply links to the message it answers, which links back, though no
	// turn ran. A later message of the same agent is no reply.
	asked, err := c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@" + coder.Handle + " is the build green?"})
	require.NoError(t, err)
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "the message reached the attached agent within 60s")
		inbox, err := c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err)
		if len(inbox.Messages) > 0 {
			require.Equal(t, asked.ID, inbox.Messages[0].ID)
			break
		}
	}
	answered, err := c.Reply(ctx, asked.ID, wire.ReplyRequest{Agent: "coder", Text: "green"})
	require.NoError(t, err)
	require.Len(t, answered.Posted, 1)
	attachedReply := answered.Posted[0]
	page, err = c.RoomMessages(ctx, room.ID, apiclient.RoomMessagesQuery{})
	require.NoError(t, err)
	for _, m := range page.Messages {
		switch m.ID {
		case attachedReply:
			require.Equal(t, asked.ID, m.ReplyTo, "the attached agent's reply names the message it answers")
			require.Empty(t, m.Turn)
		case reply:
			require.Equal(t, posted.ID, m.ReplyTo, "the owned agent's reply names the message it answers")
			require.Equal(t, turn.ID, m.Turn)
		default:
			require.Empty(t, m.ReplyTo, "message %s %q is no reply", m.ID, m.Text)
		}
	}
	aSel, askedSel := msgSelector(attachedReply), msgSelector(asked.ID)
	p.waitFor("the attached agent's reply links", `document.querySelector(`+js(aSel+` a[data-reply-to=`+js(asked.ID)+`]`)+`) !== null && document.querySelector(`+js(askedSel+` a[data-reply-link=`+js(attachedReply)+`]`)+`) !== null`)
	require.Contains(t, p.eval(`document.querySelector(`+js(aSel+` a.reply-to`)+`).textContent`), "In reply to you: “@"+coder.Handle+" is the build green?”")
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll(`+js(aSel+` a[data-turn-link]`)+`).length)`))
	// The reply has arrived and the agent holds nothing else: it is not
	// working any more, though Band's indicator lingers after a settle.
	require.NotContains(t, p.eval(`document.querySelector('.status-line').textContent`), "@"+coder.Handle, "the reply arrived: no longer working")

	// In the people list the owned agent says what it does (idle: its
	// turn ended), the attached one its socket's state.
	person := func(id string) string {
		return `(document.querySelector(` + js(`.person[data-participant=`+js(id)+`] .presence-text`) + `) || {}).textContent`
	}
	p.waitFor("the owned agent idle", person(agent.AgentID)+` === 'idle'`)
	// The attached agent's socket may be reconnecting as the page reads
	// it (its long poll ended with the reply): it comes back online.
	p.waitFor("the attached agent online", person(coder.AgentID)+` === 'online'`)
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll(`+js(msgSelector(asked.ID)+` a[data-reply-to]`)+`).length)`))

	p.clickNow(replySel + ` a.reply-to`)
	p.waitFor("the answered message shown", `(document.querySelector(`+js(srcSel)+`) || {classList: {contains: () => false}}).classList.contains('msg--focus')`)
}

// TestWebUI_cancelTurnFromTheRoom: while an owned agent's turn runs, the
// room offers to cancel it next to the link that watches it; Cancel ends
// the turn and the message shows failed (cancelled).
func TestWebUI_cancelTurnFromTheRoom(t *testing.T) {
	t.Parallel()
	r, p := uiDaemon(t)
	agent, room, sent := ownedSlowRoom(t, r, demoAgentCommand(t))
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + room.ID))
	p.waitFor("the Cancel button of the running turn", `document.querySelector('.live-turns button[data-cancel-turn]') !== null`)
	turn := p.eval(`(() => { const b = document.querySelector('.live-turns button[data-cancel-turn]'); b.click(); return b.dataset.cancelTurn; })()`)
	chip := msgSelector(sent.ID) + ` .chip[data-agent=` + js(agent.AgentID) + `]`
	p.waitFor("the message failed (cancelled)", `(document.querySelector(`+js(chip)+`) || {dataset: {}}).dataset.status === 'failed' && document.querySelector(`+js(chip)+`).textContent.includes('cancelled')`)
	p.waitFor("the running turn's links gone", `document.querySelector('.live-turns button[data-cancel-turn]') === null`)
	tr, err := r.client.Turn(t.Context(), turn)
	require.NoError(t, err)
	require.Equal(t, "cancelled", tr.State)
	p.atWidths("webui-room-cancelled")
}
