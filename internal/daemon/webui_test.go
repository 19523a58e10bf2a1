package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// The web UI's acceptance tests: a real daemon with its HTTP listener, and
// headless Chromium driving the page as a person would.

const chromiumPath = "/usr/bin/chromium"

// page is one browser tab on the web UI.
type page struct {
	t   *testing.T
	ctx context.Context
	// exceptions collects the page's uncaught exceptions.
	mu         sync.Mutex
	exceptions []string
}

// openBrowser starts headless Chromium with a fresh profile, or skips the
// test when there is none (unless JAM_REQUIRE_CHROMIUM=1).
func openBrowser(t *testing.T) *page {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("JAM_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("JAM_REQUIRE_CHROMIUM=1 but %s is missing: %v", chromiumPath, err)
		}
		t.Skipf("no Chromium at %s (install the chromium package, or set JAM_REQUIRE_CHROMIUM=1 to make this a failure)", chromiumPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	p := &page{t: t, ctx: ctx}
	// Start the browser now, so the tab outlives every step's timeout.
	require.NoError(t, chromedp.Do(ctx))
	messages := chromedp.Console(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			t.Logf("browser console: %s", m)
			if m.IsException() {
				p.mu.Lock()
				p.exceptions = append(p.exceptions, m.String())
				p.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		wg.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		require.Empty(t, p.exceptions, "the page threw")
	})
	return p
}

// do runs steps within a bound.
func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, steps...))
}

// waitFor polls a JavaScript expression until it is true.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		text, _ := chromedp.Run(context.WithoutCancel(p.ctx), chromedp.Evaluate[string](`(document.querySelector('main') || document.body).innerText + (document.querySelector('#compose') ? '\n[composer: ' + JSON.stringify(document.querySelector('#compose').value) + ']' : '')`))
		p.t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, text)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) to a string.
func (p *page) eval(expr string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err, expr)
	return v
}

// screenshot writes the viewport as a PNG artifact and logs its path.
func (p *page) screenshot(name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(p.t, err)
	dir := os.Getenv("JAM_ARTIFACTS")
	if dir == "" {
		dir = p.t.TempDir()
	}
	require.NoError(p.t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name+".png")
	require.NoError(p.t, os.WriteFile(path, png, 0o644))
	p.t.Logf("screenshot %s", path)
	return path
}

var uiLink = regexp.MustCompile(`(?m)^  web ui +(http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{64}) `)

// signInLink returns the one-time link the daemon printed at start.
func signInLink(t *testing.T, r *running) string {
	t.Helper()
	m := uiLink.FindStringSubmatch(r.out.String())
	require.NotNil(t, m, "the banner prints the web ui's sign-in link:\n%s", r.out.String())
	return m[1]
}

// signIn opens a sign-in link as a person does: the link shows a page
// with a button, and the click signs the browser in and lands on the UI.
func (p *page) signIn(link string) {
	p.t.Helper()
	p.do(chromedp.Navigate(link))
	p.waitFor("the sign-in button", `document.querySelector('form[action="/signin"] button[type=submit]') !== null`)
	p.do(chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)), chromedp.WaitReady(chromedp.CSS(`#conn`)))
	p.waitFor("the signed-in page", `location.pathname === '/' && location.search === '' && document.querySelector('#conn') !== null`)
}

// js quotes s as a JavaScript string.
func js(s string) string { return fmt.Sprintf("%q", s) }

// msgSelector selects a message of the timeline by id.
func msgSelector(id string) string { return `.timeline .msg[data-id=` + js(id) + `]` }

