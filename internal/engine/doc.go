// Package engine is jam's inbound pipeline and settlement: it turns a Band
// message addressed to an agent into a durable, routed, claimed and
// delivered queue row, and settles it on Band only when the agent
// explicitly replies or acknowledges.
//
// For every inbound message, in order:
//
//  1. Spool. Inbound seals the message and pushes it to the spool, which
//     returns once the message is fsynced (group commit). Duplicates of a
//     spooled, queued or settled message stop here. A message the disk
//     refuses (full, or not writable) is not acknowledged: Inbound retries
//     it with backoff, holding the peer's feed meanwhile so that no later
//     message overtakes it, and if the daemon stops first Band still holds
//     it for redelivery.
//  2. Room lane. One goroutine per (peer, room) lane takes spooled entries
//     in arrival order; at most MaxActiveLanes lanes process at once, so a
//     busy room never starves the others and the daemon stays bounded.
//  3. System markers ("[system:…]") are claimed and marked processed on
//     Band at once and never queued.
//  4. Mentions. @[[uuid]] tokens are rewritten to @handle for the agent;
//     addressed_to_user is computed from the raw content.
//  5. Route and enqueue. The spool entry moves to the queue in one store
//     transaction that reads the binding owning (peer, room) inside it, so
//     a concurrent bind or steal cannot lose or misroute the message.
//     There is no default session: a room nobody owns keeps its messages
//     in the unrouted bucket until a binding claims the room.
//  6. Claim. POST …/processing after the local write, so a refused or lost
//     answer never leaves remote work without a local record. Retryable
//     failures (408, 409, 425, 429, 5xx, expired auth, transport) retry
//     with backoff, bounded, in place: the room's later messages wait, so
//     its agent sees the room in order (a lane is one room's, so the other
//     rooms go on). Each retry re-reads the owner of the message; retries
//     given up leave the row queued for a later redelivery.
//  7. Deliver through a one-method Deliverer that must return quickly,
//     then record the row delivered. A record refused for now (the store
//     full or unavailable) is retried in place with the same bounded
//     backoff, so a room's later messages never reach its agent's inbox
//     ahead of this one.
//
// Delivery never settles. Ack and Reply re-claim, settle on Band, and only
// then remove the row locally; a reply is recorded durably as an intent
// before it is posted, and a resumed reply checks the room for parts that
// were posted before a crash, so no reply is posted twice. A reply posts
// at most MaxReplyParts parts of at most MaxPartBytes; a longer one is cut,
// its last part ending with a note of the bytes not posted.
//
// Fail marks a message its agent could not serve (the command did not
// start, the turn failed or was cancelled) failed on Band with a one-line
// reason of at most MaxFailReason bytes. It never settles and never
// removes the row: the message stays queued, a later redelivery claims it
// again, and the reply of the turn that answers it settles it. A mark Band
// refuses for now is retried in the background (bounded), never in the
// lane; a mark lost to a stop is not kept, since the message itself is,
// and its next failed turn marks it again. RefuseRoom does the same for
// every message of a room its agent cannot serve at all (no session could
// be made there), as each lands unrouted, until ServeRoom.
//
// RemovePeer forgets a peer jam no longer hosts: its spooled and queued
// rows, bindings and reply intents go in one store transaction, without a
// remote write (its messages stay unsettled on Band), and its spool budget
// is released.
//
// A spool entry or queue row that can no longer be read is quarantined
// and reported, and its room goes on; see quarantine.go.
//
// Compared with the seed design: no file-per-message spool or directory
// scans, no process-wide lock held across I/O, no busy-wait retry of the
// spool head (a lane sleeps on a timer only after a failure and is woken
// by new entries), and deduplication by message id at the spool, the
// queue and the settled tombstones.
package engine
