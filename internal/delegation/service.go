package delegation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// DefaultMaxAttempts is how many invalid results a delegation takes
// before it fails, unless the request or the Config says otherwise.
const DefaultMaxAttempts = 3

// Reasons a delegation ends with.
const (
	ReasonStartFailed = "start_failed"
	ReasonCancelled   = "cancelled"
)

// Store is the part of the store the service uses: the delegations
// aggregate.
type Store interface {
	store.Delegations
}

// Children is what the service needs of the runtime.
type Children interface {
	// Start creates d's child session (an ordinary session of d.Agent in
	// d.Role, its worktree at d's inputs) and returns its id. It does not
	// run it yet.
	Start(ctx context.Context, d store.Delegation) (jam.SessionID, error)
	// Begin queues the first turn of d's child, recorded on d, with d's
	// instructions, inputs and contract. It comes after the child is
	// recorded, so the child's submit always finds itself the child.
	Begin(ctx context.Context, d store.Delegation) error
	// Notify puts text, a local notice, into parent's next turn.
	Notify(ctx context.Context, parent jam.SessionID, text string) error
}

// Config configures a Service.
type Config struct {
	Minter *jam.Minter
	Logger *slog.Logger
	Now    func() time.Time
	// MaxAttempts is the default of a delegation's invalid results before
	// it fails (0: DefaultMaxAttempts).
	MaxAttempts int
	// Changed, when set, is told each delegation as a write of the
	// service leaves it (created, running, an attempt, submitted, failed,
	// cancelled), after the write: for the event stream. It runs on the
	// writer's goroutine, holding no lock of the service.
	Changed func(d store.Delegation)
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	return c
}

func (c Config) validate() error {
	if c.Minter == nil {
		return fmt.Errorf("%w: a delegation service needs a minter", jam.ErrInvalid)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > store.MaxDelegationAttempts {
		return fmt.Errorf("%w: max attempts %d is outside 1 to %d", jam.ErrInvalid, c.MaxAttempts, store.MaxDelegationAttempts)
	}
	return nil
}

// Service runs delegations. Its methods are safe for concurrent use.
type Service struct {
	cfg      Config
	st       Store
	children Children
}

// New returns a Service over st that starts children with children.
func New(cfg Config, st Store, children Children) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if st == nil || children == nil {
		return nil, fmt.Errorf("%w: a delegation service needs a store and children", jam.ErrInvalid)
	}
	return &Service{cfg: cfg, st: st, children: children}, nil
}

// CreateRequest asks for a delegation.
type CreateRequest struct {
	Workspace jam.WorkspaceID
	// Parent is the session that delegates.
	Parent jam.SessionID
	// Role is the child's role (jam.SessionRoles).
	Role string
	// Agent is the peer key (profile/scope) of the child's agent.
	Agent        string
	Instructions string
	Inputs       store.DelegationInputs
	// Contract names the result contract: "review" or "test" (built in),
	// or "custom" with Schema the JSON Schema 2020-12 document. "" is the
	// role's built-in contract (review, test); other roles must name one.
	Contract string
	Schema   json.RawMessage
	// MaxAttempts bounds the invalid results (0: the Config's).
	MaxAttempts int
}

// Create validates req, stores the delegation, starts its child and
// records it, and returns the running delegation. A child that cannot be
// started fails the delegation (Reason start_failed) and returns Start's
// error.
func (s *Service) Create(ctx context.Context, req CreateRequest) (store.Delegation, error) {
	d, err := s.prepare(req)
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegate: %w", err)
	}
	if d, err = s.st.DelegationCreate(ctx, d); err != nil {
		return store.Delegation{}, fmt.Errorf("delegate: %w", err)
	}
	s.changed(d)
	child, err := s.children.Start(ctx, d)
	if err != nil {
		return store.Delegation{}, s.startFailed(ctx, d, err)
	}
	running, err := s.st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: d.WorkspaceID, ID: d.ID, Child: child, At: s.cfg.Now()})
	if err != nil {
		return store.Delegation{}, fmt.Errorf("delegate %s: record the child %s: %w", d.ID, child, err)
	}
	d = running
	if err := s.children.Begin(ctx, d); err != nil {
		return store.Delegation{}, s.startFailed(ctx, d, err)
	}
	s.changed(d)
	s.cfg.Logger.Info("delegated", "component", "delegation", "delegation", d.ID, "parent", d.Parent, "child", d.Child, "role", d.Role,
		"contract", d.ContractName)
	return d, nil
}

