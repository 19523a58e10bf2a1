package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Operations and their evidence (migration 0023), as in the SQLite
// dialect, under READ COMMITTED.
//
//   - OperationUpdate is one UPDATE whose WHERE clause checks the state
//     (and the jobs' bound) and whose SET appends the job only when the
//     array lacks it: a second update at once waits on the row's lock,
//     then re-checks the WHERE clause on the version the first committed.
//     Zero rows is read back to tell jam.ErrNotFound from jam.ErrConflict.
//   - EvidenceAppend runs in a transaction that first locks the
//     operation's row (SELECT ... FOR UPDATE), so appends to one
//     operation serialize; the INSERT ... SELECT that follows takes a new
//     snapshot, sees the entries the previous holder committed and takes
//     one past their highest seq. The primary key (operation_id, seq)
//     refuses a second entry of one seq whatever the code does, and a
//     refused transaction is run again a few times.
const (
	operationColumns = `id, workspace_id, kind, subject, state, progress, result, error_code, error, jobs, created_at, updated_at`
	operationInsert  = `INSERT INTO operations (` + operationColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7::bytea, $8, $9, $10, $11::bigint, $12::bigint)`
	operationByID = `SELECT ` + operationColumns + ` FROM operations WHERE workspace_id = $1 AND id = $2`
	// operationUpdate: $1 state ('' keeps it), $2/$3 progress, $4/$5
	// result, $6/$7 the failure, $8 the job to add (''), $9 the jobs'
	// bound, $10 the time, $11/$12 the operation, $13 the states it moves
	// from.
	operationUpdate = `UPDATE operations SET
  state = CASE WHEN $1::text = '' THEN state ELSE $1::text END,
  progress = CASE WHEN $2::boolean THEN $3::text ELSE progress END,
  result = CASE WHEN $4::boolean THEN $5::bytea ELSE result END,
  error_code = CASE WHEN $1::text = '' THEN error_code WHEN $1::text = 'failed' THEN $6::text ELSE '' END,
  error = CASE WHEN $1::text = '' THEN error WHEN $1::text = 'failed' THEN $7::text ELSE '' END,
  jobs = CASE WHEN $8::text = '' OR jobs::jsonb @> jsonb_build_array($8::text) THEN jobs
    ELSE (jobs::jsonb || jsonb_build_array($8::text))::text END,
  updated_at = $10::bigint
WHERE workspace_id = $11 AND id = $12 AND state = ANY($13::text[])
  AND ($8::text = '' OR jobs::jsonb @> jsonb_build_array($8::text) OR jsonb_array_length(jobs::jsonb) < $9::integer)
RETURNING ` + operationColumns
	operationList = `SELECT ` + operationColumns + ` FROM operations WHERE workspace_id = $1 AND ($2 = '' OR kind = $2) AND ($3 = '' OR subject = $3)
ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4`
	operationLock   = `SELECT id FROM operations WHERE workspace_id = $1 AND id = $2 FOR UPDATE`
	evidenceColumns = `operation_id, workspace_id, seq, step, event, detail, at`
	// evidenceInsert appends one past the operation's highest seq while
	// the operation holds fewer than $7 entries.
	evidenceInsert = `INSERT INTO operation_evidence (` + evidenceColumns + `)
SELECT o.id, o.workspace_id, COALESCE((SELECT MAX(e.seq) FROM operation_evidence e WHERE e.operation_id = o.id), 0) + 1, $3, $4, $5::text, $6::bigint
FROM operations o WHERE o.workspace_id = $1 AND o.id = $2
  AND (SELECT COUNT(*) FROM operation_evidence e WHERE e.operation_id = o.id) < $7::bigint