// TestWebUI_roomLiveAndDelivery is the web UI's main path: sign in with the
// one-time link, open a room, post a message mentioning the attached agent
// from the composer (with @ completion), then act as the agent (wait and
// reply through the control API) and see the reply arrive live and the
// message's delivery to the agent move to settled.
func TestWebUI_roomLiveAndDelivery(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	_, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "reviewer"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Design review", Agents: []string{"coder", "reviewer"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	other, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Release 0.4", Agents: []string{"reviewer"}})
	require.NoError(t, err)

	link := signInLink(t, r)
	p := openBrowser(t)
	// Fetching the link, as a chat app's link preview would, spends
	// nothing: the page only shows a button.
	p.do(chromedp.Navigate(link))
	p.waitFor("the sign-in page", `document.querySelector('form[action="/signin"]') !== null`)
	require.Equal(t, "", p.eval(`document.cookie`))
	p.screenshot("webui-signin")
	p.signIn(link)
	p.waitFor("the rooms list", `document.querySelector('a[data-room=`+js(room.ID)+`]') !== null`)
	loc := p.eval(`location.href`)
	require.Equal(t, "http://"+st.HTTPAddr+"/", loc, "the token was exchanged and left the address")
	require.Equal(t, "", p.eval(`document.cookie`), "the session cookie is HttpOnly")

	// An agent posts in the other room while the person looks at the
	// list: it shows as unread.
	_, err = c.Send(ctx, wire.SendRequest{Agent: "reviewer", Room: other.ID, Text: "@owner release notes are drafted"})
	require.NoError(t, err)
	p.waitFor("the unread count", `(document.querySelector('a[data-room=`+js(other.ID)+`] .badge') || {}).textContent === '1'`)

	p.do(chromedp.Click(chromedp.CSS(`main a[data-room=` + js(room.ID) + `]`)))
	p.waitFor("the room and its participants", `document.querySelector('#compose') !== null && document.querySelector('[data-participant=`+js(agent.AgentID)+`]') !== null`)
	require.Equal(t, "Design review", p.eval(`document.querySelector('.room-head h1').textContent`))

	// Compose with @ completion: "@cod" offers @coder; Enter picks it.
	p.do(chromedp.Click(chromedp.CSS(`#compose`)), chromedp.SendKeys(chromedp.CSS(`#compose`), "@cod"))
	p.waitFor("the mention suggestions", `!document.querySelector('#mention-list').hidden && document.querySelector('#mention-list [role=option][aria-selected=true]').textContent.startsWith('@'+`+js(agent.Handle)+`)`)
	require.Equal(t, "mention-list-0", p.eval(`document.querySelector('#compose').getAttribute('aria-activedescendant')`), "the active option is announced")
	p.do(chromedp.SendKeys(chromedp.CSS(`#compose`), kb.Enter))
	p.waitFor("the completed mention", `document.querySelector('#compose').value === '@'+`+js(agent.Handle)+`+' '`)
	p.do(chromedp.SendKeys(chromedp.CSS(`#compose`), "please review the plan"+kb.Enter))

	// The agent gets it and answers.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	inbox, err := c.WaitInbox(waitCtx, wire.WaitRequest{Agent: "coder", TimeoutMS: 30000})
	require.NoError(t, err)
	require.Len(t, inbox.Messages, 1)
	msg := inbox.Messages[0]
	require.Contains(t, msg.Content, "please review the plan")
	require.Equal(t, room.ID, msg.Room)

	// The posted message is in the timeline, its mention shown as the
	// handle, with its delivery to the agent under way.
	p.waitFor("the posted message", `document.querySelector(`+js(msgSelector(msg.ID))+`) !== null`)
	require.Equal(t, "me", p.eval(`document.querySelector(`+js(msgSelector(msg.ID))+`).dataset.sender`))
	require.Equal(t, "@"+agent.Handle, p.eval(`document.querySelector(`+js(msgSelector(msg.ID)+` .mention`)+`).textContent`))
	require.NotContains(t, p.eval(`document.querySelector(`+js(msgSelector(msg.ID))+`).textContent`), "@[[", "no raw mention token is shown")
	chip := msgSelector(msg.ID) + ` .chip[data-agent=` + js(agent.AgentID) + `]`
	p.waitFor("the delivery status", `document.querySelector(`+js(chip)+`) !== null`)
	before := p.eval(`document.querySelector(` + js(chip) + `).dataset.status`)
	require.Contains(t, []string{"queued", "delivered", "processing"}, before)

	// Taking the message from the inbox makes the agent work in the room:
	// the participants and the line above the composer say so.
	working := `[data-participant=` + js(agent.AgentID) + `] [data-working=true]`
	p.waitFor("the working indicator", `document.querySelector(`+js(working)+`) !== null && document.querySelector('.composer .status-line').textContent.includes('is working')`)
	p.screenshot("webui-room-working")

	reply, err := c.Reply(ctx, msg.ID, wire.ReplyRequest{Agent: "coder", Text: "On it: the plan looks sound, two notes inline."})
	require.NoError(t, err)
	require.Len(t, reply.Posted, 1)

	// The reply arrives live, and the delivery is settled.
	p.waitFor("the agent's reply", `document.querySelector(`+js(msgSelector(reply.Posted[0]))+`) !== null`)
	require.Equal(t, "agent", p.eval(`document.querySelector(`+js(msgSelector(reply.Posted[0]))+`).dataset.sender`))
	p.waitFor("the settled delivery", `(document.querySelector(`+js(chip)+`) || {dataset: {}}).dataset.status === 'settled'`)
	require.Contains(t, p.eval(`document.querySelector('#announcer').textContent`), "the plan looks sound", "the live region announced the reply")
	require.Contains(t, p.eval(`document.querySelector('#conn').dataset.state`), "live")
	p.waitFor("the end of the working indicator", `document.querySelector(`+js(working)+`) === null`)
	p.screenshot("webui-room")

	// The same room at phone width.
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.waitFor("the phone layout", `getComputedStyle(document.querySelector('#sidebar')).display === 'none'`)
	p.screenshot("webui-room-phone")
	p.do(chromedp.EmulateViewport(1280, 860))

	// The agents page: peers, bindings, queue depth, the unrouted bucket.
	// A question for reviewer, who has no binding here, waits unrouted.
	_, err = c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@reviewer could you check the API part?"})
	require.NoError(t, err)
	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="agents"]`)))
	p.waitFor("the agents table", `document.querySelector('tr[data-peer="local/coder"]') !== null && document.querySelector('tr[data-peer="local/reviewer"]') !== null`)
	p.waitFor("reviewer's unrouted message", `document.querySelectorAll('.unrouted li').length >= 1`)
	require.Contains(t, p.eval(`document.querySelector('tr[data-peer="local/coder"]').textContent`), "Design review", "the binding names its room")
	require.Equal(t, "true", p.eval(`String(document.activeElement && document.activeElement.id === 'page-title')`), "focus moves to the new page's heading")
	p.screenshot("webui-agents")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.screenshot("webui-agents-phone")
	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="rooms"]`)))
	p.waitFor("the rooms list", `document.querySelector('main a[data-room=`+js(other.ID)+`]') !== null`)
	p.screenshot("webui-rooms-phone")
	p.do(chromedp.EmulateViewport(1280, 860))

	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="status"]`)))
	p.waitFor("the status page", `document.querySelectorAll('.card').length === 4 && document.body.textContent.includes('sqlite')`)
	p.waitFor("the store check", `document.querySelector('[data-check="ok"]') !== null`)
	p.screenshot("webui-status")

	// The session works for the API from the page (GET) and refuses a
	// state-changing request without the UI header.
	status := p.eval(`fetch('/v1/status').then(r => String(r.status))`)
	require.Equal(t, "200", status)
	refused := p.eval(`fetch('/v1/rooms/` + room.ID + `/messages', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({text: '@` + agent.Handle + ` forged'})}).then(r => r.json()).then(b => b.error.code)`)
	require.Equal(t, string(wire.CodePermissionDenied), refused)

	// Sign out with the header's button: the page says so, and the
	// session is over in the daemon, not only in this browser.
	got, err := chromedp.Call(p.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{"http://" + st.HTTPAddr + "/"}})
	require.NoError(t, err)
	cookies := got.Cookies
	require.Len(t, cookies, 1)
	require.True(t, cookies[0].HTTPOnly)
	require.Equal(t, network.CookieSameSiteStrict, cookies[0].SameSite)
	p.do(chromedp.Click(chromedp.CSS(`#signout`)))
	p.waitFor("the signed-out dialog", `document.querySelector('#conn').dataset.state === 'signedout' && (document.querySelector('[role=alertdialog]') || {textContent: ''}).textContent.includes('signed out')`)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+st.HTTPAddr+"/v1/status", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value})
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the cookie, replayed after sign-out")
	p.do(chromedp.Navigate(link))
	p.waitFor("the spent link's page", `document.body.textContent.includes('already used')`)
}

