// Package band is jam's client of the Band protocol: the REST Agent and
// Human APIs, and the Phoenix v2 WebSocket feeds of agents and people. The
// same code talks to real Band and to jam's embedded hub.
//
// REST. One [HTTP] is shared by every client of a daemon. It bounds the
// requests in flight (16 by default; a response holds its permit until its
// body is read or closed, so a slow body cannot escape the bound), keeps 8
// idle connections per host, times requests out after 15 s and refuses
// redirects. A [Client] binds it to one credential; when the platform says
// the credential expired, the client asks the credential's owner to refresh
// once and retries. Both error envelopes Band has used (nested and flat)
// become an [*Error] that says whether the same call may succeed later.
//
// WebSocket. A [Socket] keeps one Phoenix session alive: fresh refs for
// every join, a heartbeat every 25 s (one left unanswered at the next tick
// ends the session), reconnection with backoff from 2 s doubling to 60 s
// plus up to 1 s of jitter, reset after a session that lasted 60 s, and a
// fresh credential read for every connection. Pushes are accepted when their
// join_ref matches the channel's join or is null. A supersede push is
// terminal.
//
// Credentials. A key or token travels only in a request header (X-API-Key,
// or Authorization: Bearer), on REST and on the WebSocket handshake alike,
// never in a URL; neither REST nor the handshake follows a redirect, which
// would carry the header to whatever host it names. Every error that quotes
// a URL (net/http's [*url.Error], the socket's dial failures, a bad base
// URL) has the URL's query, fragment and userinfo cut before it is
// returned, so what reaches a log or an event names no secret.
//
// [AgentFeed] drives an agent's socket: it joins the agent's own channels,
// lists the agent's rooms over REST (bounded by 20 s), joins every room,
// replays each room's unprocessed messages over REST, and only then reports
// Up. A failed room listing ends the session: the feed never goes Up deaf.
// [HumanFeed] drives a person's socket over a bounded working set of rooms.
package band
