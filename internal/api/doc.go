// Package api serves jam's control API: HTTP with JSON bodies on a unix
// socket (mode 0600, inside the 0700 data directory) for the CLI, and the
// same handlers on a loopback TCP address with bearer-token authentication
// for the web UI.
//
// On the TCP listener every request must name a loopback host (against DNS
// rebinding). A configured UI (Config.UI, the web UI of package webui)
// serves every path outside /v1/, and a /v1/ request without the bearer
// token is accepted when the UI vouches for its browser session (UI.
// Authorize, which also applies the UI's CSRF checks); the server itself
// knows nothing of cookies.
//
// Routes are ServeMux patterns under /v1/. Every error response is the
// envelope of package wire, and errors.go is the one place where Go errors
// become codes and HTTP statuses. Unknown routes and wrong methods get the
// same envelope (not_found, method_not_allowed), never Go's plain-text
// defaults.
//
// openapi.json (OpenAPI 3.1, served at GET /v1/openapi.json) documents
// every route: it is generated from the route table of openapi_gen_test.go
// and the wire types, a test fails when a route registered here is
// missing from it, and the package's tests check every answer of every
// Server they start against it (apitest.OpenAPI).
//
// GET /metrics serves Config.Metrics in the Prometheus text format. It is
// an API path: on the TCP listener it needs the bearer token (or a UI
// session) like /v1/, and the UI never serves it. Every request's duration
// is recorded under its route pattern ("GET /v1/turns/{turn}"), never its
// raw path, which carries ids.
//
// Both listeners bound their connections: headers within
// Config.ReadHeaderTimeout (10 s), the whole request, body included,
// within Config.ReadTimeout (30 s), so an unauthenticated POST whose body
// never comes is closed; an answer within Config.WriteTimeout (2 min; the
// waitInbox long poll adds its wait, an event stream sets a deadline per
// write); a keep-alive connection idle for Config.IdleTimeout (60 s) is
// closed. Each listener caps its connections on its own
// (Config.MaxSocketConns 256, Config.MaxHTTPConns 512; at the cap the one
// idle longest is closed, see package connlimit), so a flood of TCP
// connections never keeps the CLI off the socket. The socket is bound
// under a 077 umask (datadir.ListenUnix). Every API answer carries
// X-Content-Type-Options: nosniff and Cache-Control: no-store. Accept and
// protocol errors of the servers are logged at Warn.
//
// The server derives its base context from the daemon's, so a stop cancels
// every request; Stop first ends held-open requests (the waitInbox long
// poll and GET /v1/events streams), then drains in-flight requests until
// its context expires and closes what is left. An event stream writes
// with a deadline, so a client that stops reading is disconnected rather
// than holding a handler, and a stop cuts a write it is blocked in.
package api