// startFailed fails d, whose child could not be started, and returns
// why.
func (s *Service) startFailed(ctx context.Context, d store.Delegation, err error) error {
	failed, ferr := s.st.DelegationFail(context.WithoutCancel(ctx), store.DelegationEndParams{WorkspaceID: d.WorkspaceID, ID: d.ID,
		Reason: ReasonStartFailed, Error: clip(err.Error(), store.MaxDelegationErrorLen), At: s.cfg.Now()})
	if ferr == nil {
		s.changed(failed)
	}
	return fmt.Errorf("delegate %s: start the child: %w", d.ID, errors.Join(err, ferr))
}

// changed tells Config.Changed of d.
func (s *Service) changed(d store.Delegation) {
	if s.cfg.Changed != nil {
		s.cfg.Changed(d)
	}
}

// prepare validates req and returns the delegation to store.
func (s *Service) prepare(req CreateRequest) (store.Delegation, error) {
	role, err := jam.ParseSessionRole(req.Role)
	if err != nil {
		return store.Delegation{}, err
	}
	if _, err := jam.ParsePeerKey(req.Agent); err != nil {
		return store.Delegation{}, err
	}
	if strings.TrimSpace(req.Instructions) == "" {
		return store.Delegation{}, fmt.Errorf("%w: instructions are empty", jam.ErrInvalid)
	}
	if err := req.Inputs.Validate(); err != nil {
		return store.Delegation{}, err
	}
	if (role == jam.RoleReview || role == jam.RoleTest) && req.Inputs == (store.DelegationInputs{}) {
		return store.Delegation{}, fmt.Errorf("%w: a %s delegation pins what it is of: a change set or a commit", jam.ErrInvalid, role)
	}
	c, err := s.contract(role, req.Contract, req.Schema)
	if err != nil {
		return store.Delegation{}, err
	}
	maxAttempts := req.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = s.cfg.MaxAttempts
	}
	d := store.Delegation{ID: jam.New[jam.DelegationID](s.cfg.Minter), WorkspaceID: req.Workspace, Parent: req.Parent, Role: role, Agent: req.Agent,
		Instructions: req.Instructions, Inputs: req.Inputs, Contract: c.Doc, ContractName: c.Name, MaxAttempts: maxAttempts, CreatedAt: s.cfg.Now()}
	// The store's rules (bounds, ids) are checked before anything is
	// started.
	return d.Canonical()
}

// contract is the contract a request names.
func (s *Service) contract(role jam.SessionRole, name string, schema json.RawMessage) (*Contract, error) {
	if name == "" {
		switch role {
		case jam.RoleReview:
			name = store.ContractReview
		case jam.RoleTest:
			name = store.ContractTest
		default:
			return nil, fmt.Errorf("%w: a %s delegation names its contract (review, test, or custom with a schema)", jam.ErrInvalid, role)
		}
	}
	if name == store.ContractCustom {
		if len(schema) == 0 {
			return nil, fmt.Errorf("%w: a custom contract needs its schema", jam.ErrInvalid)
		}
		return Compile(store.ContractCustom, schema)
	}
	if len(schema) != 0 {
		return nil, fmt.Errorf("%w: the built-in contract %s takes no schema", jam.ErrInvalid, clip(name, 64))
	}
	return Builtin(name)
}

// Status is a delegation and, once submitted, its result.
type Status struct {
	Delegation store.Delegation
	Result     *store.DelegationResult
}

