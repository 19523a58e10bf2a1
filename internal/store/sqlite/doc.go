// Package sqlite is the SQLite dialect of the [store.Store] seam, built on the
// pure-Go modernc.org/sqlite driver so jam builds without cgo.
//
// # Connections
//
// A [Store] owns three *sql.DB pools on one database file, opened by
// internal/sqlitedb (which the embedded hub's file shares):
//
//   - the writer: exactly one connection, so writes queue in Go instead of
//     spinning on SQLITE_BUSY. Transactions begin IMMEDIATE (_txlock), taking
//     the write lock up front, so a read-then-write transaction can never
//     fail halfway with a lock upgrade error.
//   - the reader: Config.ReadConns connections with query_only set, so a read
//     path that tries to write fails loudly. WAL lets them read while the
//     writer commits.
//   - the checkpointer: one connection used only to checkpoint the WAL.
//
// Every pragma is set through the DSN (_pragma=...), because database/sql may
// open a fresh connection at any time and a pragma run once on one connection
// would silently be missing on the next. All connections use WAL,
// synchronous=FULL (a commit survives power loss, not only a crash),
// foreign_keys=ON, temp_store=MEMORY (statement journals and sorts never
// touch a temporary file; a multi-row statement such as the batch insert
// of SpoolAppend keeps one) and a 5 s busy timeout, the last for other
// processes such as a backup tool holding the file.
//
// # Checkpoints
//
// The writer disables SQLite's automatic checkpoint (wal_autocheckpoint=0),
// which would otherwise run inside whichever commit crossed the threshold and
// add its latency to that caller. Instead a goroutine owned by the Store runs
// a PASSIVE checkpoint every Config.CheckpointInterval, which never blocks
// readers or the writer, and a TRUNCATE checkpoint once the -wal file grows
// past Config.CheckpointTruncateBytes, so a long-lived daemon's WAL cannot
// grow without bound. TRUNCATE holds writers off while it runs, which is why
// it is kept for an oversized WAL rather than run every tick. [Store.Close] stops that goroutine, waits for it, and
// truncates the WAL one last time.
//
// # Schema
//
// Migrations are the embedded migrations/NNNN_name.sql files, loaded with
// [store.LoadMigrations] and applied at [Open] by internal/sqlitedb's
// migrator, one transaction each, and recorded with their checksum in
// schema_migrations. Open refuses a database whose schema is newer than
// this build, or whose applied migrations differ from the embedded text:
// running against a schema the code does not
// describe would corrupt data more quietly than refusing to start.
//
// SQL is kept as named constants, one file per table (workspace.go,
// setting.go, daemonrun.go, account.go, peer.go, binding.go, spool.go,
// queue.go, settled.go, reply.go, events.go, output.go, results.go, jobs.go; roomcache.go keeps the four room cache
// tables together), next to the methods that run it. Times are stored as
// BIGINT UTC microseconds and returned in UTC.
//
// # Messaging
//
// Every write of the inbound pipeline that must be atomic is one short
// IMMEDIATE transaction: SpoolAppend (a whole batch, one fsync), SpoolMove
// (delete the entry, read the room's owner, insert the queue row),
// SpoolDrop and QueueSettle (delete, write the tombstone), and
// BindingPut/BindingDelete (steal the room, write the binding and re-home
// the queue rows). IMMEDIATE takes the database's write lock before the
// first read, so each such transaction is serializable against every
// other connection to the file, this Store's or another process's (the
// busy timeout makes the other wait): the owner SpoolMove reads cannot
// change before its row is inserted, and two BindingPut of one room run
// one after the other. No transaction waits on anything but SQLite, and
// the hot statements are index lookups (TestQueries_useIndexes keeps them
// so).
//
// What the database guarantees, whatever the number of handles on it:
//
//   - A message is spooled once per lane: the unique index
//     spool_lane_message (migration 0017) refuses a second copy, and
//     SpoolAppend's batch insert skips it (INSERT OR IGNORE) and reads
//     back which entries went in; a message already queued or settled is
//     skipped by the NOT EXISTS probes of the same statement. The
//     in-memory set of spooled messages (spoolSet in spool.go) is a cache
//     that saves the insert of a message it knows is spooled; a miss
//     goes to the insert and the index.
//   - A turn's move and a turn's output are fenced by their own
//     statement: TurnTransition is one UPDATE whose WHERE names the from
//     state, the writer's lease and generation and, where the move needs
//     it, that the lease is live; TurnOutputAppend inserts only while the
//     turn is active on the writer's lease; LeaseEnd updates only a live
//     lease. No row changed is a refused write, which a re-read in the
//     same transaction reports as jam.ErrNotFound, jam.ErrConflict or
//     jam.ErrLeaseLost.
//   - A queue mark counts its delivery in the UPDATE (attempts =
//     attempts + 1), never from a value read before.
//   - Jobs (jobs.go): a claim is one UPDATE ... RETURNING, in an
//     IMMEDIATE transaction, whose target the same statement chooses (the
//     oldest due job), so the write lock is held from the choice to the
//     commit and two handles never claim one job in one generation; every
//     worker write names the generation and the running state in its
//     WHERE clause (zero rows: jam.ErrLeaseLost, after a read tells a
//     missing job apart). An enqueue with an idempotency key is INSERT
//     ... ON CONFLICT on the key's partial unique index DO NOTHING, and
//     the key's job read back after it.
//
// SpoolAppend, the statement of every group commit, inserts a whole batch
// with one multi-row statement, prepared once per row count and cached.
// The unique index is keyed by lane first (lane_key, a 64-bit hash of the
// lane's columns, migration 0007) rather than by the message's text
// columns; message ids are random within a lane, so in a large spool it
// costs a page write per entry of a group commit. QueueMark, which the
// engine calls twice per message from every active lane, commits
// concurrent marks together (markGroup in markgroup.go): one transaction
// and one fsync for all the marks waiting when the writer is free, each
// caller returning once its own is committed. An inbox page reads the
// delivered rows through partial indexes (migration 0013), never the
// whole queue. The lock of the spool cache is taken before the writer
// connection, never while holding it.
//
// What still lives in one Store's memory: the per-peer queue cap's
// budgets (queuecap.go), which are exact for one Store but not across
// handles (two handles moving one peer's entries at once may each spend
// a budget, so the peer can go over Config.MaxQueuedPerPeer by up to the
// other's), and the caches of prepared statements.
//
// UUIDs (rooms, messages, identities) are stored lower-case, as
// jam.ParseUUID returns them, so lookups match whatever case arrives.
//
// # Content at rest
//
// One rule: every text a person or an agent wrote, and every credential,
// is stored sealed with the daemon key (package secret: AES-256-GCM, the
// aad binding the value to its row), or not stored. Two layers seal:
//
//   - the layer that owns a record seals it before it reaches the store,
//     which keeps opaque Sealed bytes: accounts' and peers' keys and
//     template env values (package daemon), spool entries, queue rows,
//     reply intents and notices (package engine), and the room cache
//     (package roomfeed);
//   - the store seals the columns whose rows it shapes itself
//     (sealed.go), with the Config.Sealer jamd hands in: events.payload (bound to workspace and
//     sequence; the store names each event's sequence in the transaction
//     that inserts it), turn_output.updates (workspace, turn, batch: the
//     store bounds a turn's output inside its transaction, so it must see
//     the text), session_messages.text (workspace, message), and the
//     detail of turns (workspace, turn) and turn_journal (workspace,
//     entry), the text of the error that ended a turn, which may quote
//     what the agent sent, and a change set's manifest and patch
//     (workspace, change set; migration 0020). An empty value stays empty
//     TEXT; a sealed one is a BLOB. A job's payload, result and error
//     (workspace, job; migration 0021) are BLOBs from the start, sealed
//     whenever the store has a Sealer, empty when the value is; so are a
//     delegation's instructions and contract (workspace, delegation) and
//     its result (workspace, delegation; migration 0025).
//
// A row written in the clear (before migration 0015, or by a store opened
// without a Sealer) is TEXT; [Open] with a Sealer seals every such value,
// then VACUUMs so the text is not left in free pages. A failure to (a
// damaged table) is logged and does not keep the store from opening; the
// next Open tries again. Reading a sealed
// value without the Sealer is an error wrapping jam.ErrUnavailable, and a
// value moved to another row fails to open (secret.ErrCorrupt).
//
// Not sealed: ids, kinds, states, times, sizes and reason codes, which
// say what happened but not what was written.
package sqlite
