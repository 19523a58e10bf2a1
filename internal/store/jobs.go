package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Durable jobs: the daemon's internal continuations (a delivery to GitHub,
// say) that must survive a restart and run at least once. A worker claims
// a due job under a lease fenced by the job's Generation, which every
// claim increments; each write a worker makes afterwards (heartbeat,
// complete, fail) names that generation in its WHERE clause, so a worker
// whose lease expired and whose job was claimed again can no longer
// change it (jam.ErrLeaseLost), whatever it remembers.
//
// The state machine:
//
//	queued ──claim──▶ running ──complete──▶ succeeded
//	  ▲                │  ▲ │
//	  │                │  │ └──fail, attempts left──▶ failed ──claim (RunAfter due)──▶ running
//	  │                │  └──claim (LeaseUntil passed: a dead worker's)
//	  │                └──fail, no attempts left──▶ dead
//	  │     queued, failed, running ──cancel──▶ cancelled
//	  └──retry── dead, cancelled
//
// succeeded is final; dead and cancelled are until a retry.

// JobState is where a job is in its life.
type JobState string

// The states of a job.
const (
	JobQueued    JobState = "queued"    // waiting for its RunAfter and a worker
	JobRunning   JobState = "running"   // claimed; Owner holds it until LeaseUntil
	JobSucceeded JobState = "succeeded" // completed; final
	JobFailed    JobState = "failed"    // a failed attempt; claimable again from RunAfter
	JobDead      JobState = "dead"      // failed with no attempt left; until a retry
	JobCancelled JobState = "cancelled" // cancelled; until a retry
)

// Job is one durable continuation of a workspace.
type Job struct {
	ID          jam.JobID
	WorkspaceID jam.WorkspaceID
	// Kind names what the job does ([a-z][a-z0-9_.]{0,63}); workers
	// claim by kind.
	Kind string
	// IdempotencyKey, when not "", is unique per workspace and kind: a
	// second enqueue with the same one returns the first job.
	IdempotencyKey string
	// Payload is the job's input, opaque JSON (nil for none), at most
	// MaxJobPayload bytes; sealed at rest.
	Payload []byte
	State   JobState
	// Attempt counts the claims since the job was enqueued (or retried);
	// MaxAttempts (1 to MaxJobAttempts) bounds the failures before dead.
	Attempt     int
	MaxAttempts int
	// RunAfter is when a queued or failed job becomes due.
	RunAfter time.Time
	// Owner is the worker of the latest claim ("" before the first);
	// Generation counts the claims ever made (0 before the first), the
	// fence of every worker write; LeaseUntil is when a running job's
	// lease ends (zero when the job is not running).
	Owner      string
	Generation int64
	LeaseUntil time.Time
	// Result is the output of a succeeded job (opaque JSON, nil for
	// none) and Error the message of the latest failure; both sealed at
	// rest.
	Result    []byte
	Error     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Terminal says whether the job stays where it is until a retry (or
// forever, once succeeded).
func (j Job) Terminal() bool {
	return j.State == JobSucceeded || j.State == JobDead || j.State == JobCancelled
}

// JobClaimParams are the inputs of Jobs.JobClaim.
type JobClaimParams struct {
	WorkspaceID jam.WorkspaceID
	// Kinds are the kinds the worker runs: 1 to MaxJobClaimKinds.
	Kinds []string
	Owner string
	// Lease is how long the claim holds the job without a heartbeat:
	// more than 0, at most MaxJobLease.
	Lease time.Duration
	At    time.Time
}

// JobCompleteParams are the inputs of Jobs.JobComplete.
type JobCompleteParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.JobID
	Generation  int64
	Result      []byte
	At          time.Time
}

// JobFailParams are the inputs of Jobs.JobFail.
type JobFailParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.JobID
	Generation  int64
	Error       string
	// RetryAt is when the failed job is due again (the zero time: At).
	RetryAt time.Time
	// Dead makes the failure final: the job goes dead whatever attempts
	// it has left (a permanent error that no retry can mend).
	Dead bool
	At   time.Time
}

// DeadAt is the attempt from which the failure is dead, to be compared
// with the smaller of it and the job's MaxAttempts: 0 (every attempt)
// when p.Dead, else MaxJobAttempts (so MaxAttempts decides).
func (p JobFailParams) DeadAt() int {
	if p.Dead {
		return 0
	}
	return MaxJobAttempts
}