// Status returns one delegation of ws and its result, if it has one.
func (s *Service) Status(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (Status, error) {
	d, err := s.st.DelegationGet(ctx, ws, id)
	if err != nil {
		return Status{}, fmt.Errorf("delegation status: %w", err)
	}
	st := Status{Delegation: d}
	if d.State == store.DelegationSubmitted {
		r, err := s.st.DelegationResultGet(ctx, ws, id)
		if err != nil {
			return Status{}, fmt.Errorf("delegation status: %w", err)
		}
		st.Result = &r
	}
	return st, nil
}

// List returns the delegations of ws, newest first: of one parent when
// parent is not "", at most limit (0: the store's default).
func (s *Service) List(ctx context.Context, ws jam.WorkspaceID, parent jam.SessionID, limit int) ([]store.Delegation, error) {
	out, err := s.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: ws, Parent: parent, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("list delegations: %w", err)
	}
	return out, nil
}

// InvalidResultError is a result that breaks its contract. It wraps
// jam.ErrInvalid; its text lists the problems and says how many attempts
// remain.
type InvalidResultError struct {
	Delegation jam.DelegationID
	Problems   []Problem
	// Remaining is how many more results the delegation takes; 0 means
	// this one failed it.
	Remaining int
}

func (e *InvalidResultError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the result does not satisfy the contract of %s:", e.Delegation)
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	switch e.Remaining {
	case 0:
		b.WriteString("\nNo attempts remain: the delegation failed.")
	case 1:
		b.WriteString("\n1 attempt remains: fix these and submit again.")
	default:
		fmt.Fprintf(&b, "\n%d attempts remain: fix these and submit again.", e.Remaining)
	}
	return b.String()
}

// Unwrap makes the error a jam.ErrInvalid.
func (e *InvalidResultError) Unwrap() error { return jam.ErrInvalid }

// attemptRetries bounds the re-reads of a delegation whose attempt lost
// to another writer of the same generation.
const attemptRetries = 5

// Submit records result as the result of delegation id of ws, submitted
// by the session caller, which must be the delegation's child: for any
// other session the delegation is jam.ErrNotFound. A result that breaks
// the contract counts an attempt and returns an *InvalidResultError; the
// last attempt fails the delegation and tells the parent. A valid result
// is stored for good, and the parent is told. A delegation with a result
// already is jam.ErrAlreadyExists; one that has ended, jam.ErrConflict.
func (s *Service) Submit(ctx context.Context, ws jam.WorkspaceID, caller jam.SessionID, id jam.DelegationID, result json.RawMessage,
) (store.DelegationResult, error) {
	for range attemptRetries {
		d, err := s.st.DelegationGet(ctx, ws, id)
		if err != nil {
			return store.DelegationResult{}, fmt.Errorf("submit result: %w", err)
		}
		if d.Child == "" || d.Child != caller {
			return store.DelegationResult{}, fmt.Errorf("submit result: delegation %s: %w", id, jam.ErrNotFound)
		}
		switch d.State {
		case store.DelegationRunning:
		case store.DelegationSubmitted:
			return store.DelegationResult{}, fmt.Errorf("submit result: %w: delegation %s has its result already", jam.ErrAlreadyExists, id)
		default:
			return store.DelegationResult{}, fmt.Errorf("submit result: %w: delegation %s is %s", jam.ErrConflict, id, d.State)
		}
		c, err := Compile(d.ContractName, d.Contract)
		if err != nil {
			return store.DelegationResult{}, fmt.Errorf("submit result: delegation %s: its contract: %w", id, err)
		}
		if problems := Validate(c, result); len(problems) > 0 {
			after, err := s.st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: ws, ID: id, Generation: d.Generation,
				At: s.cfg.Now()})
			if errors.Is(err, jam.ErrConflict) {
				continue // another writer moved it: read it again
			}
			if err != nil {
				return store.DelegationResult{}, fmt.Errorf("submit result: %w", err)
			}
			s.changed(after)
			invalid := &InvalidResultError{Delegation: id, Problems: problems, Remaining: after.MaxAttempts - after.Attempts}
			if after.State == store.DelegationFailed {
				s.notify(ctx, after, fmt.Sprintf("Delegation %s (%s by %s) failed: %d results did not satisfy its %s contract. Read it with delegation_status(%q).",
					id, after.Role, after.Agent, after.Attempts, after.ContractName, id))
			}
			return store.DelegationResult{}, invalid
		}
		got, r, err := s.st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: ws, ID: id, Child: caller, Result: result, At: s.cfg.Now()})
		if errors.Is(err, jam.ErrConflict) {
			continue // it moved between the read and the submit
		}
		if err != nil {
			return store.DelegationResult{}, fmt.Errorf("submit result: %w", err)
		}
		s.changed(got)
		s.notify(ctx, got, fmt.Sprintf("Delegation %s (%s by %s) submitted: %s. Read it with delegation_status(%q).",
			id, got.Role, got.Agent, verdictLine(got.ContractName, r.Result), id))
		return r, nil
	}
	return store.DelegationResult{}, fmt.Errorf("submit result: %w: delegation %s keeps moving", jam.ErrConflict, id)
}

