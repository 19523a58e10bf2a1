package store

import (
	"context"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Delegations and their results.
//
// A Delegation is a parent session's assignment of work to a child
// session of a named agent: a role, instructions, pinned inputs (a change
// set, a commit) and a result contract (a JSON Schema document the
// result must satisfy). Its intent is fixed at creation; its child is set
// once, when the child session exists; its outcome moves by conditional
// writes, each of which increments Generation:
//
//	pending ──▶ running ──▶ submitted
//	   │           ├──────▶ failed     (attempts exhausted, or the child could not start)
//	   └───────────┴──────▶ cancelled | failed
//
// A DelegationResult is the validated answer of the child. There is at
// most one per delegation (its primary key), it is written in the same
// transaction that moves the delegation from running to submitted, and
// it is never changed or removed (the database refuses UPDATE and
// DELETE). The store checks the result's shape (a JSON object, bounded)
// and computes its SHA-256 digest; whether it satisfies the contract is
// the domain's to check before it submits.
//
// The instructions, the contract and the result are written by a person
// or an agent, so the dialects seal them at rest.

// DelegationState is where a delegation is.
type DelegationState string

// The states of a delegation.
const (
	DelegationPending   DelegationState = "pending"   // created; its child not started
	DelegationRunning   DelegationState = "running"   // its child session works on it
	DelegationSubmitted DelegationState = "submitted" // its result is recorded; final
	DelegationFailed    DelegationState = "failed"    // final, Reason says why
	DelegationCancelled DelegationState = "cancelled" // final
)

// Terminal says whether s is an end state.
func (s DelegationState) Terminal() bool {
	return s == DelegationSubmitted || s == DelegationFailed || s == DelegationCancelled
}

// The names of a delegation's contract: a built-in one or a custom
// schema.
const (
	ContractReview = "review"
	ContractTest   = "test"
	ContractCustom = "custom"
)

// DelegationInputs are the pinned subject of a delegation: a change set,
// a commit, both or neither (a research delegation may have none).
type DelegationInputs struct {
	ChangeSetID jam.ChangeSetID `json:"change_set_id,omitempty"`
	// Commit is a git object name (40 or 64 lower-case hex digits).
	Commit string `json:"commit,omitempty"`
}

// Delegation is one parent's assignment of work to a child session.
type Delegation struct {
	ID          jam.DelegationID
	WorkspaceID jam.WorkspaceID
	// Parent is the session that delegated; Child the session doing the
	// work ("" until it is started).
	Parent jam.SessionID
	Child  jam.SessionID
	Role   jam.SessionRole
	// Agent is the peer key (profile/scope) of the child's agent.
	Agent string
	// Instructions are what the child is asked to do (at most
	// MaxDelegationInstructions bytes; sealed at rest).
	Instructions string
	Inputs       DelegationInputs
	// Contract is the JSON Schema document the result must satisfy (a
	// JSON object of at most MaxDelegationContract bytes; sealed at rest),
	// ContractName the built-in contract it is or ContractCustom.
	Contract     []byte
	ContractName string
	State        DelegationState
	// Reason is the stable code of a failure or a cancel
	// (attempts_exhausted, start_failed, ...), Error its message; both ""
	// otherwise.
	Reason string
	Error  string
	// Attempts counts the invalid results submitted so far; at
	// MaxAttempts the delegation fails.
	Attempts    int
	MaxAttempts int
	// Generation counts the writes; DelegationRecordAttempt is fenced by
	// it.
	Generation int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// DelegationResult is the immutable, validated result of a delegation.
type DelegationResult struct {
	DelegationID jam.DelegationID
	WorkspaceID  jam.WorkspaceID
	// Result is a JSON object (at most MaxDelegationResult bytes; sealed
	// at rest), Digest the lower-case hex SHA-256 of exactly those bytes,
	// computed by the store.
	Result []byte
	Digest string
	At     time.Time
}

// DelegationListParams selects delegations of a workspace, newest first,
// at most Limit (0 means DefaultDelegationLimit). Each filter that is not
// "" narrows the selection, and they combine (all must hold).
type DelegationListParams struct {
	WorkspaceID jam.WorkspaceID
	// Parent selects the delegations of one parent session.
	Parent jam.SessionID
	// Child selects the delegation whose child that session is (at most
	// one: a session is the child of at most one delegation).
	Child jam.SessionID
	// ChangeSet selects the delegations whose Inputs.ChangeSetID it is.
	ChangeSet jam.ChangeSetID
	// State selects the delegations in that state.
	State DelegationState
	Limit int
}

// DelegationListLead is the filter a dialect's list query leads with as a
// plain equality, for its index; the other filters only narrow what it
// finds.
type DelegationListLead int

// The leads, from the most selective.
const (
	LeadNone      DelegationListLead = iota // no filter: the workspace's newest
	LeadChild                               // the child's unique index
	LeadChangeSet                           // the change set's index
	LeadParent                              // the parent's index
	LeadState                               // the state's index
)

// Lead is the most selective filter p sets.
func (p DelegationListParams) Lead() DelegationListLead {
	switch {
	case p.Child != "":
		return LeadChild
	case p.ChangeSet != "":
		return LeadChangeSet
	case p.Parent != "":
		return LeadParent
	case p.State != "":
		return LeadState
	}
	return LeadNone
}

// DelegationSetChildParams records the child session of a pending
// delegation and moves it to running.
type DelegationSetChildParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.DelegationID
	Child       jam.SessionID
	At          time.Time
}

// DelegationAttemptParams records one invalid submission of a running
// delegation read at Generation.
type DelegationAttemptParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.DelegationID
	Generation  int64
	At          time.Time
}

