package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Durable jobs (migration 0021), as in the SQLite dialect; every write is
// one statement under READ COMMITTED.
//
//   - The claim is one UPDATE whose target is chosen by a subquery with
//     FOR UPDATE SKIP LOCKED: the subquery locks the row it picks (on its
//     newest version, re-checked against the due predicate), and a row
//     another claim has locked is skipped, not waited for, so two claims
//     at once take two jobs and never one twice.
//   - The enqueue is INSERT ... ON CONFLICT on the partial unique index of
//     the key DO NOTHING, then, when nothing went in, a read of the key's
//     job in a statement of its own: a concurrent insert of the key makes
//     ours wait for its commit, and only a new statement's snapshot sees
//     the row it committed.
//   - Every worker write names the generation and the running state in
//     its WHERE clause, which the UPDATE re-checks on the row version it
//     locks; zero rows is read back to tell jam.ErrNotFound from
//     jam.ErrLeaseLost (or jam.ErrConflict for a cancel or retry).
const (
	jobColumns = `id, workspace_id, kind, idempotency_key, payload, state, attempt, max_attempts, run_after, owner, generation, lease_until,
result, error, created_at, updated_at`
	jobInsert = `INSERT INTO jobs (` + jobColumns + `)
VALUES ($1, $2, $3, $4, $5, 'queued', 0, $6::bigint, $7::bigint, '', 0, NULL, ''::bytea, ''::bytea, $8::bigint, $9::bigint)
ON CONFLICT (workspace_id, kind, idempotency_key) WHERE idempotency_key <> '' DO NOTHING`
	jobByID  = `SELECT ` + jobColumns + ` FROM jobs WHERE workspace_id = $1 AND id = $2`
	jobByKey = `SELECT ` + jobColumns + ` FROM jobs WHERE workspace_id = $1 AND kind = $2 AND idempotency_key = $3 AND idempotency_key <> ''`
	jobClaim = `UPDATE jobs SET state = 'running', owner = $1, generation = generation + 1, attempt = attempt + 1, lease_until = $2::bigint, updated_at = $3::bigint
WHERE workspace_id = $4 AND id = (SELECT id FROM jobs WHERE workspace_id = $4 AND kind = ANY($5::text[])
  AND ((state IN ('queued', 'failed') AND run_after <= $3::bigint) OR (state = 'running' AND lease_until < $3::bigint))
  ORDER BY created_at, id COLLATE "C" LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING ` + jobColumns
	jobHeartbeat = `UPDATE jobs SET lease_until = $1::bigint WHERE workspace_id = $2 AND id = $3 AND generation = $4::bigint AND state = 'running'`
	jobComplete  = `UPDATE jobs SET state = 'succeeded', result = $1::bytea, lease_until = NULL, updated_at = $2::bigint
WHERE workspace_id = $3 AND id = $4 AND generation = $5::bigint AND state = 'running' RETURNING ` + jobColumns
	jobFail = `UPDATE jobs SET state = CASE WHEN attempt >= LEAST(max_attempts, $7::integer) THEN 'dead' ELSE 'failed' END,
  run_after = CASE WHEN attempt >= LEAST(max_attempts, $7::integer) THEN run_after ELSE $1::bigint END, error = $2::bytea, lease_until = NULL, updated_at = $3::bigint
WHERE workspace_id = $4 AND id = $5 AND generation = $6::bigint AND state = 'running' RETURNING ` + jobColumns
	jobCancel = `UPDATE jobs SET state = 'cancelled', lease_until = NULL, updated_at = $1::bigint
WHERE workspace_id = $2 AND id = $3 AND state IN ('queued', 'failed', 'running') RETURNING ` + jobColumns
	jobExpireOwner = `UPDATE jobs SET lease_until = $1 WHERE workspace_id = $2 AND owner = $3 AND state = 'running' AND lease_until > $1`
	jobRetry       = `UPDATE jobs SET state = 'queued', attempt = 0, run_after = $1::bigint, owner = '', lease_until = NULL, updated_at = $1::bigint
WHERE workspace_id = $2 AND id = $3 AND state IN ('dead', 'cancelled') RETURNING ` + jobColumns
	jobList = `SELECT ` + jobColumns + ` FROM jobs WHERE workspace_id = $1 AND ($2 = '' OR state = $2) AND ($3 = '' OR kind = $3)
ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4`
)