// notify tells d's parent text. The fact is durable already (the
// delegation's state, its result) and the parent reads it with
// delegation_status whatever becomes of the notice, so a failed notice is
// logged, not returned: the child's submit has succeeded.
func (s *Service) notify(ctx context.Context, d store.Delegation, text string) {
	if err := s.children.Notify(context.WithoutCancel(ctx), d.Parent, text); err != nil {
		s.cfg.Logger.Warn("delegation notice not delivered", "component", "delegation", "delegation", d.ID, "parent", d.Parent, "err", err)
	}
}

// verdictLine is the short word on a result: for a review its verdict and
// its findings, for a test whether it passed and its failures.
func verdictLine(contract string, result []byte) string {
	var r struct {
		Findings []json.RawMessage `json:"findings"`
		Failures []json.RawMessage `json:"failures"`
	}
	word := VerdictOf(contract, result)
	if word == "" || json.Unmarshal(result, &r) != nil {
		return fmt.Sprintf("a %s result of %d bytes", contract, len(result))
	}
	switch word {
	case VerdictPassed:
		return word
	case VerdictFailed:
		return fmt.Sprintf("%s, %d %s", word, len(r.Failures), plural(len(r.Failures), "failure", "failures"))
	}
	return fmt.Sprintf("%s, %d %s", word, len(r.Findings), plural(len(r.Findings), "finding", "findings"))
}

// The verdicts of the built-in contracts' results.
const (
	VerdictApprove        = "approve"
	VerdictRequestChanges = "request_changes"
	VerdictPassed         = "passed"
	VerdictFailed         = "failed"
)

