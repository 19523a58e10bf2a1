package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Durable jobs (migration 0021). Every write is one statement on the
// writer, and the claim runs in an IMMEDIATE transaction (inTx): the
// write lock is taken before the due job is chosen, so no other
// connection to the file, this Store's or another process's, can claim
// it in between. Each worker write names the generation and the running
// state in its WHERE clause; zero rows is read back only to tell an
// unknown job (jam.ErrNotFound) from a lost lease (jam.ErrLeaseLost) or a
// move from the wrong state (jam.ErrConflict).
const (
	jobColumns = `id, workspace_id, kind, idempotency_key, payload, state, attempt, max_attempts, run_after, owner, generation, lease_until,
result, error, created_at, updated_at`
	// jobInsert skips a job whose (workspace, kind, key) is taken: the
	// partial unique index is the conflict target, so a taken id is
	// still a constraint error.
	jobInsert = `INSERT INTO jobs (` + jobColumns + `) VALUES (?, ?, ?, ?, ?, 'queued', 0, ?, ?, '', 0, NULL, x'', x'', ?, ?)
ON CONFLICT (workspace_id, kind, idempotency_key) WHERE idempotency_key <> '' DO NOTHING`
	jobByID  = `SELECT ` + jobColumns + ` FROM jobs WHERE workspace_id = ? AND id = ?`
	jobByKey = `SELECT ` + jobColumns + ` FROM jobs WHERE workspace_id = ? AND kind = ? AND idempotency_key = ? AND idempotency_key <> ''`
	// jobClaim takes the oldest due job of the kinds (a JSON array).
	jobClaim = `UPDATE jobs SET state = 'running', owner = ?, generation = generation + 1, attempt = attempt + 1, lease_until = ?, updated_at = ?
WHERE id = (SELECT id FROM jobs WHERE workspace_id = ? AND kind IN (SELECT value FROM json_each(?))
  AND ((state IN ('queued', 'failed') AND run_after <= ?) OR (state = 'running' AND lease_until < ?))
  ORDER BY created_at, id LIMIT 1)
RETURNING ` + jobColumns
	jobHeartbeat = `UPDATE jobs SET lease_until = ? WHERE workspace_id = ? AND id = ? AND generation = ? AND state = 'running'`
	jobComplete  = `UPDATE jobs SET state = 'succeeded', result = ?, lease_until = NULL, updated_at = ?
WHERE workspace_id = ? AND id = ? AND generation = ? AND state = 'running' RETURNING ` + jobColumns
	jobFail = `UPDATE jobs SET state = CASE WHEN attempt >= MIN(max_attempts, ?) THEN 'dead' ELSE 'failed' END,
  run_after = CASE WHEN attempt >= MIN(max_attempts, ?) THEN run_after ELSE ? END, error = ?, lease_until = NULL, updated_at = ?
WHERE workspace_id = ? AND id = ? AND generation = ? AND state = 'running' RETURNING ` + jobColumns
	jobCancel = `UPDATE jobs SET state = 'cancelled', lease_until = NULL, updated_at = ?
WHERE workspace_id = ? AND id = ? AND state IN ('queued', 'failed', 'running') RETURNING ` + jobColumns
	jobRetry = `UPDATE jobs SET state = 'queued', attempt = 0, run_after = ?, owner = '', lease_until = NULL, updated_at = ?
WHERE workspace_id = ? AND id = ? AND state IN ('dead', 'cancelled') RETURNING ` + jobColumns
	jobExpireOwner = `UPDATE jobs SET lease_until = ? WHERE workspace_id = ? AND owner = ? AND state = 'running' AND lease_until > ?`
	jobList        = `SELECT ` + jobColumns + ` FROM jobs WHERE workspace_id = ? AND (? = '' OR state = ?) AND (? = '' OR kind = ?)
ORDER BY created_at DESC, id DESC LIMIT ?`
)

