package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Operations and their evidence (migration 0023). Every write is one
// statement on the writer, which holds the file's write lock from its
// first step to its last, so no other connection to the file, this
// Store's or another process's, writes in between:
//
//   - OperationUpdate checks the state (and the jobs' bound) in its WHERE
//     clause and appends the job in its SET (json_insert, only when the
//     array lacks it); zero rows is read back only to tell an unknown
//     operation (jam.ErrNotFound) from a refused move (jam.ErrConflict).
//   - EvidenceAppend takes its seq in the INSERT ... SELECT, one past the
//     operation's highest, and its count bound in the same statement; the
//     primary key (operation_id, seq) refuses a second entry of one seq
//     whatever the code does, and a refusal is tried again a few times.
const (
	operationColumns = `id, workspace_id, kind, subject, state, progress, result, error_code, error, jobs, created_at, updated_at`
	operationInsert  = `INSERT INTO operations (` + operationColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	operationByID    = `SELECT ` + operationColumns + ` FROM operations WHERE workspace_id = ? AND id = ?`
	// operationUpdate: ?1 state ('' keeps it), ?2/?3 progress, ?4/?5
	// result, ?6/?7 the failure, ?8 the job to add (''), ?9 the jobs'
	// bound, ?10 the time, ?11/?12 the operation, ?13 the states it
	// moves from (a JSON array).
	operationUpdate = `UPDATE operations SET
  state = CASE WHEN ?1 = '' THEN state ELSE ?1 END,
  progress = CASE WHEN ?2 THEN ?3 ELSE progress END,
  result = CASE WHEN ?4 THEN ?5 ELSE result END,
  error_code = CASE WHEN ?1 = '' THEN error_code WHEN ?1 = 'failed' THEN ?6 ELSE '' END,
  error = CASE WHEN ?1 = '' THEN error WHEN ?1 = 'failed' THEN ?7 ELSE '' END,
  jobs = CASE WHEN ?8 = '' OR EXISTS (SELECT 1 FROM json_each(jobs) WHERE value = ?8) THEN jobs ELSE json_insert(jobs, '$[#]', ?8) END,
  updated_at = ?10
WHERE workspace_id = ?11 AND id = ?12 AND state IN (SELECT value FROM json_each(?13))
  AND (?8 = '' OR EXISTS (SELECT 1 FROM json_each(jobs) WHERE value = ?8) OR json_array_length(jobs) < ?9)
RETURNING ` + operationColumns
	operationList = `SELECT ` + operationColumns + ` FROM operations WHERE workspace_id = ?1 AND (?2 = '' OR kind = ?2) AND (?3 = '' OR subject = ?3)
ORDER BY created_at DESC, id DESC LIMIT ?4`
	evidenceColumns = `operation_id, workspace_id, seq, step, event, detail, at`
	// evidenceInsert appends one past the operation's highest seq while
	// the operation holds fewer than ?7 entries.
	evidenceInsert = `INSERT INTO operation_evidence (` + evidenceColumns + `)
SELECT o.id, o.workspace_id, COALESCE((SELECT MAX(e.seq) FROM operation_evidence e WHERE e.operation_id = o.id), 0) + 1, ?3, ?4, ?5, ?6
FROM operations o WHERE o.workspace_id = ?1 AND o.id = ?2
  AND (SELECT COUNT(*) FROM operation_evidence e WHERE e.operation_id = o.id) < ?7
RETURNING seq`
	evidenceList = `SELECT ` + evidenceColumns + ` FROM operation_evidence WHERE workspace_id = ? AND operation_id = ? ORDER BY seq`
)

// evidenceAttempts bounds the appends of one entry a primary-key refusal
// starts again.
const evidenceAttempts = 5

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
	_, err = s.writer.ExecContext(ctx, operationInsert, o.ID, o.WorkspaceID, o.Kind, o.Subject, o.State, o.Progress, nullBlob(o.Result),
		o.ErrorCode, o.Error, jobs, o.CreatedAt.UnixMicro(), o.UpdatedAt.UnixMicro())
	switch {
	case err != nil && isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY):
		return store.Operation{}, fmt.Errorf("operation %s: %w: no workspace %s", o.ID, jam.ErrNotFound, o.WorkspaceID)
	case err != nil && isUniqueViolation(err):
		return store.Operation{}, fmt.Errorf("operation %s: %w", o.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Operation{}, fmt.Errorf("operation %s: %w", o.ID, storageFault(err))
	}
	return o, nil
}

