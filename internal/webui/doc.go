// Package webui is jam's web UI: plain HTML, CSS and JavaScript modules
// embedded in the binary (no build step), and the browser sessions that
// may use the control API.
//
// The UI runs in the browser and talks to the daemon only through the
// control API on the loopback TCP listener (package api), exactly as any
// other client: it reads rooms, messages, participants, agents, the
// unrouted bucket and the status with GET /v1/…, posts as the person with
// POST /v1/rooms/{room}/messages, creates rooms (POST /v1/rooms), adds
// agents (POST /v1/agents) and adds them to rooms (POST
// /v1/rooms/{room}/agents), changes an owned agent's settings (POST
// /v1/agents/{agent}/config), cancels and retries turns (POST
// /v1/turns/{turn}/cancel, /retry), reads a session's change sets (GET
// /v1/sessions/{session}/changesets) and their patches (GET
// /v1/changesets/{cs}/patch, one of at most 4 MiB), archives, removes and
// restores a session's worktree with POST /v1/worktrees/{session}/… (after a
// confirmation step in the page), and follows GET /v1/events as
// Server-Sent Events.
//
// Messages and a turn's answer are Markdown, rendered by the page's own
// renderer (static/js/markdown.js, no third-party code) straight to DOM
// nodes: text always goes in as text nodes, so raw HTML in a message shows
// as text; the only attribute taken from a message is a link's address,
// and only an absolute http, https or mailto URL becomes one (anything
// else renders as its label), opened with target=_blank and
// rel="noopener noreferrer"; images render as links. Long messages show
// their first lines behind Show more. A change set's patch is parsed by
// the page (static/js/changes.js) and each diff line goes in as text, as
// does every file name; at most 400 lines of a file are drawn. Errors show
// as sentences for the API's stable codes (static/js/errors.js), never as
// the raw envelope. A room's delegations (static/js/delegations.js, from
// GET /v1/delegations and the delegation.created and delegation.updated
// events) are drawn as a tree above its composer, each with its page
// (#/delegations/{id}): instructions, inputs and result, all as text.
//
// Package api mounts a UI on its TCP listener: the UI
// serves every path outside /v1/, and api asks Authorize whether a /v1/
// request without the bearer token comes from a signed-in UI page.
//
// Signing in: the daemon mints a one-time login token (LoginToken) and
// prints the URL http://HOST:PORT/?token=TOKEN; `jam ui` mints another
// over the unix socket. A token works for TokenLifetime (10 minutes) and
// once. Opening the link (GET) only shows a page with a Sign in button: a
// link previewer or a prefetch that fetches it spends nothing. The button
// posts the token (a plain HTML form, no script) to POST /signin, which
// must come from this listener's page (Sec-Fetch-Site and Origin); that
// spends the token, starts a session, sets its cookie (HttpOnly,
// SameSite=Strict, Path=/, named after the port because browsers do not
// scope cookies by port) and redirects to /. No other credential opens
// the UI.
//
// Sessions are server-side: the cookie carries a random 32-byte id and
// nothing else; the table keyed by the id's SHA-256 decides. A session
// ends when the browser signs out (POST /signout deletes the row, so the
// cookie replayed afterwards opens nothing), after IdleLifetime (12 hours)
// without a request, or AbsoluteLifetime (7 days) after sign-in, in use or
// not. At most MaxSessions (default 32) live at once; one more sign-in
// ends the least recently used. The table is mirrored to StateFile (mode
// 0600, hashes and times only) so a signed-in tab survives a daemon
// restart; deleting the file, or a file that cannot be read, signs every
// browser out. An event stream (GET /v1/events) already open when its
// session ends runs on until it is closed: sessions are checked when a
// request starts.
//
// Cross-site request forgery: the cookie is SameSite=Strict, but every
// port of 127.0.0.1 is the same site, so Authorize also refuses requests
// whose Sec-Fetch-Site is neither same-origin nor none, and requires a
// state-changing request to carry the header X-Jam-UI: 1 (which no other
// origin can add without a CORS preflight the daemon never answers) and
// an Origin naming the listener. Package api checks the Host header of
// every TCP request against loopback names, which defeats DNS rebinding.
//
// Assets are served under /assets/VERSION/ where VERSION digests every
// embedded file, so they are cached for a year and a new build is picked
// up at once; the page itself is never cached. Every response carries a
// strict Content-Security-Policy (no inline script, nothing loaded from
// elsewhere) and Referrer-Policy: no-referrer.
package webui
