// Package recovery measures how fast jam recovers a large backlog: the
// time from starting jamd to the first delivery, and to every queued
// message redelivered, with (by default) 100,000 messages queued across
// 1,000 rooms for one attached agent.
//
// Setup (not timed) builds, in a fresh data directory, the state a daemon
// finds after a crash with that backlog:
//
//   - a daemon started in-process (internal/jamtest) registers the agent on
//     its embedded hub, imports it (the control API's agent add with a key),
//     creates the rooms with the agent in them and binds each room, all
//     through the APIs a user would call; then it stops;
//   - the embedded hub, opened alone on the daemon's hub directory, gets the
//     messages with hub.SeedMessages: the rows a post writes (message,
//     normalised mentions, one pending delivery for the agent), written in
//     big transactions because posting 100,000 messages through the REST
//     API and the whole pipeline would take longer than the measurement;
//   - jam's store, opened directly, gets the same messages exactly as the
//     pipeline leaves them when it has made them durable and routed them:
//     sealed with the daemon's key and appended to the spool
//     (SpoolAppend), then moved to the queue with the rendered, resealed
//     body (SpoolMoveBatch, which routes each to its room's binding), state
//     queued. Nothing is claimed yet on either side.
//
// Measurement: jamd runs in a child process (this program re-executed with
// ChildEnv set, as package footprint does) on that directory. The clock
// starts just before the child is started. Its engine re-claims every
// queued message on the hub (POST …/processing) and delivers it locally,
// while the agent's socket catches up the rooms' pending messages (each
// found already queued). The parent measures:
//
//   - first delivery: the first time the control API's waitInbox returns a
//     message, which is when an agent could first take one;
//   - all redelivered: the time of the last message.delivered event of the
//     daemon's event stream (the event's own timestamp), once every message
//     has one; and when the control API first answered;
//   - the child's peak resident memory (VmHWM).
//
// Baselines, measured in the same run on copies of the same data:
//
//   - file spool: the seed design's recovery, one file per message (the
//     layout of package ingest's file spool), 1,000 room directories: list
//     the agent's spool, each room directory in order, and read every
//     file. The files are written just before, so both jam and the file
//     spool read from the page cache.
//   - hub alone: the agent takes its pending messages straight from the hub
//     (GET …/messages/next, then POST …/processing), as the end-to-end
//     scenario's baseline does, with the same number of rooms worked on at
//     once as jam's redelivery. Taking all 100,000 this way would take
//     minutes, so by default it takes a sample (Options.HubSample messages)
//     on a copy of the seeded hub and extrapolates linearly; the hub's
//     queries are indexed, so the cost per message does not grow with the
//     backlog, and the sample runs against the full backlog.
//
// PostgreSQL (Options.PostgresURL, a server's URL): after the measurements
// above, the whole setup runs again in a data directory of its own whose
// daemon's store is a database created on that server for the run
// (package pgdb): the in-process daemon creates the agent, the rooms and
// the bindings in it, the hub of that directory gets the same messages,
// and jam's PostgreSQL store (internal/store/postgres), opened directly
// with the daemon's key, gets the same spool appends and queue moves
// through the same store methods as the SQLite one. The child jamd runs
// with that URL as its store (passed in StoreEnv, never on the command
// line), and the same figures are measured the same way, progress being
// read from the database. The database is dropped when the measurement
// ends, whether it succeeded or not. The URL may hold a password: it is
// never written to a result, a log line or an error.
package recovery
