// Package webui is jam's web UI: plain HTML, CSS and JavaScript modules
// embedded in the binary (no build step), and the browser sessions that
// may use the control API.
//
// The UI runs in the browser and talks to the daemon only through the
// control API on the loopback TCP listener (package api), exactly as any
// other client: it reads rooms, messages, participants, agents, the
// unrouted bucket and the status with GET /v1/…, posts as the person with
// POST /v1/rooms/{room}/messages, archives, removes and restores a
// session's worktree with POST /v1/worktrees/{session}/… (after a
// confirmation step in the page), and follows GET /v1/events as
// Server-Sent Events. Package api mounts a UI on its TCP listener: the UI
// serves every path outside /v1/, and api asks Authorize whether a /v1/
// request without the bearer token comes from a signed-in UI page.
//
// Signing in: the daemon mints a one-time login token (LoginToken) and
// prints the URL http://HOST:PORT/?token=TOKEN; `jam ui` mints another
// over the unix socket. Opening it exchanges the token for a session
// cookie (HttpOnly, SameSite=Strict, named after the port because
// browsers do not scope cookies by port) and redirects to /; the token is
// then spent. No other credential opens the UI. The cookie is stateless,
// signed with HMAC-SHA256 under the key in KeyFile (mode 0600 in the data
// directory), so a signed-in tab survives a daemon restart; deleting the
// key signs every browser out.
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
