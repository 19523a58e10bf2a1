// Package job runs the daemon's durable jobs: handlers registered by
// kind, run by a fixed pool of workers that claim due jobs from the store
// under a fenced lease.
//
// Invariants:
//
//   - A job runs under a claim of one generation. Every write of its
//     worker (heartbeat, completion, failure) names that generation and
//     the store refuses it once the job was claimed again or cancelled
//     (jam.ErrLeaseLost); the runner then logs the refused result and
//     drops it. Two runners on two handles of one database never run one
//     generation of a job at once, whatever their clocks remember.
//   - A running job's lease is extended by a heartbeat at a third of the
//     lease; a heartbeat refused cancels the handler's context, so a worker
//     that lost its job stops working on it. A worker that dies leaves the
//     lease to lapse, and the job is claimed again (as a new attempt) once
//     it has: seconds, not an hour.
//   - A failed attempt is due again after an exponential backoff
//     (Config.BackoffBase doubled per attempt, at most Config.BackoffMax),
//     or later when the handler asked for it (RetryAfter); the job is dead
//     once its attempts are spent, or at once when the handler said the
//     error is permanent (Permanent).
//   - Handlers must be idempotent: a job runs at least once, and again
//     after a crash between its effect and its completion. The idempotency
//     key of Enqueue makes enqueueing idempotent too.
//   - Every goroutine the runner starts is waited for by Run before it
//     returns; no lock is held across a store call.
package job