// JobEnqueue implements [store.Jobs].
func (s *Store) JobEnqueue(ctx context.Context, j store.Job) (store.Job, error) {
	j, err := j.Canonical()
	if err != nil {
		return store.Job{}, fmt.Errorf("job: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, jobInsert, j.ID, j.WorkspaceID, j.Kind, j.IdempotencyKey, s.sealBlob(j.Payload, jobPayloadAAD(j.WorkspaceID, j.ID)),
		j.MaxAttempts, j.RunAfter.UnixMicro(), j.CreatedAt.UnixMicro(), j.UpdatedAt.UnixMicro())
	switch {
	case err != nil && isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY):
		return store.Job{}, fmt.Errorf("job %s: %w: no workspace %s", j.ID, jam.ErrNotFound, j.WorkspaceID)
	case err != nil && isUniqueViolation(err) && j.IdempotencyKey != "":
		// The id is taken, and SQLite may check the primary key before
		// the conflict target: the key's job, if there is one, is the
		// answer all the same.
		if got, gerr := s.jobByKey(ctx, j); gerr == nil {
			return got, nil
		}
		return store.Job{}, fmt.Errorf("job %s: %w", j.ID, jam.ErrAlreadyExists)
	case err != nil && isUniqueViolation(err):
		return store.Job{}, fmt.Errorf("job %s: %w", j.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Job{}, fmt.Errorf("job %s: %w", j.ID, storageFault(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return store.Job{}, fmt.Errorf("job %s: %w", j.ID, err)
	} else if n == 0 {
		// The key is taken: the read runs after the write that skipped
		// the insert, so it sees the job that took it.
		got, err := s.jobByKey(ctx, j)
		if err != nil {
			return store.Job{}, fmt.Errorf("job %s: idempotency key: %w", j.ID, err)
		}
		return got, nil
	}
	return s.JobGet(ctx, j.WorkspaceID, j.ID)
}

func (s *Store) jobByKey(ctx context.Context, j store.Job) (store.Job, error) {
	got, err := s.scanJob(s.reader.QueryRowContext(ctx, jobByKey, j.WorkspaceID, j.Kind, j.IdempotencyKey))
	return got, notFoundAs(err, "no job of the key")
}

// JobClaim implements [store.Jobs].
func (s *Store) JobClaim(ctx context.Context, p store.JobClaimParams) (store.Job, error) {
	if err := p.Validate(); err != nil {
		return store.Job{}, fmt.Errorf("claim job: %w", err)
	}
	kinds, err := json.Marshal(p.Kinds)
	if err != nil {
		return store.Job{}, fmt.Errorf("claim job: %w", err)
	}
	at := p.At.UnixMicro()
	var j store.Job
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		var err error
		j, err = s.scanJob(tx.QueryRowContext(ctx, jobClaim, p.Owner, p.At.Add(p.Lease).UnixMicro(), at, p.WorkspaceID, string(kinds), at, at))
		return err
	})
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
	res, err := s.writer.ExecContext(ctx, jobHeartbeat, leaseUntil.UnixMicro(), ws, id, generation)
	if err != nil {
		return fmt.Errorf("heartbeat job %s: %w", id, storageFault(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("heartbeat job %s: %w", id, err)
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
	j, err := s.scanJob(s.writer.QueryRowContext(ctx, jobComplete, s.sealBlob(p.Result, jobResultAAD(p.WorkspaceID, p.ID)), p.At.UnixMicro(),
		p.WorkspaceID, p.ID, p.Generation))
	if errors.Is(err, sql.ErrNoRows) {
		err = s.jobRefused(ctx, p.WorkspaceID, p.ID, p.Generation, jam.ErrLeaseLost)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("complete job %s: %w", p.ID, storageFault(err))
	}
	return j, nil
}

// JobFail implements [store.Jobs].
func (s *Store) JobFail(ctx context.Context, p store.JobFailParams) (store.Job, error) {
	p, err := p.Canonical()
	if err != nil {
		return store.Job{}, fmt.Errorf("fail job: %w", err)
	}
	j, err := s.scanJob(s.writer.QueryRowContext(ctx, jobFail, p.DeadAt(), p.DeadAt(), p.RetryAt.UnixMicro(), s.sealBlob([]byte(p.Error), jobErrorAAD(p.WorkspaceID, p.ID)),
		p.At.UnixMicro(), p.WorkspaceID, p.ID, p.Generation))
	if errors.Is(err, sql.ErrNoRows) {
		err = s.jobRefused(ctx, p.WorkspaceID, p.ID, p.Generation, jam.ErrLeaseLost)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("fail job %s: %w", p.ID, storageFault(err))
	}
	return j, nil
}

// JobCancel implements [store.Jobs].
func (s *Store) JobCancel(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (store.Job, error) {
	return s.jobMove(ctx, "cancel", jobCancel, ws, id, at, at.UnixMicro(), ws, id)
}

// JobExpireOwner implements [store.Jobs].
func (s *Store) JobExpireOwner(ctx context.Context, ws jam.WorkspaceID, owner string, at time.Time) (int, error) {
	if err := store.ValidateJobExpireOwner(ws, owner, at); err != nil {
		return 0, fmt.Errorf("expire jobs: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, jobExpireOwner, at.UnixMicro(), ws, owner, at.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("expire jobs of %s: %w", owner, storageFault(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("expire jobs of %s: %w", owner, err)
	}
	return int(n), nil
}

// JobRetry implements [store.Jobs].
func (s *Store) JobRetry(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (store.Job, error) {
	return s.jobMove(ctx, "retry", jobRetry, ws, id, at, at.UnixMicro(), at.UnixMicro(), ws, id)
}

// jobMove runs a move that only some states allow; zero rows is
// jam.ErrConflict for a job in another state.
func (s *Store) jobMove(ctx context.Context, verb, query string, ws jam.WorkspaceID, id jam.JobID, at time.Time, args ...any) (store.Job, error) {
	if err := store.ValidateJobMove(ws, id, at); err != nil {
		return store.Job{}, fmt.Errorf("%s job: %w", verb, err)
	}
	j, err := s.scanJob(s.writer.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		err = s.jobRefused(ctx, ws, id, 0, jam.ErrConflict)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("%s job %s: %w", verb, id, storageFault(err))
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
	j, err := s.scanJob(s.reader.QueryRowContext(ctx, jobByID, ws, id))
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
	out, err := queryAll(ctx, s.reader, s.scanJob, jobList, p.WorkspaceID, p.State, p.State, p.Kind, p.Kind, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return out, nil
}

func (s *Store) scanJob(row scanner) (store.Job, error) {
	var j store.Job
	var payload, result, jobErr []byte
	var runAfter, created, updated int64
	var lease sql.NullInt64
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
