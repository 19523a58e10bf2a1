package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Delegations and their results (migration 0025; the list's indexes,
// migration 0027). Every write runs on the writer, which holds the
// file's write lock from its first step to its last, so no other
// connection to the file writes in between:
//
//   - each move is one UPDATE whose WHERE clause names the states it
//     applies from (and, for an attempt, the generation) and whose SET
//     increments the generation; zero rows is read back only to tell an
//     unknown delegation (jam.ErrNotFound) from a refused move;
//   - a submit is one transaction: the move from running to submitted,
//     conditional on the child, then the result's INSERT, whose primary
//     key refuses a second result whatever the code does.
//
// The instructions, the contract and the result are sealed (sealBlob)
// and bound to their workspace and delegation.
const (
	sealedInstructions = "delegations.instructions"
	sealedContract     = "delegations.contract"
	sealedDelegResult  = "delegation_results.result"

	delegationColumns = `id, workspace_id, parent_session, child_session, role, agent, instructions, inputs, contract, contract_name, state,
reason, error, attempts, max_attempts, generation, created_at, updated_at`
	delegationInsert = `INSERT INTO delegations (` + delegationColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	delegationByID   = `SELECT ` + delegationColumns + ` FROM delegations WHERE workspace_id = ? AND id = ?`
	// The list takes (workspace, parent, child, change set, state, limit)
	// and applies every filter that is not ''. Each query leads with one
	// filter as a plain equality, the one an index answers best (the
	// child's unique index, then the change set's, the parent's, the
	// state's); the others, written with their '' escape, only narrow
	// what it finds. delegationListQueries has them by their lead.
	delegationSelect     = `SELECT ` + delegationColumns + ` FROM delegations WHERE workspace_id = ?1`
	delegationChangeSet  = `json_extract(inputs, '$.change_set_id')`
	delegationListFilter = ` AND (?2 = '' OR parent_session = ?2) AND (?3 = '' OR child_session = ?3)
  AND (?4 = '' OR ` + delegationChangeSet + ` = ?4) AND (?5 = '' OR state = ?5)
ORDER BY created_at DESC, id DESC LIMIT ?6`
	delegationList            = delegationSelect + delegationListFilter
	delegationListByChild     = delegationSelect + ` AND child_session = ?3 AND child_session <> ''` + delegationListFilter
	delegationListByChangeSet = delegationSelect + ` AND ` + delegationChangeSet + ` = ?4` + delegationListFilter
	delegationListByParent    = delegationSelect + ` AND parent_session = ?2` + delegationListFilter
	delegationListByState     = delegationSelect + ` AND state = ?5` + delegationListFilter

	delegationSetChild = `UPDATE delegations SET child_session = ?1, state = 'running', generation = generation + 1, updated_at = ?2
WHERE workspace_id = ?3 AND id = ?4 AND state = 'pending' AND child_session = ''
RETURNING ` + delegationColumns
	// delegationAttempt counts an attempt at generation ?2; the one that
	// reaches max_attempts fails the delegation.
	delegationAttempt = `UPDATE delegations SET attempts = attempts + 1,
  state = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE state END,
  reason = CASE WHEN attempts + 1 >= max_attempts THEN ?1 ELSE reason END,
  generation = generation + 1, updated_at = ?3
WHERE workspace_id = ?4 AND id = ?5 AND state = 'running' AND generation = ?2
RETURNING ` + delegationColumns
	delegationSubmit = `UPDATE delegations SET state = 'submitted', generation = generation + 1, updated_at = ?1
WHERE workspace_id = ?2 AND id = ?3 AND state = 'running' AND child_session = ?4
RETURNING ` + delegationColumns
	delegationEnd = `UPDATE delegations SET state = ?1, reason = ?2, error = ?3, generation = generation + 1, updated_at = ?4
WHERE workspace_id = ?5 AND id = ?6 AND state IN ('pending', 'running')
RETURNING ` + delegationColumns
	delegationResultColumns = `delegation_id, workspace_id, result, digest, at`
	delegationResultInsert  = `INSERT INTO delegation_results (` + delegationResultColumns + `) VALUES (?, ?, ?, ?, ?)`
	delegationResultByID    = `SELECT ` + delegationResultColumns + ` FROM delegation_results WHERE workspace_id = ? AND delegation_id = ?`
)

func delegationAAD(column string, ws jam.WorkspaceID, id jam.DelegationID) []byte {
	return contentAAD(column, ws, string(id))
}

// DelegationCreate implements [store.Delegations].
func (s *Store) DelegationCreate(ctx context.Context, d store.Delegation) (store.Delegation, error) {
	d, err := d.Canonical()
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegation: %w", err)
	}
	_, err = s.writer.ExecContext(ctx, delegationInsert, d.ID, d.WorkspaceID, d.Parent, d.Child, d.Role, d.Agent,
		s.sealBlob([]byte(d.Instructions), delegationAAD(sealedInstructions, d.WorkspaceID, d.ID)), d.Inputs.Encode(),
		s.sealBlob(d.Contract, delegationAAD(sealedContract, d.WorkspaceID, d.ID)), d.ContractName, d.State, d.Reason, d.Error,
		d.Attempts, d.MaxAttempts, d.Generation, d.CreatedAt.UnixMicro(), d.UpdatedAt.UnixMicro())
	switch {
	case err != nil && isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY):
		return store.Delegation{}, fmt.Errorf("delegation %s: %w: no workspace %s", d.ID, jam.ErrNotFound, d.WorkspaceID)
	case err != nil && isUniqueViolation(err):
		return store.Delegation{}, fmt.Errorf("delegation %s: %w", d.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Delegation{}, fmt.Errorf("delegation %s: %w", d.ID, storageFault(err))
	}
	return d, nil
}

