// Package storetest is the conformance suite of the [store.Store] seam.
//
// Every dialect runs it from its own tests, so behaviour the rest of jam
// relies on (error classes, ordering, tenancy isolation, time precision)
// is pinned down once and checked against each backend. A behaviour that
// only one dialect can show (pragmas, file modes, pool wiring) belongs in
// that dialect's own tests instead.
//
// A dialect hands the suite an [Opener]: one fresh database per call, and
// any number of handles on it. [Exercise] runs everything against a full
// [store.Store]; each aggregate also has an entry point of its own
// ([Settings], [Spool], [Turns], ...) whose type constraint names only the
// aggregates it exercises and those its fixtures need, so a dialect that
// implements some aggregates can already run their cases. The cases see a
// store with only those aggregates filled in: a case that calls outside
// its constraint panics on every dialect, not only on a partial one.
//
// # Races
//
// The race cases open two handles on one database and write through both
// at once, 50 rounds each, so a guarantee kept in one handle's memory
// fails them: one message appended through both (exactly one append goes
// in, the other handle is refused it too, it is delivered once); a turn
// moved with a lease after its replacement was acquired through the
// other handle (jam.ErrLeaseLost, the turn, its journal and its output
// unchanged); two BindingPut of one room (one owner, every queued row of
// the room on it, none lost or left on the loser); one queue row marked
// delivered through both (every mark counts one attempt); two claimers
// draining the due jobs through both, in two generations (each job
// claimed once per generation, by the claimer the store says owns it);
// one idempotency key enqueued through both (one job, both told it).
//
// Each guarantee must be the database's. What a dialect must do:
//
//   - Spool dedupe: a unique index on the spool's (lane_key, message_id),
//     the batch insert skipping conflicts (SQLite INSERT OR IGNORE,
//     PostgreSQL ON CONFLICT (lane_key, message_id) DO NOTHING) and
//     reading back which entries went in; never deciding dedupe from
//     memory. On PostgreSQL the NOT EXISTS probes of queue and settled in
//     the same statement read its snapshot, so a message a concurrent
//     SpoolMove queues can be spooled once more; that copy is harmless
//     only because SpoolMove refuses a message already queued or settled
//     (the queue's primary key and the settled tombstone decide it inside
//     the move), which the dialect must keep.
//   - Fencing: TurnTransition is one UPDATE of the turn whose WHERE names
//     the from state, the writer's lease and generation (an active turn)
//     and, where the move needs it, that the lease is live; zero rows is a
//     refused move, and only then does the dialect read the turn to tell
//     jam.ErrNotFound, jam.ErrConflict and jam.ErrLeaseLost apart.
//     TurnOutputAppend inserts with the fence in its own WHERE; LeaseEnd
//     updates WHERE state = 'live'. On PostgreSQL under READ COMMITTED the
//     predicate on the updated row itself is re-checked on the row version
//     the UPDATE locks, but a subquery on another table (the lease's
//     liveness, the turn's state for an output insert) reads the
//     statement's snapshot: it must lock what it reads (FOR SHARE), so a
//     concurrent LeaseAcquire or move is waited for and seen.
//   - Multi-statement writes (BindingPut's steal and re-home, SpoolMove,
//     SpoolMoveBatch, RoomRetire, LeaseAcquire, QueueSettle) run in one
//     transaction. SQLite: BEGIN IMMEDIATE takes the write lock before the
//     first read, which makes them serializable. PostgreSQL: READ
//     COMMITTED with row locks taken before the reads that decide the
//     writes: BindingPut locks the peer row (SELECT ... FOR UPDATE) so two
//     binds of one room queue behind each other and the second sees the
//     first's binding and rows; SpoolMove reads the room's owner FOR SHARE
//     so a concurrent BindingPut cannot re-home the room between the read
//     and the insert; LeaseAcquire locks the holder's live lease (or
//     relies on the unique partial index of one live lease per holder and
//     retries once on its violation). SERIALIZABLE would also do, at the
//     price of retrying serialization failures.
//   - Counters move in the statement (attempts = attempts + 1), never
//     from a value read first.
//   - Job claims choose the job inside the write that takes it: SQLite
//     in the IMMEDIATE transaction of the UPDATE (a job chosen by a read
//     before it is claimed by both handles); PostgreSQL with FOR UPDATE
//     SKIP LOCKED on the subquery that picks it (without it, the second
//     UPDATE waits, re-checks only the id and claims the job again). An
//     enqueue's key is decided by the unique index (ON CONFLICT DO
//     NOTHING, then a read of the key's job), never by a read before the
//     insert, which loses to a concurrent one.
package storetest