// DelegationSubmitParams records the result of a running delegation.
// Child is the session that submits: the delegation's own child.
type DelegationSubmitParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.DelegationID
	Child       jam.SessionID
	Result      []byte
	At          time.Time
}

// DelegationEndParams ends a delegation that is not terminal: Reason is
// the stable code of why ([a-z][a-z0-9_]{0,63}), Error a message.
type DelegationEndParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.DelegationID
	Reason      string
	Error       string
	At          time.Time
}

// Delegations stores delegations and their results. Every write but
// DelegationCreate is conditional on the stored row and changes nothing
// when the condition fails: jam.ErrConflict (the delegation is in
// another state or at another generation), jam.ErrNotFound (no such
// delegation in the workspace).
type Delegations interface {
	// DelegationCreate stores a new pending delegation (no child, no
	// attempt, Generation 1, UpdatedAt CreatedAt). An ID taken already is
	// jam.ErrAlreadyExists; an unknown workspace jam.ErrNotFound.
	DelegationCreate(ctx context.Context, d Delegation) (Delegation, error)
	// DelegationGet returns one delegation of the workspace; another
	// workspace's is jam.ErrNotFound.
	DelegationGet(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (Delegation, error)
	// DelegationList returns the delegations p selects, newest first.
	DelegationList(ctx context.Context, p DelegationListParams) ([]Delegation, error)
	// DelegationSetChild sets the child of a pending delegation that has
	// none and moves it to running. A session that is another
	// delegation's child already is jam.ErrAlreadyExists.
	DelegationSetChild(ctx context.Context, p DelegationSetChildParams) (Delegation, error)
	// DelegationRecordAttempt counts one invalid submission of a running
	// delegation at p.Generation; the attempt that reaches MaxAttempts
	// fails it (Reason attempts_exhausted).
	DelegationRecordAttempt(ctx context.Context, p DelegationAttemptParams) (Delegation, error)
	// DelegationSubmit, in one transaction, stores p's result and moves
	// the delegation from running to submitted, when p.Child is its
	// child. Of two submits at once, exactly one succeeds; a delegation
	// with a result already is jam.ErrAlreadyExists.
	DelegationSubmit(ctx context.Context, p DelegationSubmitParams) (Delegation, DelegationResult, error)
	// DelegationResultGet returns the result of a delegation of the
	// workspace: jam.ErrNotFound when it has none.
	DelegationResultGet(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (DelegationResult, error)
	// DelegationCancel moves a pending or running delegation to
	// cancelled.
	DelegationCancel(ctx context.Context, p DelegationEndParams) (Delegation, error)
	// DelegationFail moves a pending or running delegation to failed.
	DelegationFail(ctx context.Context, p DelegationEndParams) (Delegation, error)
}
