// Package mcp is jam's MCP server for the agents it runs: the tools an
// owned agent uses to act in its room (room_reply, room_no_reply,
// room_send, room_participants, room_history, changeset_capture), served
// over streamable HTTP on loopback. What a tool does is Actions, which
// the daemon provides; this package owns the wire, the credentials and
// the bounds.
//
// Invariants:
//
//   - Every session (jam.SessionID) that is given the server has its own
//     bearer token, from Grant. The token is the only source of the
//     session: no tool takes a session, room or agent argument, so a call
//     can act only for the session its token names. Ids of other objects
//     in arguments are checked by Actions (another session's object is
//     not_found).
//   - A token is 32 bytes (base64url), derived with HMAC-SHA256 from a key
//     drawn at New and the grant's serial number, so Grant can give the
//     same token again while the server keeps only its SHA-256. Tokens
//     live as long as the server or until Revoke; a restart invalidates
//     every one. A token is never logged, echoed in an error, or put in
//     a URL.
//   - Nothing reaches the SDK unchecked: the Host header must be loopback
//     (a guard against DNS rebinding), a request with an Origin header is
//     refused (a browser page cannot call the tools), only POST, GET and
//     DELETE at Path are served, bodies are bounded (413), and a request
//     without a valid token is answered 401 with a WWW-Authenticate:
//     Bearer header and {"error":{"code":"unauthenticated","message":…}}.
//   - A call's arguments are decoded by this package's decoders, which
//     check everything the input schema says (types, required fields,
//     no unknown fields, lengths, counts, ranges) and answer
//     "invalid_argument: FIELD: …" without calling Actions.
//   - Every failure of a call is a tool result with IsError and the text
//     "CODE: message", CODE from the sentinel the error wraps (see
//     [Code]). An error wrapping none is "internal" with a fixed message;
//     its detail is logged, not returned.
//   - One session's calls are bounded: CallsPerSecond with bursts of
//     Burst, and at most MaxConcurrent inside Actions at once. A call
//     over either bound is answered rate_limited at once, never queued,
//     and no session's calls affect another's bounds.
//   - Each call is logged at debug with its session, tool, code and
//     duration; never its arguments or results.
//
// The server is stateless in the SDK's sense (StreamableHTTPOptions.
// Stateless): every POST is served by a fresh SDK session and no
// Mcp-Session-Id is kept. jam's tools need no server-to-client requests
// and no notifications, the agent's identity is the token rather than an
// MCP session, and so there is no session table to bound, expire or
// hijack, no idle SSE stream to hold a connection open (GET answers
// 405), and a shutdown waits only for calls under way. The stateless
// mode is also the only one in which the SDK speaks the 2026-07-28
// protocol. Responses are application/json rather than event streams.
//
// Dispositions (room_reply, room_no_reply, room_send) are staged for the
// session's running turn and committed when it completes; the tools'
// descriptions say so, because an agent otherwise expects a reply to
// appear at once.
package mcp
