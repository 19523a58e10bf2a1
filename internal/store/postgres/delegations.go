package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Delegations and their results (migration 0025; the list's indexes,
// migration 0027), as in the SQLite dialect, under READ COMMITTED:
//
//   - each move is one UPDATE whose WHERE clause names the states it
//     applies from (and, for an attempt, the generation), which the UPDATE
//     re-checks on the row version it locks, and whose SET increments the
//     generation: of two moves at once, the second waits for the first's
//     commit and then matches no row. Zero rows is read back to tell
//     jam.ErrNotFound from a refused move;
//   - a submit is one transaction: the move from running to submitted,
//     conditional on the child (a second submit waits on the row lock, then
//     finds it submitted), then the result's INSERT, whose primary key
//     refuses a second result whatever the code does.
//
// The instructions, the contract and the result are sealed (sealBlob)
// and bound to their workspace and delegation, with the aad the SQLite
// dialect uses.
const (
	sealedInstructions = "delegations.instructions"
	sealedContract     = "delegations.contract"
	sealedDelegResult  = "delegation_results.result"

	delegationColumns = `id, workspace_id, parent_session, child_session, role, agent, instructions, inputs, contract, contract_name, state,
reason, error, attempts, max_attempts, generation, created_at, updated_at`
	delegationInsert = `INSERT INTO delegations (` + delegationColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::bigint, $15::bigint, $16::bigint, $17::bigint, $18::bigint)`
	delegationByID = `SELECT ` + delegationColumns + ` FROM delegations WHERE workspace_id = $1 AND id = $2`
	// The list takes (workspace, parent, child, change set, state, limit)
	// and applies every filter that is not '', led, as in the SQLite
	// dialect, by the one an index answers best as a plain equality (a
	// generic plan cannot drop a '' escape); delegationListQueries has
	// them by their lead. The change set is read from the JSON object of inputs,
	// with the expression of its index (migration 0027).
	delegationSelect     = `SELECT ` + delegationColumns + ` FROM delegations WHERE workspace_id = $1`
	delegationChangeSet  = `((inputs::jsonb) ->> 'change_set_id')`
	delegationListFilter = ` AND ($2 = '' OR parent_session = $2) AND ($3 = '' OR child_session = $3)
  AND ($4 = '' OR ` + delegationChangeSet + ` = $4) AND ($5 = '' OR state = $5)
ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $6`
	delegationList            = delegationSelect + delegationListFilter
	delegationListByChild     = delegationSelect + ` AND child_session = $3 AND child_session <> ''` + delegationListFilter
	delegationListByChangeSet = delegationSelect + ` AND ` + delegationChangeSet + ` = $4` + delegationListFilter
	delegationListByParent    = delegationSelect + ` AND parent_session = $2` + delegationListFilter
	delegationListByState     = delegationSelect + ` AND state = $5` + delegationListFilter

	delegationSetChild = `UPDATE delegations SET child_session = $1, state = 'running', generation = generation + 1, updated_at = $2::bigint
WHERE workspace_id = $3 AND id = $4 AND state = 'pending' AND child_session = ''
RETURNING ` + delegationColumns
	// delegationAttempt counts an attempt at generation $2; the one that
	// reaches max_attempts fails the delegation.
	delegationAttempt = `UPDATE delegations SET attempts = attempts + 1,
  state = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE state END,
  reason = CASE WHEN attempts + 1 >= max_attempts THEN $1 ELSE reason END,
  generation = generation + 1, updated_at = $3::bigint
WHERE workspace_id = $4 AND id = $5 AND state = 'running' AND generation = $2::bigint
RETURNING ` + delegationColumns
	delegationSubmit = `UPDATE delegations SET state = 'submitted', generation = generation + 1, updated_at = $1::bigint
WHERE workspace_id = $2 AND id = $3 AND state = 'running' AND child_session = $4
RETURNING ` + delegationColumns
	delegationEnd = `UPDATE delegations SET state = $1, reason = $2, error = $3, generation = generation + 1, updated_at = $4::bigint
WHERE workspace_id = $5 AND id = $6 AND state IN ('pending', 'running')
RETURNING ` + delegationColumns
	delegationResultColumns = `delegation_id, workspace_id, result, digest, at`
	delegationResultInsert  = `INSERT INTO delegation_results (` + delegationResultColumns + `) VALUES ($1, $2, $3, $4, $5::bigint)`
	delegationResultByID    = `SELECT ` + delegationResultColumns + ` FROM delegation_results WHERE workspace_id = $1 AND delegation_id = $2`
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
	_, err = s.pool.Exec(ctx, delegationInsert, d.ID, d.WorkspaceID, string(d.Parent), string(d.Child), string(d.Role), d.Agent,
		s.sealBlob([]byte(d.Instructions), delegationAAD(sealedInstructions, d.WorkspaceID, d.ID)), d.Inputs.Encode(),
		s.sealBlob(d.Contract, delegationAAD(sealedContract, d.WorkspaceID, d.ID)), d.ContractName, string(d.State), d.Reason, d.Error,
		d.Attempts, d.MaxAttempts, d.Generation, micros(d.CreatedAt), micros(d.UpdatedAt))
	switch {
	case err != nil && pgCode(err) == codeForeignKeyViolation:
		return store.Delegation{}, fmt.Errorf("delegation %s: %w: no workspace %s", d.ID, jam.ErrNotFound, d.WorkspaceID)
	case err != nil && pgCode(err) == codeUniqueViolation:
		return store.Delegation{}, fmt.Errorf("delegation %s: %w", d.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Delegation{}, fmt.Errorf("delegation %s: %w", d.ID, mapErr(err))
	}
	return d, nil
}

// DelegationGet implements [store.Delegations].
func (s *Store) DelegationGet(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (store.Delegation, error) {
	if err := store.ValidateDelegationRef(ws, id); err != nil {
		return store.Delegation{}, fmt.Errorf("delegation: %w", err)
	}
	d, err := s.scanDelegation(s.pool.QueryRow(ctx, delegationByID, ws, id))
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
	out, err := queryAll(ctx, s.pool, s.scanDelegation, delegationListQueries[p.Lead()], p.WorkspaceID, string(p.Parent), string(p.Child),
		string(p.ChangeSet), string(p.State), limit)
	if err != nil {
		return nil, fmt.Errorf("delegations: %w", mapErr(err))
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
	d, err := s.scanDelegation(s.pool.QueryRow(ctx, delegationSetChild, string(p.Child), micros(p.At), p.WorkspaceID, p.ID))
	switch {
	case err != nil && pgCode(err) == codeUniqueViolation:
		err = fmt.Errorf("%w: session %s is the child of another delegation", jam.ErrAlreadyExists, p.Child)
	case errors.Is(err, pgx.ErrNoRows):
		err = s.delegationRefused(ctx, s.pool, p.WorkspaceID, p.ID, "set child", 0, store.DelegationPending)
	}
	if err != nil {
		return store.Delegation{}, fmt.Errorf("set delegation %s child: %w", p.ID, mapErr(err))
	}
	return d, nil
}

// DelegationRecordAttempt implements [store.Delegations].
func (s *Store) DelegationRecordAttempt(ctx context.Context, p store.DelegationAttemptParams) (store.Delegation, error) {
	if err := p.Validate(); err != nil {
		return store.Delegation{}, fmt.Errorf("delegation attempt: %w", err)
	}
	d, err := s.scanDelegation(s.pool.QueryRow(ctx, delegationAttempt, store.ReasonAttemptsExhausted, p.Generation, micros(p.At),
		p.WorkspaceID, p.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.delegationRefused(ctx, s.pool, p.WorkspaceID, p.ID, "attempt", p.Generation, store.DelegationRunning)
	}
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegation %s attempt: %w", p.ID, mapErr(err))
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
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var err error
		d, err = s.scanDelegation(tx.QueryRow(ctx, delegationSubmit, micros(r.At), p.WorkspaceID, p.ID, string(p.Child)))
		if errors.Is(err, pgx.ErrNoRows) {
			return s.delegationRefused(ctx, tx, p.WorkspaceID, p.ID, "submit", 0, store.DelegationRunning)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, delegationResultInsert, r.DelegationID, r.WorkspaceID,
			s.sealBlob(r.Result, delegationAAD(sealedDelegResult, r.WorkspaceID, r.DelegationID)), r.Digest, micros(r.At))
		if err != nil && pgCode(err) == codeUniqueViolation {
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
	err := s.pool.QueryRow(ctx, delegationResultByID, ws, id).Scan(&r.DelegationID, &r.WorkspaceID, &sealed, &r.Digest, &at)
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
	d, err := s.scanDelegation(s.pool.QueryRow(ctx, delegationEnd, string(to), p.Reason, p.Error, micros(p.At), p.WorkspaceID, p.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.delegationRefused(ctx, s.pool, p.WorkspaceID, p.ID, verb, 0, store.DelegationPending, store.DelegationRunning)
	}
	if err != nil {
		return store.Delegation{}, fmt.Errorf("%s delegation %s: %w", verb, p.ID, mapErr(err))
	}
	return d, nil
}

// delegationRefused explains a conditional write that changed no row,
// reading the row through q (the write's transaction, or the reader after
// a single statement).
func (s *Store) delegationRefused(ctx context.Context, q querier, ws jam.WorkspaceID, id jam.DelegationID, what string, generation int64, want ...store.DelegationState,
) error {
	d, err := s.scanDelegation(q.QueryRow(ctx, delegationByID, ws, id))
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