// JobEnqueue implements [store.Jobs].
func (s *Store) JobEnqueue(ctx context.Context, j store.Job) (store.Job, error) {
	j, err := j.Canonical()
	if err != nil {
		return store.Job{}, fmt.Errorf("job: %w", err)
	}
	n, err := rowsAffected(ctx, s.pool, jobInsert, j.ID, j.WorkspaceID, j.Kind, j.IdempotencyKey, s.sealBlob(j.Payload, jobPayloadAAD(j.WorkspaceID, j.ID)),
		j.MaxAttempts, micros(j.RunAfter), micros(j.CreatedAt), micros(j.UpdatedAt))
	switch {
	case pgCode(err) == codeForeignKeyViolation:
		return store.Job{}, fmt.Errorf("job %s: %w: no workspace %s", j.ID, jam.ErrNotFound, j.WorkspaceID)
	case pgCode(err) == codeUniqueViolation:
		return store.Job{}, fmt.Errorf("job %s: %w", j.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Job{}, fmt.Errorf("job %s: %w", j.ID, mapErr(err))
	case n == 0:
		got, err := s.scanJob(s.pool.QueryRow(ctx, jobByKey, j.WorkspaceID, j.Kind, j.IdempotencyKey))
		if err != nil {
			return store.Job{}, fmt.Errorf("job %s: idempotency key: %w", j.ID, notFoundAs(err, "no job of the key"))
		}
		return got, nil
	}
	return s.JobGet(ctx, j.WorkspaceID, j.ID)
}

// JobClaim implements [store.Jobs].
func (s *Store) JobClaim(ctx context.Context, p store.JobClaimParams) (store.Job, error) {
	if err := p.Validate(); err != nil {
		return store.Job{}, fmt.Errorf("claim job: %w", err)
	}
	j, err := s.scanJob(s.pool.QueryRow(ctx, jobClaim, p.Owner, micros(p.At.Add(p.Lease)), micros(p.At), p.WorkspaceID, p.Kinds))
	if err != nil {
		return store.Job{}, fmt.Errorf("claim job of %v: %w", p.Kinds, notFoundAs(err, "no job due"))
	}
	return j, nil
}

// JobHeartbeat implements [store.Jobs].
func (s *Store) JobHeartbeat(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, generation int64, leaseUntil time.Time) error {
	if err := store.ValidateJobHeartbeat(ws, id, generation, leaseUntil); err != nil {
		return fmt.Errorf("heartbeat job: %w", err)
	}
	n, err := rowsAffected(ctx, s.pool, jobHeartbeat, micros(leaseUntil), ws, id, generation)
	if err != nil {
		return fmt.Errorf("heartbeat job %s: %w", id, mapErr(err))
	}
	if n == 0 {
		return fmt.Errorf("heartbeat job %s: %w", id, s.jobRefused(ctx, ws, id, generation, jam.ErrLeaseLost))
	}
	return nil
}

// JobComplete implements [store.Jobs].
func (s *Store) JobComplete(ctx context.Context, p store.JobCompleteParams) (store.Job, error) {
	if err := p.Validate(); err != nil {
		return store.Job{}, fmt.Errorf("complete job: %w", err)
	}
	j, err := s.scanJob(s.pool.QueryRow(ctx, jobComplete, s.sealBlob(p.Result, jobResultAAD(p.WorkspaceID, p.ID)), micros(p.At),
		p.WorkspaceID, p.ID, p.Generation))
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.jobRefused(ctx, p.WorkspaceID, p.ID, p.Generation, jam.ErrLeaseLost)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("complete job %s: %w", p.ID, mapErr(err))
	}
	return j, nil
}

// JobFail implements [store.Jobs].
func (s *Store) JobFail(ctx context.Context, p store.JobFailParams) (store.Job, error) {
	p, err := p.Canonical()
	if err != nil {
		return store.Job{}, fmt.Errorf("fail job: %w", err)
	}
	j, err := s.scanJob(s.pool.QueryRow(ctx, jobFail, micros(p.RetryAt), s.sealBlob([]byte(p.Error), jobErrorAAD(p.WorkspaceID, p.ID)),
		micros(p.At), p.WorkspaceID, p.ID, p.Generation, p.DeadAt()))
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.jobRefused(ctx, p.WorkspaceID, p.ID, p.Generation, jam.ErrLeaseLost)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("fail job %s: %w", p.ID, mapErr(err))
	}
	return j, nil
}

