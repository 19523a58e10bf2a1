// Package ingest measures durable ingest: P producers each push 1 KiB
// messages one at a time and wait for each acknowledgement, which must
// mean the message survives power loss (fsynced), before pushing the next
// — the way Band's agent sockets feed jam's spool. It reports acknowledged
// messages per second and the 50th and 99th percentile of one push's
// latency, for three implementations:
//
//   - jam: internal/spool, group commit over the real SQLite store
//     (internal/store/sqlite: WAL, synchronous=FULL), each message sealed
//     (AES-256-GCM) before the push, as the daemon does;
//   - filespool: a faithful copy of the seed's file-per-message spool
//     (temp file, fsync, rename, directory fsync, a usage scan under one
//     process-wide lock); see fileSpool;
//   - jetstream: NATS JetStream embedded in-process (nats-server with file
//     storage and sync_interval "always", so every stored message is
//     fsynced before its acknowledgement; the default syncs every two
//     minutes), publishing with a message id (deduplication, as jam's spool
//     does) and waiting for each publish acknowledgement.
//
// After each acknowledgement the producer consumes the message outside
// the measured latency, so no spool reaches its bound: jam releases the
// entry's budget but leaves its row in the store (the table and its
// indexes grow to tens of thousands of rows, more than a real spool, whose
// entries the engine moves to the queue as they arrive, ever holds); the
// file spool removes the file, so its directory scan stays short; the
// JetStream stream keeps every message. Each of these choices favours the
// baseline.
//
// jam also runs in three more ways, measured against jam above:
//
//   - jam-drained: the same, with the spool drained as messages come: a
//     consumer moves every acknowledged entry to the queue's unrouted
//     bucket (SpoolMoveBatch, up to 64 a transaction, as the engine moves
//     them) and only then returns its budget, so the spool table holds a
//     handful of rows and its unique index a few pages, while the queue
//     grows instead (nothing settles);
//   - jam-postgres and jam-postgres-drained: the same two over
//     internal/store/postgres, each run in a database of its own that it
//     creates on the server named by Env.PostgresURL and drops at Close.
//     The server's own durability settings decide what an acknowledgement
//     means there (fsync and synchronous_commit).
//
// Invariant: a drained target has moved every acknowledged entry once
// Close (or stopDrain) returns, and reports a failed or missing move as
// Close's error.
package ingest
