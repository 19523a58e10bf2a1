// Package spool is the durable landing of inbound messages: every message
// addressed to an agent is pushed here, and [Spool.Push] returns only once
// the message is committed (fsynced) to the store. Nothing else happens to
// a message before that.
//
// # Design
//
// A single writer goroutine owns all writes. [Spool.Push] validates the
// entry, reserves room in its peer's bounds, and hands the entry to the
// writer over an unbuffered channel. The writer takes one entry, then every
// other entry already waiting (up to Config.MaxBatch), appends them all in
// one store transaction (store.SpoolAppend: one fsync), and only then
// answers each push of the batch. While it commits, new pushes queue up on
// the channel and form the next batch, so the cost of an fsync is shared by
// every push that arrived during the previous one: the busier the spool,
// the bigger the batches. Because producers wait for their answer before
// pushing again, the writer also lingers briefly (at most half its last
// commit, and never with a single producer) for as many pushes as its last
// commit carried, so batches stay full instead of alternating between a
// few early arrivals and the rest. A failed commit fails every push of its
// batch — none is acknowledged, so the caller (and Band's replay) tries
// again — and the next batch proceeds. A commit the disk refused (full,
// a file at its size limit, the data directory read-only) fails its
// pushes with an error wrapping jam.ErrStorageFull; nothing of the batch
// is kept, its capacity is returned, and the writer goes on, so pushes
// succeed again as soon as there is room.
//
// Per peer the spool keeps a count of entries and bytes (the length of the
// sealed message), loaded from the store at [Spool.Start] and adjusted on
// every push, duplicate and [Spool.Release]. A push whose peer is at
// Config.MaxEntriesPerPeer or Config.MaxBytesPerPeer waits until Release
// frees room or its context ends: a full spool pushes back on the one peer
// that filled it, never on other peers, and never drops a message. (An
// entry larger than the byte bound on its own is admitted when its peer's
// spool is empty, so it cannot wait forever.)
//
// Duplicates are decided by the store, atomically with the append: a message
// already spooled, queued or settled for its peer is not appended, and
// Push reports appended=false without an error.
//
// # What this fixes in the file-per-message spool it replaces
//
// The seed's RoomSpool wrote one JSON file per message (temp file, fsync,
// rename, directory fsync), and before each write scanned every file under
// the agent's spool root to compute usage and read every file of the room
// to deduplicate, all under one process-wide lock. That made each push
// O(entries) and serialised every push of every agent behind one fsync,
// and it left message content in plaintext files until it was queued.
// Here:
//
//   - a push is O(1) apart from the shared commit: a map lookup under a
//     mutex that is never held across I/O, and a channel send; usage is
//     counted, not scanned, and deduplication is a lookup in the store's
//     set of spooled messages and index probes of the queue and the
//     settled tombstones inside the commit;
//   - concurrent pushes share one transaction and one fsync (group commit),
//     instead of one file, one fsync and one directory fsync each;
//   - moving an entry to the queue is one store transaction
//     (store.SpoolMove), so a crash never leaves a message in both or in
//     neither, and nothing needs rediscovering or promoting at start;
//   - the content is sealed by the caller (see package secret) before it is
//     pushed, so the spool never holds plaintext;
//   - bounds apply backpressure per peer; a full peer stalls only its own
//     pushes, and a message is never dropped.
//
// # Lifecycle
//
// [Spool.Start] loads usage and starts the writer. [Spool.Stop] makes every
// push that has not reached the writer return an error wrapping
// jam.ErrStopping (including pushes waiting for room), lets the batch being
// committed finish and answer its pushes, and waits for the writer. If
// Stop's context ends first, the commit in flight is cancelled (its pushes
// fail with jam.ErrStopping) and Stop still waits for the writer to exit.
// The writer's context is detached from Start's, so only Stop ends it.
package spool
