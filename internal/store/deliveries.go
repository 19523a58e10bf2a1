package store

import (
	"context"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Operations and deliveries.
//
// An Operation is the person-visible record of a long action (deliver,
// merge): its state, a progress line, its result or error, the jobs that
// carry it out, and an append-only list of evidence, one entry per step
// event (start, end, failure) with what the step saw (a remote SHA, a pull
// request's number and URL, GitHub's request id). Evidence is never
// changed or removed: its sequence numbers count 1, 2, ... per operation,
// assigned by the database in the insert (one past the operation's
// highest), so two appends at once get distinct numbers.
//
// A Delivery is the intent and the outcome of delivering exactly one
// change set to one branch of one remote (and, when asked, one draft pull
// request). Its intent (change set, remote, branch, pull request base and
// title) is fixed at creation; (workspace, change set, remote, branch) is
// unique, so creating it again returns the first. Its outcome is written
// by whole-row updates fenced by Generation, which every update
// increments: a writer that read an older generation changes nothing
// (jam.ErrConflict), so two workers never both move it.
//
// The state machines:
//
//	operation:  pending ──▶ running ──▶ succeeded | failed | cancelled
//	delivery:   pending ──▶ building ──▶ pushing ──▶ pushed ──▶ pr_open ──▶ merged | closed
//	            any state before merged or closed ──▶ failed (and pushed, pr_open back from failed on a retry)
//
// OperationUpdate enforces its machine with a From list the database
// checks; a delivery's moves are checked in Go by the service that owns
// them (its row is fenced, so the check and the write cannot interleave
// with another writer's).

// OperationState is where an operation is.
type OperationState string

// The states of an operation.
const (
	OperationPending   OperationState = "pending"
	OperationRunning   OperationState = "running"
	OperationSucceeded OperationState = "succeeded"
	OperationFailed    OperationState = "failed"
	OperationCancelled OperationState = "cancelled"
)

// Terminal says whether s is an end state.
func (s OperationState) Terminal() bool {
	return s == OperationSucceeded || s == OperationFailed || s == OperationCancelled
}

// Operation is one long action of a workspace.
type Operation struct {
	ID          jam.OperationID
	WorkspaceID jam.WorkspaceID
	// Kind is what it does ([a-z][a-z0-9_.]{0,63}: deliver, merge).
	Kind string
	// Subject is the ID of what it acts on (a delivery's), "" for none.
	Subject string
	State   OperationState
	// Progress is one line saying what it is doing now (at most
	// MaxOperationText bytes).
	Progress string
	// Result is its output (JSON, nil for none; at most MaxOperationResult).
	Result []byte
	// ErrorCode is the stable code of its failure (a jam wire code:
	// credential_invalid, remote_unreachable, ...), Error its message;
	// both "" unless failed.
	ErrorCode string
	Error     string
	// Jobs are the jobs behind it, in the order they were added (at most
	// MaxOperationJobs).
	Jobs      []jam.JobID
	CreatedAt time.Time
	UpdatedAt time.Time
}

// OperationUpdateParams moves an operation. The update applies only when
// the operation is in one of From (empty From: any state that is not
// terminal); otherwise it is jam.ErrConflict and changes nothing.
type OperationUpdateParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.OperationID
	From        []OperationState
	// State is the new state ("" keeps it).
	State OperationState
	// Progress, when not nil, replaces the progress line.
	Progress *string
	// Result, when not nil, replaces the result.
	Result []byte
	// ErrorCode and Error replace the failure when State is failed, and
	// are cleared otherwise when State is set.
	ErrorCode string
	Error     string
	// AddJob, when not "", is appended to Jobs unless it is there already.
	AddJob jam.JobID
	At     time.Time
}

// EvidenceEvent is what happened at a step.
type EvidenceEvent string

// The events of a step.
const (
	EvidenceStart EvidenceEvent = "start"
	EvidenceEnd   EvidenceEvent = "end"
	EvidenceError EvidenceEvent = "error"
	EvidenceNote  EvidenceEvent = "note"
)

// Evidence is one append-only entry of an operation's evidence.
type Evidence struct {
	OperationID jam.OperationID
	WorkspaceID jam.WorkspaceID
	// Seq counts 1, 2, ... per operation; assigned by the store.
	Seq int
	// Step names the step ([a-z][a-z0-9_.]{0,63}: build, push, pull_request,
	// follow, merge, ...).
	Step  string
	Event EvidenceEvent
	// Detail is what the step saw, a JSON object (at most
	// MaxEvidenceDetail bytes): never a secret.
	Detail []byte
	At     time.Time
}

// OperationListParams selects operations of a workspace, newest first:
// of one kind and of one subject when they are not "", at most Limit (0
// means DefaultOperationLimit).
type OperationListParams struct {
	WorkspaceID jam.WorkspaceID
	Kind        string
	Subject     string
	Limit       int
}