// TestWebUI_reconnectsAcrossRestart: with a room open in the page, the
// daemon stops and starts again on the same data directory and address;
// messages posted right after the restart, before the page is back, all
// appear once the page has reconnected, and none is shown twice.
func TestWebUI_reconnectsAcrossRestart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client

	_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Restarts", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)

	p := openBrowser(t)
	p.signIn(signInLink(t, r))
	p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/rooms/" + room.ID))
	p.waitFor("the room", `document.querySelector('#compose') !== null && document.querySelector('#conn').dataset.state === 'live'`)
	first, err := c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@coder before the restart"})
	require.NoError(t, err)
	p.waitFor("the first message", `document.querySelector(`+js(msgSelector(first.ID))+`) !== null`)

	err, _ = r.stop()
	require.NoError(t, err)
	p.waitFor("the page to notice", `document.querySelector('#conn').dataset.state === 'reconnecting'`)

	cfg.HTTPAddr = st.HTTPAddr // the page knows this address
	r2 := start(t, cfg)
	r2.waitReady(t)
	c2 := r2.client
	var posted []string
	for i := range 3 {
		res, err := c2.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: fmt.Sprintf("@coder after the restart %d", i)})
		require.NoError(t, err)
		posted = append(posted, res.ID)
	}
	sent, err := c2.Send(ctx, wire.SendRequest{Agent: "coder", Room: room.ID, Text: "@owner the agent is back too"})
	require.NoError(t, err)
	posted = append(posted, sent.ID)

	p.waitFor("the page to reconnect", `document.querySelector('#conn').dataset.state === 'live'`)
	for _, id := range posted {
		p.waitFor("message "+id, `document.querySelector(`+js(msgSelector(id))+`) !== null`)
	}

	// The page shows exactly the room's messages, each once.
	want, err := c2.RoomMessages(ctx, room.ID, apiclient.RoomMessagesQuery{})
	require.NoError(t, err)
	var wantIDs []string
	for _, m := range want.Messages {
		wantIDs = append(wantIDs, m.ID)
	}
	p.waitFor("every message once", `(() => { const ids = [...document.querySelectorAll('.timeline .msg')].map(e => e.dataset.id); return new Set(ids).size === ids.length && ids.length === `+fmt.Sprint(len(wantIDs))+`; })()`)
	got := p.eval(`[...document.querySelectorAll('.timeline .msg')].map(e => e.dataset.id).join(',')`)
	require.Equal(t, strings.Join(wantIDs, ","), got, "in the daemon's order")
	p.screenshot("webui-after-restart")
}

