package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
)

// fullShot writes a full-page PNG (JAM_ARTIFACTS, else a temporary
// directory) and logs its path. The page scrolls inside its main element,
// so the window is made as tall as main's content for the shot.
func (p *page) fullShot(name string) string {
	p.t.Helper()
	var w, h, tall, scale int64
	_, err := fmt.Sscan(p.eval(`[innerWidth, innerHeight, document.querySelector('main').scrollHeight + document.querySelector('main').getBoundingClientRect().top, devicePixelRatio].join(' ')`), &w, &h, &tall, &scale)
	require.NoError(p.t, err)
	if document := p.eval(`document.body.dataset.route`); tall > h && document != "room" {
		p.do(chromedp.EmulateViewport(w, tall, chromedp.EmulateScale(float64(scale))))
		defer p.do(chromedp.EmulateViewport(w, h, chromedp.EmulateScale(float64(scale))))
	}
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
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

// atWidths takes the page's screenshot at desktop (1280x800) and phone
// (390x844) widths, and leaves it at desktop width.
func (p *page) atWidths(name string) {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.waitFor("the phone layout", `getComputedStyle(document.querySelector('#sidebar')).display === 'none'`)
	p.fullShot(name + "-phone")
	p.do(chromedp.EmulateViewport(1280, 800))
	p.waitFor("the desktop layout", `getComputedStyle(document.querySelector('#sidebar')).display !== 'none'`)
	p.fullShot(name)
}

// roomWithAttached starts a daemon with the web UI, an attached agent
// coder bound to room "Markdown", and a signed-in browser on that room.
func roomWithAttached(t *testing.T) (*running, *page, wire.Room) {
	t.Helper()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	c := r.client
	_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Markdown", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	p := openBrowser(t)
	p.do(chromedp.EmulateViewport(1280, 800))
	p.signIn(signInLink(t, r))
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + room.ID))
	p.waitFor("the room", `document.querySelector('#compose') !== null`)
	return r, p, room
}

// signInBase is the UI's address without the sign-in token.
func signInBase(t *testing.T, r *running) string {
	link := signInLink(t, r)
	return link[:strings.Index(link, "?")]
}

// hostile is Markdown that tries every way this page knows to run
// script or carry an attribute of the source.
const hostile = "@owner hostile input:\n\n" +
	"<img src=x onerror=\"window.__pwned='img'\">\n\n" +
	"[click me](javascript:window.__pwned='link')\n\n" +
	"[spaced](  JaVaScRiPt:window.__pwned='case' )\n\n" +
	"[tabbed](java\tscript:window.__pwned='tab')\n\n" +
	"<script>window.__pwned='script'</script>\n\n" +
	"<a href=\"javascript:window.__pwned='a'\" onclick=\"window.__pwned='click'\">raw anchor</a>\n\n" +
	"[data](data:text/html,<script>alert(1)</script>)\n\n" +
	"![pic](https://example.com/x.png\" onerror=\"window.__pwned='alt')\n\n" +
	"<javascript:alert(1)> and **<b onmouseover=alert(1)>bold html</b>**\n"

