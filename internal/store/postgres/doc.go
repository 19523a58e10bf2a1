// Package postgres is the PostgreSQL dialect of the [store.Store] seam, on
// pgx v5 and its pool (pgxpool). Several daemons may share one database;
// every guarantee the seam makes therefore lives in SQL (a constraint, a
// lock, a predicate of the write), never in one process's memory.
//
// # Connections
//
// A [Store] owns one pgxpool.Pool of Config.MaxConns connections; the URL
// is parsed by pgx's ParseConfig and only the postgres:// URL form is
// accepted. [Open] fails with one line that names the problem and never
// the password: an invalid URL (jam.ErrInvalid; the URL is shown with the
// password masked), a server that cannot be reached, credentials it
// refuses, or a database it does not have (each jam.ErrUnavailable).
// [Store.Info] reports the driver "postgres", the location as
// host:port/database (no credentials), the schema version and the
// server's version.
//
// # Schema
//
// Migrations are the embedded migrations/NNNN_name.sql files, numbered as
// the SQLite dialect's (version N is the same schema on both; the files
// differ where the SQL must), loaded with [store.LoadMigrations] and
// recorded with their checksum in schema_migrations. [Open] refuses a
// database whose schema is newer than this build, or whose applied
// migrations differ from the embedded text, as the SQLite dialect does.
// Reading the ledger and applying migrations happens on one connection
// holding pg_advisory_lock, so daemons starting at once against an empty
// database apply each migration exactly once; each migration commits
// with its ledger row in one transaction.
//
// Times are BIGINT UTC microseconds and sealed columns BYTEA, so a row
// moves between dialects unchanged.
//
// # Transactions and errors
//
// Writes that must be atomic run in one transaction (inTx in db.go) at
// the isolation the method's doc names, READ COMMITTED unless it says
// otherwise. A transaction the server aborts with a serialization failure
// (40001) or a deadlock (40P01) runs again from the start, at most five
// times with a short random backoff; one that still fails is
// jam.ErrConflict. Other errors map as the seam documents (errors.go):
// unique_violation is jam.ErrAlreadyExists where a method has no
// documented answer of its own, foreign_key_violation jam.ErrNotFound (a
// write against a missing parent), disk full jam.ErrStorageFull, and a
// lost or unreachable server jam.ErrUnavailable.
//
// # Guarantees under concurrency
//
// Every transaction runs at READ COMMITTED unless named below: each statement sees what
// committed before it began, and a statement that waits for a row lock
// re-reads the row it waited for. What the SQLite dialect gets from its
// single writer connection is made explicit here, per aggregate:
//
//   - Spool: a duplicate message is refused by the spool's unique
//     constraint (INSERT … ON CONFLICT DO NOTHING RETURNING, so an append
//     racing another of the same message waits and then skips), and by
//     NOT EXISTS probes of the queue and the tombstones; a message that
//     slips past those probes while it is being moved or settled is
//     caught when it leaves the spool (MoveAlreadyQueued, MoveSettled).
//     A batch takes a transaction-level advisory lock on each of its
//     lanes first (sorted, so appends never deadlock): within a lane,
//     sequences commit in the order they were drawn, and a reader of the
//     lane never moves seq N+1 while N is still uncommitted.
//   - The peer's row is the lock of its routing: BindingPut,
//     BindingDelete, PeerRemove and RoomRetire take it FOR UPDATE, spool
//     moves FOR NO KEY UPDATE (which excludes them and each other but not
//     the foreign keys' KEY SHARE). So a bind that steals a room and a move
//     that routes into it run one after the other, two binds of one room
//     steal in turn instead of colliding on the room's unique key, and the
//     count that bounds a peer's queue (Config.MaxQueuedPerPeer) is exact
//     across handles.
//   - Events: a transaction-level advisory lock per workspace, taken
//     before the batch draws its sequences (nextval, since a sealed
//     payload is bound to its sequence), so a workspace's sequences become
//     visible in increasing order and a client resuming after a sequence
//     never misses one committed later. A rolled-back append leaves unused
//     numbers, never ones filled in later. Each append also notifies
//     the LISTEN/NOTIFY channel jam_events with its workspaces, delivered
//     when it commits, so a daemon sharing the database wakes where the
//     SQLite dialect's broker wakes in process ([Store.ListenEvents]).
//   - Daemon runs: a transaction-level advisory lock per node, so runs
//     started at once each name a distinct previous run.
//   - Reply intents and the room cache: the first write is INSERT … ON
//     CONFLICT DO NOTHING, and a later one an UPDATE whose predicate is
//     the check (the intent read FOR UPDATE and advanced; the watermark
//     moved only WHERE seq < $n), so a second writer is judged against
//     what the first committed.
//   - Accounts: AccountRemove locks the account FOR UPDATE before it
//     reads the peers, and PeerPut holds it FOR SHARE, so a removal that
//     races a new peer is a conflict, not a foreign key failure.
//   - Turns: a move's fence is the predicate of its UPDATE (the turn in
//     From, bound to the caller's lease id and generation, and the lease
//     live, read FOR SHARE in the same statement), so a stale lease's
//     move after its replacement changes nothing; the zero rows are then
//     told apart by reading the turn and the lease again
//     (jam.ErrNotFound, jam.ErrConflict, jam.ErrLeaseLost). Ending or
//     replacing a lease waits for the fenced moves that hold it, so none
//     commits after the lease's end. One active turn per session is the
//     partial unique index turns_one_active.
//   - Leases: a transaction-level advisory lock per holder, so acquires
//     at once each end the lease the one before started and take the
//     next generation; leases_one_live still refuses a second live
//     lease.
//   - Sessions: TurnEnqueue and MessageAccept lock the session's row FOR
//     UPDATE, so turns and messages of one session are numbered without
//     gaps or collisions and no lifecycle move slips in between; a steer
//     message reads its turn FOR SHARE, so it is still running at commit.
//   - Turn output: an append locks its turn's row FOR UPDATE, so batches
//     of one turn are stored one after the other and its bounds count
//     every batch before.
//   - Jobs: a claim is one UPDATE whose target a subquery picks FOR
//     UPDATE SKIP LOCKED (a job another claim holds is skipped, one just
//     claimed and committed is re-checked against the due predicate and
//     dropped), so two claims at once take two jobs; every worker write
//     names the generation and the running state in its WHERE clause. An
//     enqueue with an idempotency key is INSERT ... ON CONFLICT DO NOTHING
//     on the key's partial unique index (a concurrent insert of the key
//     is waited for), then the key's job read in a statement of its own,
//     whose snapshot sees what the other committed.
//   - UsageReport and RuntimePrune run at REPEATABLE READ: the report's
//     groups and total read one snapshot, and every delete of a prune
//     batch sees the same doomed turns (a row changed meanwhile aborts
//     the batch with a serialization failure, and it runs again).
//
// # Content at rest
//
// The rule of the SQLite dialect holds here (see its package doc): every
// text a person or an agent wrote, and every credential, is stored sealed
// with the daemon key or not stored. The layers that own a record seal it
// before it reaches the store; the store seals events.payload,
// turn_output.updates, session_messages.text, the detail of turns and
// turn_journal, change sets' manifest and patch (migration 0020), and
// jobs' payload, result and error (migration 0021) with
// the Config.Sealer (sealed.go), with the same aad as
// the SQLite dialect. A store is opened with the same Sealer, or none,
// for its whole life: BYTEA cannot tell a clear value from a sealed one,
// and no clear value predates the sealed columns, since every migration
// runs at the first Open.
package postgres
