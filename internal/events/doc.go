// Package events is jam's event fan-out: every step of the daemon that
// someone may want to watch (a message queued, delivered or settled, an
// agent socket going up or down) is published here, sequenced by the
// store, and handed to every subscriber of the client event stream
// (GET /v1/events, `jam events`, the web UI).
//
// # Durable facts, notifying stream
//
// Events are durable: the [Broker] commits each one to the store's event
// log (store.Events) before any subscriber sees it, and the store assigns
// its sequence. The sequence is the stream's cursor: a client that lost
// its connection, or fell behind, resumes with "after SEQ" and the missed
// events are replayed from the store, not from a lossy memory buffer.
//
// A replay page is served from a bounded cache of the most recently
// committed events (Config.RecentEvents and RecentBytes) when the cache
// holds the whole range, which is the common case of a subscriber that
// lagged a moment ago; the cache holds exactly what the store holds.
// Without it, 100 subscribers on two cores under a saturating publisher
// fell into a replay storm: each resumption read the disk, which made more
// of them lag, and BenchmarkFanout dropped from ~120k to ~3k events/s.
//
// The log is pruned at Start and every Config.PruneInterval to the newest
// Config.RetainEvents events, none older than Config.RetainAge (100,000
// and 7 days by default); a client that resumes from before the pruned
// edge gets what is retained.
//
// # Publishing
//
// [Broker.Publish] validates the event and puts it in a bounded publish
// buffer. One writer goroutine takes an event, then every event already
// waiting (up to Config.MaxBatch), appends them in one store transaction
// (group commit: one fsync per batch), and then hands the batch to the
// subscribers. Publish therefore never waits for a subscriber. It waits
// only when the publish buffer is full, which happens only when publishers
// outpace the store; then it blocks until the writer frees room, its
// context ends or the broker stops. An accepted event is never dropped:
// a failed commit is retried with backoff. The exceptions are an event
// the store refuses as invalid (validation at Publish makes this a bug,
// and only that event goes) and a Stop whose context ends before the
// buffer is committed; both are logged and counted in [Stats].
//
// # Ordering
//
// The events of one broker (one workspace) are committed, and delivered to
// every subscriber, in one order: the order of their sequences, which is
// the order Publish accepted them. Events published by one goroutine keep
// their order; events of concurrent publishers are ordered by whichever
// reached the buffer first.
//
// # Subscribers and the slow-subscriber policy
//
// Each [Subscription] has its own bounded buffer (Config.SubscriberBuffer,
// 1024 by default). The writer appends each committed batch to every
// buffer under one lock and never waits: a subscriber whose buffer is full
// is marked lagged and receives nothing more. Once it reads again it gets
// what its buffer holds, then a stream_resync event whose Seq is the last
// event it was given, and its stream ends; the client resumes with
// "after=SEQ" and the store replays what it missed. A stalled subscriber
// costs the others nothing but the few instructions of noticing it is
// full.
//
// [Broker.Subscribe] with a position replays from the store and then
// switches to live events without a gap or a duplicate: the subscription
// is registered under the fan-out lock together with the last sequence
// handed out (its floor). Every event up to the floor is already in the
// store and is replayed, a page at a time as the subscriber reads; every
// later event reaches its live buffer, and replay stops at the floor.
// Subscribe with [Live] instead starts with a reset event whose Seq is the
// floor and whose data holds the snapshot of every registered provider
// ([Broker.RegisterSnapshot]), taken under the same lock. A provider
// reflects at least every event up to the floor (publishers update their
// state before they publish); it may also reflect events after it, which
// then follow the reset, so clients apply events idempotently. A failing
// provider is reported in the reset and does not stop the stream.
//
// # Peer logs
//
// With Config.PeerLogDir set, every event that names a peer is also
// appended as one JSON line to <dir>/<profile>/<scope>.log by the writer,
// after the fan-out, rotated at 5 MiB to a single .1 backup, with at most
// 16 files open at once. A line holds the event's sequence, kind, time,
// peer, room and message, and the size of its data, never the data: that
// may be what a person or an agent wrote (a turn's output), which is kept
// only sealed, in the store. Logs an earlier build wrote with the data in
// them are rewritten that way at Start.
//
// # Content at rest
//
// The broker hands event data to the store as it is; the store seals each
// payload with the daemon key, bound to its workspace and sequence (see
// package sqlite), and opens it for a replay. The recent-events cache and
// the subscribers' buffers are memory only.
//
// # What this fixes in the fan-out it replaces
//
// The seed's Fanout published through one in-memory broadcast channel of
// 256 events shared by every peer and every human feed, after appending
// the peer log line and updating projections under the same mutex. One
// burst lagged every slow subscriber at once, a lagged subscriber got a
// bare resync and had to re-hydrate everything through query methods
// because nothing could be replayed, and publishers waited on file I/O
// under the lock. Here the store is the buffer of record: each subscriber
// has its own buffer, so a burst lags only the subscribers that did not
// keep up, and a lagged subscriber resumes from its exact position with a
// replay instead of a re-hydration. Publishers wait for nothing but a
// full publish buffer; disk writes (the commit and the peer logs) happen
// on the writer goroutine.
//
// # Lifecycle
//
// [Broker.Start] prunes the log, loads its last sequence and starts the
// writer and the pruner. [Broker.Stop] refuses further publishes, lets
// the writer commit and hand out everything already published, ends every
// subscription (they return an error wrapping jam.ErrStopping), and waits
// for both goroutines.
//
// One broker serves one workspace; a daemon with several workspaces runs
// one per workspace over the same store.
package events