// JobCancel implements [store.Jobs].
func (s *Store) JobCancel(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (store.Job, error) {
	return s.jobMove(ctx, "cancel", jobCancel, ws, id, at)
}

// JobExpireOwner implements [store.Jobs].
func (s *Store) JobExpireOwner(ctx context.Context, ws jam.WorkspaceID, owner string, at time.Time) (int, error) {
	if err := store.ValidateJobExpireOwner(ws, owner, at); err != nil {
		return 0, fmt.Errorf("expire jobs: %w", err)
	}
	n, err := rowsAffected(ctx, s.pool, jobExpireOwner, micros(at), ws, owner)
	if err != nil {
		return 0, fmt.Errorf("expire jobs of %s: %w", owner, mapErr(err))
	}
	return int(n), nil
}

// JobRetry implements [store.Jobs].
func (s *Store) JobRetry(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (store.Job, error) {
	return s.jobMove(ctx, "retry", jobRetry, ws, id, at)
}

// jobMove runs a move that only some states allow; zero rows is
// jam.ErrConflict for a job in another state.
func (s *Store) jobMove(ctx context.Context, verb, query string, ws jam.WorkspaceID, id jam.JobID, at time.Time) (store.Job, error) {
	if err := store.ValidateJobMove(ws, id, at); err != nil {
		return store.Job{}, fmt.Errorf("%s job: %w", verb, err)
	}
	j, err := s.scanJob(s.pool.QueryRow(ctx, query, micros(at), ws, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.jobRefused(ctx, ws, id, 0, jam.ErrConflict)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("%s job %s: %w", verb, id, mapErr(err))
	}
	return j, nil
}

// jobRefused explains a conditional write that changed no row: the job
// does not exist in the workspace, or it is not where the write needs
// it (why, wrapping refusal).
func (s *Store) jobRefused(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, generation int64, refusal error) error {
	j, err := s.JobGet(ctx, ws, id)
	if err != nil {
		return err
	}
	return j.Refusal(generation, refusal)
}

// JobGet implements [store.Jobs].
func (s *Store) JobGet(ctx context.Context, ws jam.WorkspaceID, id jam.JobID) (store.Job, error) {
	if err := store.ValidateJobRef(ws, id); err != nil {
		return store.Job{}, fmt.Errorf("job: %w", err)
	}
	j, err := s.scanJob(s.pool.QueryRow(ctx, jobByID, ws, id))
	if err != nil {
		return store.Job{}, fmt.Errorf("job %s: %w", id, notFoundAs(err, "no such job"))
	}
	return j, nil
}

// JobList implements [store.Jobs].
func (s *Store) JobList(ctx context.Context, p store.JobListParams) ([]store.Job, error) {
	limit, err := p.Bound()
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	out, err := queryAll(ctx, s.pool, s.scanJob, jobList, p.WorkspaceID, string(p.State), p.Kind, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", mapErr(err))
	}
	return out, nil
}

func (s *Store) scanJob(row scanner) (store.Job, error) {
	var j store.Job
	var payload, result, jobErr []byte
	var runAfter, created, updated int64
	var lease *int64
	err := row.Scan(&j.ID, &j.WorkspaceID, &j.Kind, &j.IdempotencyKey, &payload, &j.State, &j.Attempt, &j.MaxAttempts, &runAfter, &j.Owner,
		&j.Generation, &lease, &result, &jobErr, &created, &updated)
	if err != nil {
		return store.Job{}, err
	}
	j.RunAfter, j.LeaseUntil, j.CreatedAt, j.UpdatedAt = fromMicros(runAfter), fromNullMicros(lease), fromMicros(created), fromMicros(updated)
	if j.Payload, err = s.openBlob(payload, jobPayloadAAD(j.WorkspaceID, j.ID)); err != nil {
		return store.Job{}, fmt.Errorf("job %s: payload: %w", j.ID, err)
	}
	if j.Result, err = s.openBlob(result, jobResultAAD(j.WorkspaceID, j.ID)); err != nil {
		return store.Job{}, fmt.Errorf("job %s: result: %w", j.ID, err)
	}
	msg, err := s.openBlob(jobErr, jobErrorAAD(j.WorkspaceID, j.ID))
	if err != nil {
		return store.Job{}, fmt.Errorf("job %s: error: %w", j.ID, err)
	}
	j.Error = string(msg)
	return j, nil
}