// DelegationGet implements [store.Delegations].
func (s *Store) DelegationGet(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (store.Delegation, error) {
	if err := store.ValidateDelegationRef(ws, id); err != nil {
		return store.Delegation{}, fmt.Errorf("delegation: %w", err)
	}
	d, err := s.scanDelegation(s.reader.QueryRowContext(ctx, delegationByID, ws, id))
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegation %s: %w", id, notFoundAs(err, "no such delegation"))
	}
	return d, nil
}

// DelegationList implements [store.Delegations].
func (s *Store) DelegationList(ctx context.Context, p store.DelegationListParams) ([]store.Delegation, error) {
	limit, err := p.Bound()
	if err != nil {
		return nil, fmt.Errorf("delegations: %w", err)
	}
	out, err := queryAll(ctx, s.reader, s.scanDelegation, delegationListQueries[p.Lead()], p.WorkspaceID, p.Parent, p.Child, p.ChangeSet, p.State, limit)
	if err != nil {
		return nil, fmt.Errorf("delegations: %w", storageFault(err))
	}
	return out, nil
}

// delegationListQueries are the list queries by the filter they lead
// with (store.DelegationListParams.Lead).
var delegationListQueries = [...]string{
	store.LeadNone:      delegationList,
	store.LeadChild:     delegationListByChild,
	store.LeadChangeSet: delegationListByChangeSet,
	store.LeadParent:    delegationListByParent,
	store.LeadState:     delegationListByState,
}

// DelegationSetChild implements [store.Delegations].
func (s *Store) DelegationSetChild(ctx context.Context, p store.DelegationSetChildParams) (store.Delegation, error) {
	if err := p.Validate(); err != nil {
		return store.Delegation{}, fmt.Errorf("set delegation child: %w", err)
	}
	d, err := s.scanDelegation(s.writer.QueryRowContext(ctx, delegationSetChild, p.Child, p.At.UnixMicro(), p.WorkspaceID, p.ID))
	switch {
	case err != nil && isUniqueViolation(err):
		err = fmt.Errorf("%w: session %s is the child of another delegation", jam.ErrAlreadyExists, p.Child)
	case errors.Is(err, sql.ErrNoRows):
		err = s.delegationRefused(ctx, s.reader, p.WorkspaceID, p.ID, "set child", 0, store.DelegationPending)
	}
	if err != nil {
		return store.Delegation{}, fmt.Errorf("set delegation %s child: %w", p.ID, storageFault(err))
	}
	return d, nil
}

// DelegationRecordAttempt implements [store.Delegations].
func (s *Store) DelegationRecordAttempt(ctx context.Context, p store.DelegationAttemptParams) (store.Delegation, error) {
	if err := p.Validate(); err != nil {
		return store.Delegation{}, fmt.Errorf("delegation attempt: %w", err)
	}
	d, err := s.scanDelegation(s.writer.QueryRowContext(ctx, delegationAttempt, store.ReasonAttemptsExhausted, p.Generation, p.At.UnixMicro(),
		p.WorkspaceID, p.ID))
	if errors.Is(err, sql.ErrNoRows) {
		err = s.delegationRefused(ctx, s.reader, p.WorkspaceID, p.ID, "attempt", p.Generation, store.DelegationRunning)
	}
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegation %s attempt: %w", p.ID, storageFault(err))
	}
	return d, nil
}

