// Package roomfeed is the human room feed and room message cache: it
// projects what the account's person sees in each room from the person's
// socket and from Band history, publishes every change as a sequenced
// [Mutation], and keeps the newest messages of each room in the store so
// a client can show a room at once, across restarts.
//
// # Projection
//
// A [Feed] serves one account. Per room it keeps the retained window (the
// newest Config.Window messages, 100 by default, by inserted_at then id)
// and a room sequence that increments on every accepted mutation: an
// upsert (message_created, message_updated, event_created; the row is the
// whole message in Band's shape, including metadata.delivery_status, so a
// client can show each agent's queued/processing/processed/failed state)
// or a delete. An upsert identical to the projected row is ignored, and so
// is one of a message older than the whole full window. A delete is always
// accepted, so a snapshot fetched before it cannot resurrect the message.
//
// Every accepted mutation goes, under the feed's lock and therefore in
// sequence order, first into the account's journal, then to
// Config.Publish (the event broker), and only then to persistence: the
// live event never waits for the store.
//
// # Persistence
//
// One worker goroutine writes to the store, fed by a bounded channel
// (Config.QueueSize, 256). When the channel is full the mutation is not
// queued: its room is marked dirty (together with any attention item the
// mutation staged), and later mutations of a dirty room are coalesced the
// same way. A dirty room holds no rows: after Config.FlushInterval
// (100 ms) the worker writes each dirty room's whole window as it is then,
// in one replacing write. The dirty set is therefore bounded by the
// account's rooms, and its attention items by Config.MaxDirtyAttention per
// room. Before a checkpoint the worker writes what is queued, since those
// mutations predate their room's dirty mark. The store refuses a write at
// or below the room's stored sequence (store.RoomCache), so nothing can
// regress the cache; a failed write makes its room dirty again and is
// retried by the next flush.
//
// A text message from someone else that mentions the person with an
// @[[user_id]] token stages an attention item, in the same transaction as
// the message write (store.RoomCacheApplyParams.Attention).
//
// # Refresh: snapshot plus live merge
//
// [Feed.Refresh] captures the room's sequence, fetches the newest page of
// history over the Human API without holding any lock, then, under the
// lock, merges the page with the journal's mutations of that room above
// the captured sequence, and reconciles the projection with the result
// (messages gone from Band are deleted, every other one upserted; an
// identical upsert is a no-op). The journal keeps the account's last
// Config.JournalSize (512) mutations across all its rooms, so memory
// follows traffic rather than the number of rooms; each room records the
// highest sequence the journal evicted (its floor), and a capture below
// the floor cannot be merged, so the refresh fetches again (at most
// Config.RefreshAttempts times). Concurrent refreshes of one room share
// one flight; a follower whose leader's caller gave up leads a new one.
//
// A room is cold at start and after the socket reconnects (the human
// socket has no catch-up) and when it joins the watched set; the first
// read of a cold room refreshes it.
//
// # Restart
//
// [Feed.Start] seeds every projection from the store (the cached window
// and the stored sequence), so sequences continue upward across restarts.
//
// # Membership system rows
//
// Some Band deployments send participant_added without writing a durable
// row. [Feed.ParticipantAdded] waits Config.MembershipGrace (2 s); if no
// platform membership row about the participant (an internal system or
// action message naming its id) lies within Config.MembershipWindow (15 s)
// of the event, the feed synthesizes a "X joined" row in Band's message
// shape, publishes it as an unsequenced MutationSystem and stores it
// (store.RoomSystemAppend, 200 rows per room). Reads merge these rows in,
// and a platform row about the same participant within the window
// supersedes the local one. Timers run on the injected [Clock].
//
// # Goroutines and locks
//
// The feed owns its worker and every timer callback: [Feed.Stop] cancels
// pending timers, writes what is queued or dirty, and waits for all of
// them. Feed.mu guards the projections, the journal and the dirty set; it
// is never held across I/O, but it is held while Config.Publish runs,
// which is what orders publications. Feed.flightMu guards the refresh
// flights and is never held with Feed.mu.
//
// # What this fixes in the feed it replaces
//
// The seed's run_account_feed took 17 parameters and six callbacks into a
// 58,000-line manager; here the feed is one small type with one publish
// function and three narrow interfaces (store, sealer, Human API), and the
// daemon adapts the socket's events to its methods.
package roomfeed