RETURNING seq`
	evidenceList = `SELECT ` + evidenceColumns + ` FROM operation_evidence WHERE workspace_id = $1 AND operation_id = $2 ORDER BY seq`
)

// evidenceAttempts bounds the transactions of one append a primary-key
// refusal starts again.
const evidenceAttempts = 5

// errEvidenceFull is an append to an operation that holds MaxEvidence
// entries.
var errEvidenceFull = fmt.Errorf("%w: the operation holds %d entries of evidence, the most it may", jam.ErrConflict, store.MaxEvidence)

// OperationCreate implements [store.Operations].
func (s *Store) OperationCreate(ctx context.Context, o store.Operation) (store.Operation, error) {
	o, err := o.Canonical()
	if err != nil {
		return store.Operation{}, fmt.Errorf("operation: %w", err)
	}
	jobs, err := encodeJobs(o.Jobs)
	if err != nil {
		return store.Operation{}, fmt.Errorf("operation %s: %w", o.ID, err)
	}
	_, err = s.pool.Exec(ctx, operationInsert, o.ID, o.WorkspaceID, o.Kind, o.Subject, string(o.State), o.Progress, o.Result,
		o.ErrorCode, o.Error, jobs, micros(o.CreatedAt), micros(o.UpdatedAt))
	switch {
	case pgCode(err) == codeForeignKeyViolation:
		return store.Operation{}, fmt.Errorf("operation %s: %w: no workspace %s", o.ID, jam.ErrNotFound, o.WorkspaceID)
	case pgCode(err) == codeUniqueViolation:
		return store.Operation{}, fmt.Errorf("operation %s: %w", o.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Operation{}, fmt.Errorf("operation %s: %w", o.ID, mapErr(err))
	}
	return o, nil
}

// OperationUpdate implements [store.Operations].
func (s *Store) OperationUpdate(ctx context.Context, p store.OperationUpdateParams) (store.Operation, error) {
	if err := p.Validate(); err != nil {
		return store.Operation{}, fmt.Errorf("update operation: %w", err)
	}
	var progress string
	if p.Progress != nil {
		progress = *p.Progress
	}
	o, err := scanOperation(s.pool.QueryRow(ctx, operationUpdate, string(p.State), p.Progress != nil, progress, p.Result != nil, p.Result,
		p.ErrorCode, p.Error, string(p.AddJob), store.MaxOperationJobs, micros(p.At), p.WorkspaceID, p.ID, p.FromStates()))
	if errors.Is(err, pgx.ErrNoRows) {
		var cur store.Operation
		if cur, err = s.OperationGet(ctx, p.WorkspaceID, p.ID); err == nil {
			err = cur.Refusal(p)
		}
	}
	if err != nil {
		return store.Operation{}, fmt.Errorf("update operation %s: %w", p.ID, mapErr(err))
	}
	return o, nil
}

// OperationGet implements [store.Operations].
func (s *Store) OperationGet(ctx context.Context, ws jam.WorkspaceID, id jam.OperationID) (store.Operation, error) {
	if err := store.ValidateOperationRef(ws, id); err != nil {
		return store.Operation{}, fmt.Errorf("operation: %w", err)
	}
	o, err := scanOperation(s.pool.QueryRow(ctx, operationByID, ws, id))
	if err != nil {
		return store.Operation{}, fmt.Errorf("operation %s: %w", id, notFoundAs(err, "no such operation"))
	}
	return o, nil
}

// OperationList implements [store.Operations].
func (s *Store) OperationList(ctx context.Context, p store.OperationListParams) ([]store.Operation, error) {
	limit, err := p.Bound()
	if err != nil {
		return nil, fmt.Errorf("operations: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanOperation, operationList, p.WorkspaceID, p.Kind, p.Subject, limit)
	if err != nil {
		return nil, fmt.Errorf("operations: %w", mapErr(err))
	}
	return out, nil
}

// EvidenceAppend implements [store.Operations].
func (s *Store) EvidenceAppend(ctx context.Context, e store.Evidence) (store.Evidence, error) {
	e, err := e.Canonical()
	if err != nil {
		return store.Evidence{}, fmt.Errorf("evidence: %w", err)
	}
	var detail *string
	if e.Detail != nil {
		d := string(e.Detail)
		detail = &d
	}
	for attempt := 1; ; attempt++ {
		err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
			var id string
			if err := tx.QueryRow(ctx, operationLock, e.WorkspaceID, e.OperationID).Scan(&id); err != nil {
				return notFoundAs(err, "no such operation")
			}
			err := tx.QueryRow(ctx, evidenceInsert, e.WorkspaceID, e.OperationID, e.Step, string(e.Event), detail, micros(e.At), store.MaxEvidence).Scan(&e.Seq)
			if errors.Is(err, pgx.ErrNoRows) {
				return errEvidenceFull
			}
			return err
		})
		if err == nil || pgCode(err) != codeUniqueViolation || attempt == evidenceAttempts || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return store.Evidence{}, fmt.Errorf("evidence of operation %s: %w", e.OperationID, mapErr(err))
	}
	return e, nil
}

// EvidenceList implements [store.Operations].
func (s *Store) EvidenceList(ctx context.Context, ws jam.WorkspaceID, id jam.OperationID) ([]store.Evidence, error) {
	if err := store.ValidateOperationRef(ws, id); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanEvidence, evidenceList, ws, id)
	if err != nil {
		return nil, fmt.Errorf("evidence of operation %s: %w", id, mapErr(err))
	}
	return out, nil
}

// encodeJobs is the stored form of an operation's jobs: a JSON array.
func encodeJobs(jobs []jam.JobID) (string, error) {
	if len(jobs) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(jobs)
	return string(b), err
}

// decodeJobs reverses encodeJobs; no jobs is nil.
func decodeJobs(s string) ([]jam.JobID, error) {
	var jobs []jam.JobID
	if err := json.Unmarshal([]byte(s), &jobs); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return jobs, nil
}

func scanOperation(row scanner) (store.Operation, error) {
	var o store.Operation
	var id, ws, state, jobs string
	var created, updated int64
	err := row.Scan(&id, &ws, &o.Kind, &o.Subject, &state, &o.Progress, &o.Result, &o.ErrorCode, &o.Error, &jobs, &created, &updated)
	if err != nil {
		return store.Operation{}, err
	}
	o.ID, o.WorkspaceID, o.State = jam.OperationID(id), jam.WorkspaceID(ws), store.OperationState(state)
	if o.Jobs, err = decodeJobs(jobs); err != nil {
		return store.Operation{}, fmt.Errorf("operation %s: jobs: %w", o.ID, err)
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(created), fromMicros(updated)
	return o, nil
}

func scanEvidence(row scanner) (store.Evidence, error) {
	var e store.Evidence
	var op, ws, event string
	var detail *string
	var at int64
	if err := row.Scan(&op, &ws, &e.Seq, &e.Step, &event, &detail, &at); err != nil {
		return store.Evidence{}, err
	}
	e.OperationID, e.WorkspaceID, e.Event = jam.OperationID(op), jam.WorkspaceID(ws), store.EvidenceEvent(event)
	if detail != nil {
		e.Detail = []byte(*detail)
	}
	e.At = fromMicros(at)
	return e, nil
}