// OperationUpdate implements [store.Operations].
func (s *Store) OperationUpdate(ctx context.Context, p store.OperationUpdateParams) (store.Operation, error) {
	if err := p.Validate(); err != nil {
		return store.Operation{}, fmt.Errorf("update operation: %w", err)
	}
	from, err := json.Marshal(p.FromStates())
	if err != nil {
		return store.Operation{}, fmt.Errorf("update operation %s: %w", p.ID, err)
	}
	var progress string
	if p.Progress != nil {
		progress = *p.Progress
	}
	o, err := scanOperation(s.writer.QueryRowContext(ctx, operationUpdate, string(p.State), p.Progress != nil, progress, p.Result != nil, nullBlob(p.Result),
		p.ErrorCode, p.Error, string(p.AddJob), store.MaxOperationJobs, p.At.UnixMicro(), p.WorkspaceID, p.ID, string(from)))
	if errors.Is(err, sql.ErrNoRows) {
		var cur store.Operation
		if cur, err = s.OperationGet(ctx, p.WorkspaceID, p.ID); err == nil {
			err = cur.Refusal(p)
		}
	}
	if err != nil {
		return store.Operation{}, fmt.Errorf("update operation %s: %w", p.ID, storageFault(err))
	}
	return o, nil
}

// OperationGet implements [store.Operations].
func (s *Store) OperationGet(ctx context.Context, ws jam.WorkspaceID, id jam.OperationID) (store.Operation, error) {
	if err := store.ValidateOperationRef(ws, id); err != nil {
		return store.Operation{}, fmt.Errorf("operation: %w", err)
	}
	o, err := scanOperation(s.reader.QueryRowContext(ctx, operationByID, ws, id))
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
	out, err := queryAll(ctx, s.reader, scanOperation, operationList, p.WorkspaceID, p.Kind, p.Subject, limit)
	if err != nil {
		return nil, fmt.Errorf("operations: %w", err)
	}
	return out, nil
}

// EvidenceAppend implements [store.Operations].
func (s *Store) EvidenceAppend(ctx context.Context, e store.Evidence) (store.Evidence, error) {
	e, err := e.Canonical()
	if err != nil {
		return store.Evidence{}, fmt.Errorf("evidence: %w", err)
	}
	var detail any
	if e.Detail != nil {
		detail = string(e.Detail)
	}
	for attempt := 1; ; attempt++ {
		err = s.writer.QueryRowContext(ctx, evidenceInsert, e.WorkspaceID, e.OperationID, e.Step, e.Event, detail, e.At.UnixMicro(), store.MaxEvidence).Scan(&e.Seq)
		if err == nil || !isUniqueViolation(err) || attempt == evidenceAttempts || ctx.Err() != nil {
			break
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		if _, err = s.OperationGet(ctx, e.WorkspaceID, e.OperationID); err == nil {
			err = fmt.Errorf("%w: the operation holds %d entries of evidence, the most it may", jam.ErrConflict, store.MaxEvidence)
		}
	}
	if err != nil {
		return store.Evidence{}, fmt.Errorf("evidence of operation %s: %w", e.OperationID, storageFault(err))
	}
	return e, nil
}

// EvidenceList implements [store.Operations].
func (s *Store) EvidenceList(ctx context.Context, ws jam.WorkspaceID, id jam.OperationID) ([]store.Evidence, error) {
	if err := store.ValidateOperationRef(ws, id); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanEvidence, evidenceList, ws, id)
	if err != nil {
		return nil, fmt.Errorf("evidence of operation %s: %w", id, err)
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

// nullBlob stores nil as NULL.
func nullBlob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

func scanOperation(row scanner) (store.Operation, error) {
	var o store.Operation
	var jobs string
	var created, updated int64
	err := row.Scan(&o.ID, &o.WorkspaceID, &o.Kind, &o.Subject, &o.State, &o.Progress, &o.Result, &o.ErrorCode, &o.Error, &jobs, &created, &updated)
	if err != nil {
		return store.Operation{}, err
	}
	if o.Jobs, err = decodeJobs(jobs); err != nil {
		return store.Operation{}, fmt.Errorf("operation %s: jobs: %w", o.ID, err)
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(created), fromMicros(updated)
	return o, nil
}

func scanEvidence(row scanner) (store.Evidence, error) {
	var e store.Evidence
	var detail sql.NullString
	var at int64
	if err := row.Scan(&e.OperationID, &e.WorkspaceID, &e.Seq, &e.Step, &e.Event, &detail, &at); err != nil {
		return store.Evidence{}, err
	}
	if detail.Valid {
		e.Detail = []byte(detail.String)
	}
	e.At = fromMicros(at)
	return e, nil
}
