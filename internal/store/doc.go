// Package store is the persistence seam: the [Store] interface that domain
// packages use, the records it returns, and the numbered migrations shared
// by every SQL dialect.
//
// Implementations live in sub-packages (store/sqlite now, store/postgres
// next) and all run the conformance suite in store/storetest. Migrations are
// numbered "NNNN_name.sql", embedded, and applied at open; each dialect keeps
// its own files under the same numbers, so version N means the same schema
// on every backend.
//
// Every record owned by a workspace carries its [jam.WorkspaceID], and every
// lookup of such a record takes it: a record of another workspace is
// reported as [jam.ErrNotFound], exactly like a missing one.
//
// Validation: the limits of the seam (ids and their canonical form, UTF-8
// and NUL-free text, lengths, zero times, known state names, the rules
// between a record's fields) are checked in this package, by the
// Validate and Canonical methods of the params and record types
// ([TurnTransitionParams.Validate], [Account.Canonical], ...) and the
// Validate* functions of key pairs and arguments ([ValidateScope],
// [ValidateReplyAdvance], ...). Canonical also returns the record in
// stored form (UUIDs lower-case, defaults filled), which is what a dialect
// writes. Every dialect calls them before it touches the database, so all
// dialects refuse the same inputs with the same words. What a validator
// cannot see, because it needs the stored state, each dialect enforces
// itself, inside the transaction of the write:
//   - uniqueness ([jam.ErrAlreadyExists]): an account id naming another
//     profile, one template per peer, one open session per peer and room,
//     one worktree per session, a lease id, a binding alias per peer, a
//     job's idempotency key per workspace and kind (where a second
//     enqueue returns the first job instead of an error);
//   - parents ([jam.ErrNotFound]): the workspace of a write, the account
//     of a room cache write, the session of a turn or message, a turn's
//     queue message belonging to its session;
//   - fencing ([jam.ErrConflict], [jam.ErrLeaseLost]): a turn, session,
//     worktree or job move from a state it is no longer in, the lease id,
//     generation and liveness of a turn move or output batch, the claim
//     generation of a job's heartbeat, completion or failure, a template
//     generation that is no longer the desired one, a reply intent that
//     does not only advance the stored one (compared with
//     [ValidateReplyAdvance]);
//   - bounds that count stored rows or bytes: [MaxQueuedPerPeer],
//     [MaxRoomSystemMessages], [MaxAttentionItems], the output caps
//     applied with [BoundTurnOutput];
//   - deduplication of spool appends against the spool, the queue and the
//     settled tombstones.
//
// Errors: lookups of missing records wrap [jam.ErrNotFound]; bad parameters
// wrap [jam.ErrInvalid]; a write against a missing parent (a setting of an
// unknown workspace) wraps [jam.ErrNotFound]. Times are stored as UTC
// microseconds and returned in UTC.
//
// Bounds: what grows with use is bounded. Settled tombstones and finished
// reply intents are pruned by age (Messaging.RetentionPrune), the
// unrouted bucket by age and count, events by count and age, and the
// owned runtimes' history per session by [RuntimeRetention] (newest turns
// with their output, executions and journal; stored output bytes; newest
// messages), which never deletes a turn that is not terminal or a message
// still waiting for one. Queue rows are unsettled messages and are never
// pruned: one peer's queue holds at most [MaxQueuedPerPeer] rows, and a
// move past that is refused, so the messages wait in the spool.
//
// Money: an execution's cost is integer micro-dollars, or unknown (not
// zero); no float is stored. Its usage is written once, by the turn's
// terminal move under the same lease fence, and pruned with the
// execution. Reports of usage ([Runtime.UsageReport]) group in the query,
// at most [UsageMaxRows] groups, and never read executions one by one.
package store
