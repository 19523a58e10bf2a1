// Package endtoend measures the messaging path on the embedded hub, end to
// end: the room owner posts a message mentioning an attached agent, and the
// agent receives it and settles it.
//
//   - jam: a real daemon in-process (internal/jamtest) with its embedded
//     hub. The owner posts through the hub's REST API; the message reaches
//     the daemon over the agent socket, is spooled (fsynced), routed to
//     the binding of its room and claimed on the hub; the agent, looping
//     on the daemon's control API like `jam wait` and `jam ack`, takes it
//     with waitInbox (delivery) and acknowledges it with ack, which
//     settles it on the hub and then locally (settlement).
//   - hub (baseline): the hub alone, with no daemon. The agent reads the
//     message straight from the hub's REST API right after the post
//     (GET …/messages/next), then claims and settles it there (processing,
//     processed). This is the least an agent could do on the platform;
//     the ratio is jam's overhead for durability, routing and the local
//     inbox.
//
// Each runs twice: at a fixed offered load (an open loop posting on a
// schedule; latencies count from the scheduled time, so a poster that
// falls behind shows in them) and at saturation (closed loop: each of
// Options.Posters posters posts a message, waits until it is settled and
// posts the next, so that many messages are in flight at any time). Latencies are from the post to delivery
// and to settlement; rates are settled messages per second.
package endtoend