// Operations stores operations and their evidence.
type Operations interface {
	// OperationCreate stores a new operation (UpdatedAt is CreatedAt). An
	// ID taken already is jam.ErrAlreadyExists; an unknown workspace
	// jam.ErrNotFound.
	OperationCreate(ctx context.Context, o Operation) (Operation, error)
	// OperationUpdate applies p in one conditional write (see
	// OperationUpdateParams); an unknown operation is jam.ErrNotFound.
	OperationUpdate(ctx context.Context, p OperationUpdateParams) (Operation, error)
	// OperationGet returns one operation of the workspace.
	OperationGet(ctx context.Context, ws jam.WorkspaceID, id jam.OperationID) (Operation, error)
	// OperationList returns the operations p selects, newest first.
	OperationList(ctx context.Context, p OperationListParams) ([]Operation, error)
	// EvidenceAppend appends e to its operation's evidence and returns it
	// with its Seq. An operation with MaxEvidence entries already is
	// jam.ErrConflict; an unknown operation jam.ErrNotFound.
	EvidenceAppend(ctx context.Context, e Evidence) (Evidence, error)
	// EvidenceList returns an operation's evidence by Seq ascending.
	EvidenceList(ctx context.Context, ws jam.WorkspaceID, id jam.OperationID) ([]Evidence, error)
}

// DeliveryState is where a delivery is.
type DeliveryState string

// The states of a delivery.
const (
	DeliveryPending  DeliveryState = "pending"  // created; nothing built
	DeliveryBuilding DeliveryState = "building" // building the commit
	DeliveryPushing  DeliveryState = "pushing"  // the commit is built (Commit); pushing it
	DeliveryPushed   DeliveryState = "pushed"   // the branch is at Commit; no pull request asked, or opening it
	DeliveryPROpen   DeliveryState = "pr_open"  // the draft pull request is open (PRNumber)
	DeliveryMerged   DeliveryState = "merged"   // its pull request was merged; final
	DeliveryClosed   DeliveryState = "closed"   // its pull request was closed unmerged; final
	DeliveryFailed   DeliveryState = "failed"   // a step failed for good (ErrorCode)
)

// Delivery is the intent and outcome of delivering one change set.
type Delivery struct {
	ID          jam.DeliveryID
	WorkspaceID jam.WorkspaceID
	ChangeSetID jam.ChangeSetID
	// SessionID and Turn are the change set's, for the person's view.
	SessionID jam.SessionID
	Turn      jam.TurnID
	// Remote is where the branch goes: an https or ssh URL or a local path,
	// never holding a credential.
	Remote string
	// Branch is the branch pushed (refs/heads/Branch).
	Branch string
	// ConnectionID is the connection whose token authenticates the push and
	// the API calls ("" for none: a local path, ssh).
	ConnectionID jam.ConnectionID
	// PR asks for a draft pull request of Branch into Base in Repo
	// ("OWNER/NAME") titled Title; APIBaseURL is GitHub's API ("" for
	// github.com's).
	PR         bool
	Repo       string
	APIBaseURL string
	Base       string
	Title      string
	// Operation is the deliver operation that carries it out.
	Operation jam.OperationID
	State     DeliveryState
	// Commit is the built commit ("" before the build), RemoteSHA the
	// branch's commit on the remote as last seen.
	Commit    string
	RemoteSHA string
	// PRNumber and PRURL name the pull request (0 and "" before it is
	// open); PRState is GitHub's state as last followed (open, closed,
	// merged), PRHeadSHA its head then, Checks the combined checks state
	// then (success, pending, failure; "" before the first follow).
	PRNumber  int
	PRURL     string
	PRState   string
	PRHeadSHA string
	Checks    string
	// ErrorCode and Error say why it failed ("" otherwise).
	ErrorCode string
	Error     string
	// Generation counts its updates; DeliveryUpdate is fenced by it.
	Generation int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// FollowedAt is when its pull request was last followed (zero: never).
	FollowedAt time.Time
}

// Terminal says whether the delivery's pull request is settled for good.
func (d Delivery) Terminal() bool { return d.State == DeliveryMerged || d.State == DeliveryClosed }

// DeliveryListParams selects deliveries of a workspace, newest first: of
// one change set and of one state when they are not "", at most Limit (0
// means DefaultDeliveryLimit).
type DeliveryListParams struct {
	WorkspaceID jam.WorkspaceID
	ChangeSetID jam.ChangeSetID
	State       DeliveryState
	Limit       int
}

// Deliveries stores deliveries.
type Deliveries interface {
	// DeliveryCreate stores a new delivery (Generation 1, UpdatedAt
	// CreatedAt). When the workspace holds a delivery of the same change
	// set, remote and branch already, it returns that one and stores
	// nothing (created false); two creates of one intent at once store
	// one. An ID taken already is jam.ErrAlreadyExists; an unknown
	// workspace jam.ErrNotFound.
	DeliveryCreate(ctx context.Context, d Delivery) (got Delivery, created bool, err error)
	// DeliveryUpdate writes d's outcome fields (State, Commit, RemoteSHA,
	// PRNumber, PRURL, PRState, PRHeadSHA, Checks, ErrorCode, Error,
	// FollowedAt, UpdatedAt; the intent fields are ignored) when the
	// stored Generation is d.Generation, and returns the row with
	// Generation one up. Another generation is jam.ErrConflict and changes
	// nothing; an unknown delivery jam.ErrNotFound.
	DeliveryUpdate(ctx context.Context, d Delivery) (Delivery, error)
	// DeliveryGet returns one delivery of the workspace.
	DeliveryGet(ctx context.Context, ws jam.WorkspaceID, id jam.DeliveryID) (Delivery, error)
	// DeliveryList returns the deliveries p selects, newest first.
	DeliveryList(ctx context.Context, p DeliveryListParams) ([]Delivery, error)
}
