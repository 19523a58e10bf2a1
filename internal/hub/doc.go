// Package hub is jam's embedded Band-compatible server: a runnable,
// durable implementation of the protocol in docs/band-protocol.md, so jam
// runs offline with no account and every test talks to a real server over
// real sockets. The same client code works against the hub and against
// real Band.
//
// # Lifecycle
//
// [New] validates a [Config]; [Hub.Start] opens and migrates
// <DataDir>/hub.db, ensures the owner user (its user key is written to
// <DataDir>/owner.key with mode 0600 on first start and reused while it
// verifies), listens, and returns once serving. [Hub.Stop] closes every
// socket with 1012 (service restart, so clients reconnect), drains HTTP
// until its context ends, waits for every goroutine the hub started (the
// HTTP serve loop, every request and socket handler, each socket's writer,
// the activity expiry loop) and closes the store. [Run] wraps both for
// humans and the CLI.
//
// # Store
//
// All state lives in one SQLite file of its own, opened with the pool
// layout, pragmas and migrator the store's file uses too
// (internal/sqlitedb: WAL, synchronous=FULL, foreign keys, a 5 s busy
// timeout; one writer connection with IMMEDIATE transactions and a
// query_only read pool). SQLite checkpoints the WAL itself. Migrations are
// the embedded migrations/NNNN_name.sql files, applied at Start with their
// checksums recorded. Tables:
//
//   - users, agents: identities. Agents are soft-deleted so old messages
//     keep their sender's name; their handle is "<owner handle>/<slug>".
//   - api_keys: SHA-256 of each key (keys are 32 random bytes), pointing at
//     a user or an agent. A key is shown only when minted.
//   - rooms, participants: membership and roles.
//   - messages: every message of every type; content of text messages is
//     stored normalised (see package mention); metadata.mentions as JSON;
//     an event's free-form metadata as JSON.
//   - deliveries: one row per (text message, mention-kind agent), the
//     agent's queue, with status delivered → processing → processed|failed.
//   - attempts: one row per POST …/processing.
//
// Activity ("working") indicators are memory-only; they expire anyway.
//
// Message content is stored in the clear, as Band stores it: the hub
// stands in for Band, the service that holds the conversation, and is
// exempt from jamd's rule that what a person or an agent wrote is kept
// only sealed (package sqlite). Whoever can read hub.db can read every
// message of the embedded hub.
// SQL lives as named constants in identity.go, room.go and message.go.
//
// # Delivery model
//
// The REST queue (GET …/messages, …/messages/next) is the source of truth;
// the WebSocket only wakes clients up. Every write runs in one transaction
// and its pushes are queued after commit while Hub.writeMu is held, so
// sockets see events in commit order. Pushes follow band-protocol.md §4.4:
// agent sockets get message_created only for text messages that mention
// them and that they did not send; user sockets get every text
// message_created, message_updated on each delivery-status change (the
// full message with metadata.delivery_status), and event_created for
// events. room_participants gets participant_added and
// participant_removed; agent_rooms / user_rooms get room_added and
// room_removed. A removed participant's sockets also get phx_close on the
// room's channels. Pushes carry the channel's join_ref and a null ref.
//
// # Connections
//
// The HTTP server bounds every connection: a request's headers must come
// within Config.ReadHeaderTimeout and the whole request, body included,
// within Config.ReadTimeout; an answer must be written within
// Config.WriteTimeout; a keep-alive connection idle for Config.IdleTimeout
// is closed. At most Config.MaxConns connections are held, WebSockets
// included; at the cap the one idle longest is closed to make room (see
// package connlimit), so a flood of idle connections never keeps a
// client out. An upgraded WebSocket has no HTTP deadline left; its own
// bounds (heartbeat timeout, per-frame write timeout) apply. Accept and
// protocol errors of the server are logged at Warn.
//
// # Sockets
//
// Each socket is read by its HTTP handler goroutine and written by one
// writer goroutine fed by a bounded queue (Config.SocketQueue frames). A
// push never blocks: a socket whose queue is full is closed with 1013. A
// read waits at most Config.HeartbeatTimeout, so a silent socket is
// dropped. Closing asks the writer to flush what is queued and then send
// the close frame, which is how a superseded agent socket gets its
// supersede push before 1008. One socket per agent id: a new one
// supersedes the old (or, with on_conflict=reject, is refused with 409).
// Close codes: 1003 binary frame, 1008 malformed frame / superseded /
// agent deleted, 1009 oversize frame (phoenix.MaxFrameBytes), 1011 missing
// vsn=2.0.0 (as Band documents), 1012 hub stopping, 1013 slow consumer.
// Lock order: activity.mu, then broker.mu, then socket.mu; Hub.writeMu is
// taken before any of them.
//
// # Choices where Band is silent
//
//   - Rooms are created with type "direct" and status "active" (Band's
//     defaults); nothing changes either, and no room is ever deleted, so
//     room_deleted is never pushed.
//   - A new /processing call while an attempt is still open closes that
//     attempt as failed ("abandoned: superseded by attempt N"). /processing
//     on a processed message is 422.
//   - 422 codes Band leaves unnamed: no_active_attempt, invalid_cursor,
//     invalid_pagination, has_execution_history, already_participant;
//     other validation failures are validation_error. Every 422 carries
//     details keyed by JSON pointer.
//   - A mention by handle resolves among the room's participants only
//     (handle_not_found otherwise); by id, a non-participant is
//     mentioned_participant_not_in_room. Handles match case-insensitively.
//   - "Execution history" for DELETE /me/agents is processing attempts;
//     force deletes them and the agent's deliveries. Rooms the agent owned
//     alone keep no owner.
//   - The hub has one user, the owner. Peers are the owner and its agents;
//     an agent may add its siblings and its owner to a room, a user its own
//     agents. Every hub agent is "external" and unlisted.
//   - Roles: only a room's owner or admin may add a participant as owner
//     or admin (403 forbidden otherwise; anyone in the room may add
//     members). A room never loses its last owner nor its last human
//     owner (403 cannot_remove_sole_owner), and an agent may never remove
//     a person who owns the room (403 forbidden), so no agent can lock
//     the owner out of a room.
//   - room_activity:{room} (the hub's own extension) carries activity
//     pushes {participant_id, working, expires_at}; joining it replays the
//     current indicators. POST …/activity needs only room membership.
//   - REST takes an agent's own key on /agent routes; the owner key +
//     agent_id form works on the WebSocket only, as Band documents.
//   - Cursor listings of rooms, agents and participants page in memory
//     (they are small); message listings page in SQL by seq.
//   - Band rejects CR, LF and NUL in titles; the hub rejects every control
//     character (C0 including tab, DEL, C1) in room titles, agent names
//     and user names (422 validation_error), since they reach terminals
//     verbatim. A request body that is not valid UTF-8 is 400 invalid_json
//     (encoding/json would otherwise replace the bad bytes silently);
//     bodies are at most 1 MiB (413 payload_too_large) and JSON nesting
//     deeper than 10,000 is invalid_json.
//
// # Not implemented
//
// Contacts, memories, and room tasks/board answer 501 not_implemented.
// JWT authentication, plan quotas (limit_reached), rate limits, message
// edits and deletes (message_updated for edits, message_deleted), threads,
// the 204 "execution stopped" answer of /processing, and agent_control's
// agent.control events are not implemented.
package hub