// TestWebUI_sessionLiveTurn: an owned agent's turn seen from the web UI.
// The room links to the running turn; the session page streams the
// agent's thinking and answer as it works, lists the turns with their
// source message, shows the session's git worktree and archives and
// restores it after a confirmation (and shows the daemon's refusal to
// remove it with uncommitted changes), and the agents page links to the
// agent's sessions.
func TestWebUI_sessionLiveTurn(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := filepath.Join(t.TempDir(), "parser repo")
	require.NoError(t, os.Mkdir(repo, 0o755))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Repo: repo}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Parser work", Agents: []string{"demo"}})
	require.NoError(t, err)
	var session wire.Session
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) == 1 {
			session = ss[0]
		}
		return len(ss) == 1
	}, 30*time.Second, 20*time.Millisecond, "the agent's session in the room")

	p := openBrowser(t)
	p.signIn(signInLink(t, r))
	p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/rooms/" + room.ID))
	p.waitFor("the room", `document.querySelector('#compose') !== null && document.querySelector('#conn').dataset.state === 'live'`)

	// A slow request: the room says the agent works and links to the turn.
	first, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] rework the tokenizer", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	p.waitFor("the link to the live turn", `document.querySelector('.live-turns a[data-live-turn]') !== null`)
	p.screenshot("webui-room-live-turn-link")
	// Clicked in the page, in one step: the list is drawn again as the
	// turn moves (preparing, its checkpoint, running), so a node found
	// first may be gone by the time a separate click reaches it.
	p.eval(`document.querySelector('.live-turns a[data-live-turn]').click(), 'clicked'`)
	p.waitFor("the session page with streamed thoughts", `location.hash.startsWith('#/sessions/') && (document.querySelector('.output .out-thought') || {}).textContent?.includes('thinking')`)
	require.Equal(t, session.ID, p.eval(`decodeURIComponent(location.hash.split('/')[2])`))
	p.waitFor("the answer and the turn's end", `(document.querySelector('.output .out-text') || {}).textContent?.includes('You said:') && document.querySelector('tr[data-turn] [data-turn-state="succeeded"]') !== null`)
	require.Contains(t, p.eval(`document.querySelector('.output').textContent`), "rework the tokenizer")
	require.Contains(t, p.eval(`document.querySelector('.output').textContent`), "Write NOTES.md", "the tool call is shown")

	// Unpinned, the session page follows the next turn while it runs.
	p.do(chromedp.Navigate("http://" + st.HTTPAddr + "/#/sessions/" + session.ID))
	p.waitFor("the session page", `document.querySelectorAll('tr[data-turn]').length === 1`)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] and the lexer", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	p.waitFor("streamed thoughts while the turn runs", `document.querySelector('.output').dataset.state === 'running' && (document.querySelector('.output .out-thought') || {}).textContent?.includes('thinking')`)
	p.screenshot("webui-session-running")
	p.waitFor("the second turn's end", `document.querySelectorAll('tr[data-turn] [data-turn-state="succeeded"]').length === 2 && (document.querySelector('.output .out-text') || {}).textContent?.includes('and the lexer')`)
	require.Equal(t, "2", p.eval(`String(document.querySelectorAll('tr[data-turn]').length)`))
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, ss[0].ProviderThread)
	require.Contains(t, p.eval(`document.querySelector('.card').textContent`), ss[0].ProviderThread, "the session's facts")
	require.Contains(t, p.eval(`document.querySelector('.card').textContent`), "idle", "no current turn once it is over")
	require.Contains(t, p.eval(`document.querySelector('.card').textContent`), "Parser work")
	// The shown turn's one attempt, on the agent's first process.
	p.waitFor("the turn's execution", `document.querySelectorAll('table[data-role="executions"] tr[data-execution]').length === 1`)
	require.Contains(t, p.eval(`document.querySelector('table[data-role="executions"] tbody').textContent`), "succeeded")
	p.screenshot("webui-session")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.screenshot("webui-session-phone")
	p.do(chromedp.EmulateViewport(1280, 860))

	// The session's worktree: active, on its own branch, with the agent's
	// uncommitted NOTES.md.
	wts, err := c.Worktrees(ctx)
	require.NoError(t, err)
	require.Len(t, wts, 1)
	wt := wts[0]
	const wtState = `document.querySelector('section.worktree').dataset.worktreeState`
	visible := func(action string) string {
		return `!document.querySelector('section.worktree button[data-action="` + action + `"]').hidden`
	}
	p.waitFor("the active worktree", wtState+` === 'active' && document.querySelector('[data-fact="uncommitted"]').textContent === '1 change'`)
	require.Equal(t, wt.Branch, p.eval(`document.querySelector('[data-fact="branch"]').textContent`))
	require.Equal(t, wt.Path, p.eval(`document.querySelector('[data-fact="path"]').textContent`))
	require.Equal(t, "true,true,false", p.eval(`[`+visible("archive")+`, `+visible("remove")+`, `+visible("restore")+`].join()`), "an active worktree can be archived or removed")

	// Cancelling the confirmation changes nothing.
	p.do(chromedp.Click(chromedp.CSS(`section.worktree button[data-action="archive"]`)))
	p.waitFor("the archive confirmation", `document.querySelector('.wt-confirm').dataset.action === 'archive' && !document.querySelector('.wt-confirm').hidden && document.activeElement.id === 'wt-question'`)
	p.do(chromedp.Click(chromedp.CSS(`.wt-confirm button[data-cancel]`)))
	p.waitFor("the confirmation closed", `document.querySelector('.wt-confirm').hidden && document.activeElement.dataset.action === 'archive'`)
	require.DirExists(t, wt.Path)

	// Removing it without discarding the note: the daemon refuses, and
	// the page says why.
	p.do(chromedp.Click(chromedp.CSS(`section.worktree button[data-action="remove"]`)))
	p.waitFor("the remove confirmation", `document.querySelector('.wt-confirm').dataset.action === 'remove' && !document.querySelector('label.wt-force').hidden`)
	require.Contains(t, p.eval(`document.querySelector('.wt-confirm').textContent`), "Discard 1 uncommitted change")
	p.do(chromedp.Click(chromedp.CSS(`.wt-confirm button[data-confirm]`)))
	p.waitFor("the daemon's refusal", `(document.querySelector('.wt-error .error-box') || {textContent: ''}).textContent.includes('uncommitted')`)
	require.Equal(t, string(wire.CodeConflict), p.eval(`document.querySelector('.wt-error .error-box').dataset.code`))
	require.Contains(t, p.eval(`document.querySelector('.wt-error').textContent`), "NOTES.md")
	require.Equal(t, "active", p.eval(wtState))
	require.DirExists(t, wt.Path, "a refused remove leaves the worktree")
	p.screenshot("webui-worktree-refused")

	// Archive, confirmed: the note is committed to the kept branch.
	p.do(chromedp.Click(chromedp.CSS(`section.worktree button[data-action="archive"]`)))
	p.waitFor("the archive confirmation", `document.querySelector('.wt-confirm').dataset.action === 'archive' && document.querySelector('.wt-error').textContent === ''`)
	require.Contains(t, p.eval(`document.querySelector('.wt-question').textContent`), "1 uncommitted change will be committed to branch "+wt.Branch)
	p.screenshot("webui-worktree-confirm")
	p.do(chromedp.Click(chromedp.CSS(`.wt-confirm button[data-confirm]`)))
	p.waitFor("the archived worktree", wtState+` === 'archived' && document.querySelector('.wt-confirm').hidden && document.querySelector('.wt-result').textContent.includes('archived; its work is kept on branch')`)
	require.Equal(t, "false,true,true", p.eval(`[`+visible("archive")+`, `+visible("remove")+`, `+visible("restore")+`].join()`), "an archived worktree can be restored or removed")
	require.NoDirExists(t, wt.Path)
	note, err := exec.Command("git", "-C", repo, "show", wt.Branch+":NOTES.md").CombinedOutput()
	require.NoError(t, err, "%s", note)
	wts, err = c.Worktrees(ctx)
	require.NoError(t, err)
	require.Equal(t, "archived", wts[0].State)
	p.screenshot("webui-worktree-archived")

	// Restore, confirmed (at phone width): the branch is checked out
	// again with the note.
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.do(chromedp.Click(chromedp.CSS(`section.worktree button[data-action="restore"]`)))
	p.waitFor("the restore confirmation", `document.querySelector('.wt-confirm').dataset.action === 'restore'`)
	require.Contains(t, p.eval(`document.querySelector('.wt-question').textContent`), "Branch "+wt.Branch+" is checked out again")
	p.eval(`(() => { document.querySelector('section.worktree').scrollIntoView(); return ''; })()`)
	p.screenshot("webui-worktree-restore-phone")
	p.do(chromedp.Click(chromedp.CSS(`.wt-confirm button[data-confirm]`)))
	p.waitFor("the restored worktree", wtState+` === 'active' && document.querySelector('.wt-result').textContent.includes('restored') && document.querySelector('[data-fact="uncommitted"]').textContent === '0 changes'`)
	b, err := os.ReadFile(filepath.Join(wt.Path, "NOTES.md"))
	require.NoError(t, err)
	require.Contains(t, string(b), "and the lexer")
	p.screenshot("webui-worktree-restored-phone")
	p.do(chromedp.EmulateViewport(1280, 860))

	// The first turn's source message link opens the room at the message.
	// Clicked in the page, in one step: the turn list re-renders as turns
	// change, and a node found by one protocol call can be gone by the
	// next ("Could not find node with given id").
	firstLink := `document.querySelector('tr[data-turn]:last-child a[href*="/messages/"]')`
	p.waitFor("the first turn's source link", firstLink+` !== null`)
	p.eval(`(() => { ` + firstLink + `.click(); return ''; })()`)
	p.waitFor("the focused source message", `document.querySelector(`+js(msgSelector(first.ID)+`.msg--focus`)+`) !== null`)

	// The agents page links to the agent's sessions.
	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="agents"]`)))
	p.waitFor("the sessions link", `document.querySelector('a[data-sessions="local/demo"]') !== null`)
	p.do(chromedp.Click(chromedp.CSS(`a[data-sessions="local/demo"]`)))
	p.waitFor("the agent's sessions", `document.querySelector('tr[data-session=`+js(session.ID)+`]') !== null`)
	require.Contains(t, p.eval(`document.querySelector('tr[data-session=`+js(session.ID)+`]').textContent`), "Parser work")
	p.screenshot("webui-agent-sessions")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.screenshot("webui-agent-sessions-phone")
}