// VerdictOf is the word on a result of a built-in contract: a review's
// verdict (VerdictApprove, VerdictRequestChanges), a test's VerdictPassed
// or VerdictFailed; "" for a custom contract or a result that does not
// say.
func VerdictOf(contract string, result []byte) string {
	switch contract {
	case store.ContractReview:
		var r struct {
			Verdict string `json:"verdict"`
		}
		if json.Unmarshal(result, &r) == nil && (r.Verdict == VerdictApprove || r.Verdict == VerdictRequestChanges) {
			return r.Verdict
		}
	case store.ContractTest:
		var r struct {
			Passed *bool `json:"passed"`
		}
		if json.Unmarshal(result, &r) == nil && r.Passed != nil {
			if *r.Passed {
				return VerdictPassed
			}
			return VerdictFailed
		}
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Cancel cancels a pending or running delegation of ws. by is the
// session that asks, which must be its parent ("" is the person, through
// the control API); for another session the delegation is jam.ErrNotFound.
// The child session is not stopped here: its later submit is refused.
func (s *Service) Cancel(ctx context.Context, ws jam.WorkspaceID, by jam.SessionID, id jam.DelegationID) (store.Delegation, error) {
	d, err := s.st.DelegationGet(ctx, ws, id)
	if err != nil {
		return store.Delegation{}, fmt.Errorf("cancel delegation: %w", err)
	}
	if by != "" && by != d.Parent {
		return store.Delegation{}, fmt.Errorf("cancel delegation %s: %w", id, jam.ErrNotFound)
	}
	d, err = s.st.DelegationCancel(ctx, store.DelegationEndParams{WorkspaceID: ws, ID: id, Reason: ReasonCancelled, At: s.cfg.Now()})
	if err != nil {
		return store.Delegation{}, fmt.Errorf("cancel delegation: %w", err)
	}
	s.changed(d)
	return d, nil
}

// LatestReview returns the newest submitted delegation of ws with the
// review contract whose input is change set cs; ok is false when there
// is none. Its Verdict is the review gate's answer.
func (s *Service) LatestReview(ctx context.Context, ws jam.WorkspaceID, cs jam.ChangeSetID) (d store.Delegation, ok bool, err error) {
	list, err := s.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: ws, ChangeSet: cs, State: store.DelegationSubmitted,
		Limit: store.MaxDelegationLimit})
	if err != nil {
		return store.Delegation{}, false, fmt.Errorf("latest review of %s: %w", cs, err)
	}
	for _, d := range list { // newest first
		if d.ContractName == store.ContractReview {
			return d, true, nil
		}
	}
	return store.Delegation{}, false, nil
}

// ReasonChildClosed fails a delegation whose child session was closed
// before it submitted.
const ReasonChildClosed = "child_closed"

// ChildClosed fails the running delegation whose child is the session
// child of ws, which was closed before it submitted, and tells the
// parent. A session that is no running delegation's child changes
// nothing.
func (s *Service) ChildClosed(ctx context.Context, ws jam.WorkspaceID, child jam.SessionID) error {
	list, err := s.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: ws, Child: child, State: store.DelegationRunning, Limit: 1})
	if err != nil || len(list) == 0 {
		return err
	}
	d, err := s.st.DelegationFail(ctx, store.DelegationEndParams{WorkspaceID: ws, ID: list[0].ID, Reason: ReasonChildClosed,
		Error: fmt.Sprintf("the child session %s was closed before it submitted a result", child), At: s.cfg.Now()})
	if errors.Is(err, jam.ErrConflict) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return fmt.Errorf("fail delegation %s: %w", list[0].ID, err)
	}
	s.changed(d)
	s.notify(ctx, d, fmt.Sprintf("Delegation %s (%s by %s) failed: its child session was closed before it submitted a result.", d.ID, d.Role, d.Agent))
	return nil
}

// Verdict says whether delegation id of ws approves: true only for a
// submitted result of the review contract whose verdict is approve.
// Anything else (another contract, not submitted yet, request_changes)
// is false; an unknown delegation is jam.ErrNotFound.
func (s *Service) Verdict(ctx context.Context, ws jam.WorkspaceID, id jam.DelegationID) (bool, error) {
	d, err := s.st.DelegationGet(ctx, ws, id)
	if err != nil {
		return false, fmt.Errorf("verdict: %w", err)
	}
	if d.State != store.DelegationSubmitted || d.ContractName != store.ContractReview {
		return false, nil
	}
	r, err := s.st.DelegationResultGet(ctx, ws, id)
	if err != nil {
		return false, fmt.Errorf("verdict: %w", err)
	}
	if sum := sha256.Sum256(r.Result); hex.EncodeToString(sum[:]) != r.Digest {
		return false, fmt.Errorf("verdict: %w: the result of %s does not match its digest", jam.ErrUnavailable, id)
	}
	if !json.Valid(r.Result) {
		return false, fmt.Errorf("verdict: %w: the result of %s is not JSON", jam.ErrUnavailable, id)
	}
	return VerdictOf(d.ContractName, r.Result) == VerdictApprove, nil
}