// TestWebUI_markdownRendersSafely: a message's Markdown shows formatted
// (bold, italic, inline code, lists, a quote, a highlighted code block, a
// table, links that open in a new tab without an opener or referrer),
// and hostile input shows as text: no element of the source, no event
// handler, no javascript: or data: address, and nothing runs.
func TestWebUI_markdownRendersSafely(t *testing.T) {
	t.Parallel()
	r, p, room := roomWithAttached(t)
	ctx := t.Context()
	c := r.client

	const md = "@owner here is the **plan**, with *care* and `go test`:\n\n" +
		"1. read the [docs](https://example.com/docs?a=1&b=2)\n2. run it\n\n" +
		"- see https://example.com/bare.\n- snake_case_names stay plain\n\n" +
		"> quoted words\n\n" +
		"```go\n// main runs.\nfunc main() {\n\tfmt.Println(\"hi\", 42)\n}\n```\n\n" +
		"| key | value |\n|-----|------:|\n| a | 1 |\n"
	good, err := c.Send(ctx, wire.SendRequest{Agent: "coder", Room: room.ID, Text: md})
	require.NoError(t, err)
	bad, err := c.Send(ctx, wire.SendRequest{Agent: "coder", Room: room.ID, Text: hostile})
	require.NoError(t, err)
	goodSel, badSel := msgSelector(good.ID), msgSelector(bad.ID)
	p.waitFor("both messages", `document.querySelector(`+js(goodSel)+`) !== null && document.querySelector(`+js(badSel)+`) !== null`)

	q := func(sel, expr string) string {
		return p.eval(`(() => { const el = document.querySelector(` + js(sel) + `); return el ? String(` + expr + `) : 'missing: ' + ` + js(sel) + `; })()`)
	}
	require.Equal(t, "plan", q(goodSel+" .msg-body strong", "el.textContent"))
	require.Equal(t, "care", q(goodSel+" .msg-body em", "el.textContent"))
	require.Equal(t, "go test", q(goodSel+" .msg-body p code", "el.textContent"))
	require.Equal(t, "2", q(goodSel+" .msg-body ol", "el.children.length"))
	require.Equal(t, "quoted words", q(goodSel+" .msg-body blockquote", "el.textContent"))
	require.Equal(t, "https://example.com/docs?a=1&b=2", q(goodSel+` a.md-link`, "el.getAttribute('href')"))
	require.Equal(t, "_blank", q(goodSel+` a.md-link`, "el.getAttribute('target')"))
	require.Equal(t, "noopener noreferrer", q(goodSel+` a.md-link`, "el.getAttribute('rel')"))
	require.Equal(t, "https://example.com/bare", q(goodSel+` ul li a.md-link`, "el.getAttribute('href')"), "a bare URL is linked, without the full stop after it")
	require.Contains(t, q(goodSel+" .msg-body ul", "el.textContent"), "snake_case_names", "underscores inside words are no emphasis")
	require.Equal(t, "func", q(goodSel+" .md-code pre code .tok-kw", "el.textContent"), "the code block is highlighted")
	require.Equal(t, "// main runs.", q(goodSel+" .md-code .tok-com", "el.textContent"))
	require.Equal(t, `"hi"`, q(goodSel+" .md-code .tok-str", "el.textContent"))
	require.Equal(t, "1", q(goodSel+" .md-table td.md-right", "el.textContent"))
	require.NotContains(t, q(goodSel+" .msg-body", "el.textContent"), "**", "no Markdown syntax shows")

	// The hostile message: its source shows as text, and nothing of it
	// became markup.
	body := q(badSel+" .msg-body", "el.textContent")
	require.Contains(t, body, `<img src=x onerror="window.__pwned='img'">`)
	require.Contains(t, body, "<script>window.__pwned='script'</script>")
	require.Contains(t, body, "click me")
	require.Equal(t, "0", q(badSel, "el.querySelectorAll('img, script, iframe, object, embed, b, svg, [onerror], [onclick], [onmouseover], [style]').length"))
	require.Equal(t, "", q(badSel, "[...el.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name)).filter((a) => a.startsWith('on')).join()"))
	hrefs := q(badSel, "[...el.querySelectorAll('[href], [src]')].map((n) => n.getAttribute('href') || n.getAttribute('src')).join(' ')")
	for _, word := range []string{"javascript", "JaVaScRiPt", "data:", "script:"} {
		require.NotContains(t, hrefs, word, "no unsafe address is linked")
	}
	require.Equal(t, "0", q(badSel, "[...el.querySelectorAll('a')].filter((a) => !a.href.startsWith('https:')).length"), "every link is a web address")
	// Clicking what the source meant as links runs nothing.
	p.eval(`(() => { for (const el of document.querySelectorAll(` + js(badSel+` .msg-body span, `+badSel+` .msg-body strong`) + `)) el.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})), el.click(); return ''; })()`)
	require.Equal(t, "undefined", p.eval(`typeof window.__pwned`), "no script of the message ran")
	p.atWidths("webui-markdown")
}

// TestWebUI_longMessageCollapses: a long message shows its first lines
// and a Show more button; the button shows it all (and Show less folds it
// again).
func TestWebUI_longMessageCollapses(t *testing.T) {
	t.Parallel()
	r, p, room := roomWithAttached(t)
	ctx := t.Context()
	c := r.client

	var b strings.Builder
	b.WriteString("@owner the full log:\n\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&b, "line %d of the log\n", i)
	}
	long, err := c.Send(ctx, wire.SendRequest{Agent: "coder", Room: room.ID, Text: b.String()})
	require.NoError(t, err)
	short, err := c.Send(ctx, wire.SendRequest{Agent: "coder", Room: room.ID, Text: "@owner a short one"})
	require.NoError(t, err)
	sel := msgSelector(long.ID)
	p.waitFor("the long message", `document.querySelector(`+js(sel)+`) !== null && document.querySelector(`+js(msgSelector(short.ID))+`) !== null`)
	btn := sel + " button[data-more]"
	require.Equal(t, "true", p.eval(`String(document.querySelector(`+js(sel+" .msg-body")+`).classList.contains('msg-body--collapsed'))`))
	require.Contains(t, p.eval(`document.querySelector(`+js(btn)+`).textContent`), "Show more")
	require.Equal(t, "false", p.eval(`document.querySelector(`+js(btn)+`).getAttribute('aria-expanded')`))
	text := p.eval(`document.querySelector(` + js(sel+" .msg-body") + `).textContent`)
	require.Contains(t, text, "line 5 of the log")
	require.NotContains(t, text, "line 200 of the log", "the collapsed message holds its first lines only")
	height := p.eval(`String(document.querySelector(` + js(sel) + `).getBoundingClientRect().height < 500)`)
	require.Equal(t, "true", height, "the collapsed message is short on screen")
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll(`+js(msgSelector(short.ID)+" button[data-more]")+`).length)`), "a short message has no button")
	p.atWidths("webui-collapsed")

	p.clickNow(btn)
	p.waitFor("the whole message", `document.querySelector(`+js(sel+" .msg-body")+`).textContent.includes('line 300 of the log')`)
	require.Equal(t, "true", p.eval(`document.querySelector(`+js(btn)+`).getAttribute('aria-expanded')`))
	require.Equal(t, "Show less", p.eval(`document.querySelector(`+js(btn)+`).textContent`))
	require.Equal(t, "true", p.eval(`String(document.activeElement === document.querySelector(`+js(btn)+`))`), "focus stays on the button")
	p.fullShot("webui-expanded")
	p.clickNow(btn)
	p.waitFor("the message folded again", `!document.querySelector(`+js(sel+" .msg-body")+`).textContent.includes('line 300 of the log') && document.querySelector(`+js(btn)+`).textContent.startsWith('Show more')`)
}