// JobListParams selects jobs of a workspace, newest first: of one state
// and one kind when they are not "", at most Limit (0 means
// DefaultJobLimit).
type JobListParams struct {
	WorkspaceID jam.WorkspaceID
	State       JobState
	Kind        string
	Limit       int
}

// Jobs stores durable jobs. Every write is one conditional statement (or
// one transaction) whose condition the database checks: two handles on
// one database never both claim one generation of a job, and a write
// fenced by a generation that is no longer the job's changes nothing.
type Jobs interface {
	// JobEnqueue stores a new queued job (State, Attempt, Generation,
	// Owner, LeaseUntil, Result and Error are ignored; a zero RunAfter is
	// CreatedAt; UpdatedAt is CreatedAt). When the job has an
	// IdempotencyKey and the workspace holds a job of that kind with that
	// key already, whatever its state, JobEnqueue returns that job, not
	// an error, and stores nothing: callers can enqueue again after a
	// crash without knowing whether the first enqueue went in. Two
	// enqueues of one key at once store one job and both return it. An ID
	// taken already (with another key) is jam.ErrAlreadyExists; an
	// unknown workspace is jam.ErrNotFound.
	JobEnqueue(ctx context.Context, j Job) (Job, error)
	// JobClaim moves the oldest due job of the kinds (by CreatedAt) to
	// running for p.Owner: Generation and Attempt one up, LeaseUntil
	// p.At + p.Lease. Due is queued or failed with RunAfter ≤ p.At, or
	// running with LeaseUntil < p.At (its worker is presumed dead; the
	// claim counts an attempt). None due is jam.ErrNotFound.
	JobClaim(ctx context.Context, p JobClaimParams) (Job, error)
	// JobHeartbeat extends a running job's lease to leaseUntil. A
	// generation that is not the job's, or a job not running, is
	// jam.ErrLeaseLost; an unknown job jam.ErrNotFound.
	JobHeartbeat(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, generation int64, leaseUntil time.Time) error
	// JobComplete moves a running job of p.Generation to succeeded with
	// p.Result; a generation that is not the job's, or a job not
	// running, is jam.ErrLeaseLost and changes nothing.
	JobComplete(ctx context.Context, p JobCompleteParams) (Job, error)
	// JobFail records a failed attempt of a running job of p.Generation:
	// failed, due again at p.RetryAt, or dead when Attempt has reached
	// MaxAttempts or p.Dead. Fenced as JobComplete.
	JobFail(ctx context.Context, p JobFailParams) (Job, error)
	// JobCancel moves a queued, failed or running job to cancelled (a
	// running job's worker is then refused its next write with
	// jam.ErrLeaseLost); a job in another state is jam.ErrConflict.
	JobCancel(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (Job, error)
	// JobRetry moves a dead or cancelled job back to queued, due at at,
	// with Attempt 0 (Generation keeps counting; Error keeps the last
	// failure); a job in another state is jam.ErrConflict.
	JobRetry(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (Job, error)
	// JobExpireOwner ends the leases of the running jobs owner claimed
	// (lease until at), so the next claim after at takes them at once: a
	// daemon that knows owner is dead (its own previous run, killed) need
	// not wait for the leases to lapse. The jobs' Generation is
	// unchanged, so a worker of owner that still lives keeps its claim
	// until another is made, and is then refused (jam.ErrLeaseLost). It
	// returns how many jobs it expired.
	JobExpireOwner(ctx context.Context, ws jam.WorkspaceID, owner string, at time.Time) (int, error)
	// JobGet returns one job of the workspace.
	JobGet(ctx context.Context, ws jam.WorkspaceID, id jam.JobID) (Job, error)
	// JobList returns the jobs p selects, newest first.
	JobList(ctx context.Context, p JobListParams) ([]Job, error)
}

// Refusal says why a conditional write to j changed nothing, wrapping
// refusal: jam.ErrLeaseLost names the writer's generation beside the
// job's, any other refusal the job's state.
func (j Job) Refusal(generation int64, refusal error) error {
	if errors.Is(refusal, jam.ErrLeaseLost) {
		return fmt.Errorf("%w: generation %d, the job is %s at generation %d", refusal, generation, j.State, j.Generation)
	}
	return fmt.Errorf("%w: the job is %s", refusal, j.State)
}