// DelegationSubmit implements [store.Delegations].
func (s *Store) DelegationSubmit(ctx context.Context, p store.DelegationSubmitParams) (store.Delegation, store.DelegationResult, error) {
	r, err := p.Canonical()
	if err != nil {
		return store.Delegation{}, store.DelegationResult{}, fmt.Errorf("submit delegation: %w", err)
	}
	var d store.Delegation
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		var err error
		d, err = s.scanDelegation(tx.QueryRowContext(ctx, delegationSubmit, r.At.UnixMicro(), p.WorkspaceID, p.ID, p.Child))
		if errors.Is(err, sql.ErrNoRows) {
			return s.delegationRefused(ctx, tx, p.WorkspaceID, p.ID, "submit", 0, store.DelegationRunning)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, delegationResultInsert, r.DelegationID, r.WorkspaceID,
			s.sealBlob(r.Result, delegationAAD(sealedDelegResult, r.WorkspaceID, r.DelegationID)), r.Digest, r.At.UnixMicro())
		if err != nil && isUniqueViolation(err) {
			return fmt.Errorf("%w: delegation %s has its result already", jam.ErrAlreadyExists, p.ID)
		}
		return err
	})
	if err != nil {
		return store.Delegation{}, store.DelegationResult{}, fmt.Errorf("submit delegation %s: %w", p.ID, err)
	}
	return d, r, nil
}

// DelegationResultGet implements [store.Delegations].
func (s *Store) DelegationResultGet(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (store.DelegationResult, error) {
	if err := store.ValidateDelegationRef(ws, id); err != nil {
		return store.DelegationResult{}, fmt.Errorf("delegation result: %w", err)
	}
	var r store.DelegationResult
	var sealed []byte
	var at int64
	err := s.reader.QueryRowContext(ctx, delegationResultByID, ws, id).Scan(&r.DelegationID, &r.WorkspaceID, &sealed, &r.Digest, &at)
	if err == nil {
		r.At = fromMicros(at)
		r.Result, err = s.openBlob(sealed, delegationAAD(sealedDelegResult, r.WorkspaceID, r.DelegationID))
	}
	if err != nil {
		return store.DelegationResult{}, fmt.Errorf("delegation %s result: %w", id, notFoundAs(err, "no result"))
	}
	return r, nil
}

// DelegationCancel implements [store.Delegations].
func (s *Store) DelegationCancel(ctx context.Context, p store.DelegationEndParams) (store.Delegation, error) {
	return s.delegationEnd(ctx, "cancel", store.DelegationCancelled, p)
}

// DelegationFail implements [store.Delegations].
func (s *Store) DelegationFail(ctx context.Context, p store.DelegationEndParams) (store.Delegation, error) {
	return s.delegationEnd(ctx, "fail", store.DelegationFailed, p)
}

func (s *Store) delegationEnd(ctx context.Context, verb string, to store.DelegationState, p store.DelegationEndParams) (store.Delegation, error) {
	if err := p.Validate(); err != nil {
		return store.Delegation{}, fmt.Errorf("%s delegation: %w", verb, err)
	}
	d, err := s.scanDelegation(s.writer.QueryRowContext(ctx, delegationEnd, to, p.Reason, p.Error, p.At.UnixMicro(), p.WorkspaceID, p.ID))
	if errors.Is(err, sql.ErrNoRows) {
		err = s.delegationRefused(ctx, s.reader, p.WorkspaceID, p.ID, verb, 0, store.DelegationPending, store.DelegationRunning)
	}
	if err != nil {
		return store.Delegation{}, fmt.Errorf("%s delegation %s: %w", verb, p.ID, storageFault(err))
	}
	return d, nil
}

// delegationRefused explains a conditional write that changed no row,
// reading the row through q (the write's transaction, or the reader after
// a single statement).
func (s *Store) delegationRefused(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, ws jam.WorkspaceID, id jam.DelegationID, what string, generation int64, want ...store.DelegationState,
) error {
	d, err := s.scanDelegation(q.QueryRowContext(ctx, delegationByID, ws, id))
	if err != nil {
		return notFoundAs(err, "no such delegation")
	}
	return d.Refusal(what, generation, want...)
}

func (s *Store) scanDelegation(row scanner) (store.Delegation, error) {
	var d store.Delegation
	var instructions, contract []byte
	var inputs string
	var created, updated int64
	err := row.Scan(&d.ID, &d.WorkspaceID, &d.Parent, &d.Child, &d.Role, &d.Agent, &instructions, &inputs, &contract, &d.ContractName, &d.State,
		&d.Reason, &d.Error, &d.Attempts, &d.MaxAttempts, &d.Generation, &created, &updated)
	if err != nil {
		return store.Delegation{}, err
	}
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	text, err := s.openBlob(instructions, delegationAAD(sealedInstructions, d.WorkspaceID, d.ID))
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegation %s instructions: %w", d.ID, err)
	}
	d.Instructions = string(text)
	if d.Contract, err = s.openBlob(contract, delegationAAD(sealedContract, d.WorkspaceID, d.ID)); err != nil {
		return store.Delegation{}, fmt.Errorf("delegation %s contract: %w", d.ID, err)
	}
	if d.Inputs, err = store.DecodeDelegationInputs(inputs); err != nil {
		return store.Delegation{}, err
	}
	return d, nil
}
