package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/store"
)

// The gates of a merge, as a refusal names them.
const (
	GateState    = "state"    // the delivery has an open pull request
	GateApproval = "approval" // a person approved the merge
	GateHead     = "head"     // the pull request's head is the delivered commit
	GateChecks   = "checks"   // its checks and combined status are green
	GateReview   = "review"   // the change set's newest review approves it
)

// Review is the newest validated review of a change set: the delegation
// whose result it is, the reviewing agent, and whether its verdict is
// approve.
type Review struct {
	Delegation jam.DelegationID
	Agent      string
	Approved   bool
}

// Reviews finds the newest submitted review of change set cs of the
// workspace: found is false when none has been submitted.
type Reviews func(ctx context.Context, cs jam.ChangeSetID) (r Review, found bool, err error)

// GateError is a merge refused by a gate. It is jam.ErrGateRefused.
type GateError struct {
	Gate   string
	Reason string
}

func (e *GateError) Error() string { return "merge refused by the " + e.Gate + " gate: " + e.Reason }

// Unwrap exposes jam.ErrGateRefused.
func (e *GateError) Unwrap() error { return jam.ErrGateRefused }

// MergeMethods are the methods GitHub merges with.
var MergeMethods = []string{"squash", "merge", "rebase"}

// MergeRequest says how to merge a delivery's pull request.
type MergeRequest struct {
	// Method is squash (""), merge or rebase.
	Method string
	// Approved is the person's explicit approval (jam merge --yes).
	Approved bool
	// RequireReview asks the review gate too (also asked for every merge
	// when Config.RequireReview is set): the change set's newest
	// validated review must approve it.
	RequireReview bool
}

// followed is a delivery as its pull request now is, with the checks.
func (s *Service) followed(ctx context.Context, d store.Delivery) (store.Delivery, forge.Checks, error) {
	_, token, err := s.credential(ctx, d)
	if err != nil {
		return d, forge.Checks{}, err
	}
	c, repo, err := s.client(d, token)
	if err != nil {
		return d, forge.Checks{}, err
	}
	pr, err := c.PullRequest(ctx, repo, d.PRNumber)
	if err != nil {
		return d, forge.Checks{}, fmt.Errorf("follow pull request %d: %w", d.PRNumber, remoteError(err))
	}
	checks, err := c.Checks(ctx, repo, pr.HeadSHA)
	if err != nil {
		return d, forge.Checks{}, fmt.Errorf("follow pull request %d: checks: %w", d.PRNumber, remoteError(err))
	}
	d.PRState, d.PRHeadSHA, d.Checks, d.FollowedAt = prState(pr), pr.HeadSHA, checks.State, s.cfg.Now()
	switch d.PRState {
	case "merged":
		d.State = store.DeliveryMerged
	case "closed":
		d.State = store.DeliveryClosed
	}
	return d, checks, nil
}

// Follow reads the delivery's pull request (state, head, checks) from
// GitHub and stores what it saw. A delivery without an open pull request
// is returned as it is.
func (s *Service) Follow(ctx context.Context, id jam.DeliveryID) (store.Delivery, error) {
	d, _, err := s.follow(ctx, id)
	return d, err
}

func (s *Service) follow(ctx context.Context, id jam.DeliveryID) (store.Delivery, forge.Checks, error) {
	for range 3 {
		d, err := s.st.DeliveryGet(ctx, s.cfg.Workspace, id)
		if err != nil || d.State != store.DeliveryPROpen {
			return d, forge.Checks{}, err
		}
		next, checks, err := s.followed(ctx, d)
		if err != nil {
			return d, forge.Checks{}, err
		}
		next.UpdatedAt = s.cfg.Now()
		got, err := s.st.DeliveryUpdate(ctx, next)
		if errors.Is(err, jam.ErrConflict) {
			continue // a step or another follow moved it first
		}
		return got, checks, err
	}
	return store.Delivery{}, forge.Checks{}, fmt.Errorf("follow delivery %s: %w: it kept moving", id, jam.ErrConflict)
}

// FollowAll follows every delivery with an open pull request (the
// daemon's timer); failures are logged.
func (s *Service) FollowAll(ctx context.Context) {
	list, err := s.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: s.cfg.Workspace, State: store.DeliveryPROpen, Limit: store.MaxDeliveryLimit})
	if err != nil {
		s.cfg.Logger.Warn("follow deliveries", "err", err)
		return
	}
	for _, d := range list {
		if ctx.Err() != nil {
			return
		}
		if _, err := s.Follow(ctx, d.ID); err != nil {
			s.cfg.Logger.Warn("follow delivery", "delivery", d.ID, "err", err)
		}
	}
}

// Merge checks the gates (an open pull request, the person's approval,
// the head still the delivered commit, green checks, read from GitHub
// now) and starts the merge operation; a refusal is a [*GateError] naming
// the gate, and starts nothing.
func (s *Service) Merge(ctx context.Context, id jam.DeliveryID, req MergeRequest) (store.Operation, error) {
	method := req.Method
	if method == "" {
		method = "squash"
	}
	if !slices.Contains(MergeMethods, method) {
		return store.Operation{}, fmt.Errorf("merge: %w: method %q is not one of %s", jam.ErrInvalid, method, strings.Join(MergeMethods, ", "))
	}
	d, err := s.st.DeliveryGet(ctx, s.cfg.Workspace, id)
	if err != nil {
		return store.Operation{}, fmt.Errorf("merge: delivery %s: %w", id, err)
	}
	if d.State != store.DeliveryPROpen {
		return store.Operation{}, &GateError{GateState, fmt.Sprintf("delivery %s is %s; only an open pull request merges", d.ID, d.State)}
	}
	if !req.Approved {
		return store.Operation{}, &GateError{GateApproval, "merging needs a person's explicit approval (jam merge --yes)"}
	}
	review, err := s.reviewGate(ctx, d, req.RequireReview || s.cfg.RequireReview)
	if err != nil {
		return store.Operation{}, err
	}
	d, checks, err := s.follow(ctx, id)
	if err != nil {
		return store.Operation{}, fmt.Errorf("merge: %w", err)
	}
	if d.State != store.DeliveryPROpen {
		return store.Operation{}, &GateError{GateState, fmt.Sprintf("the pull request is %s", d.PRState)}
	}
	if d.PRHeadSHA != d.Commit {
		return store.Operation{}, &GateError{GateHead, fmt.Sprintf("the pull request's head moved to %s; jam delivered %s", short(d.PRHeadSHA), short(d.Commit))}
	}
	if checks.State != forge.StateSuccess {
		why := "checks are " + checks.State
		if len(checks.Failing) > 0 {
			why += "; failing: " + strings.Join(checks.Failing, ", ")
		}
		if len(checks.Pending) > 0 {
			why += "; pending: " + strings.Join(checks.Pending, ", ")
		}
		return store.Operation{}, &GateError{GateChecks, why}
	}
	opID := jam.New[jam.OperationID](s.cfg.Minter)
	op, err := s.ensureOperation(ctx, OpMerge, opID, string(d.ID))
	if err != nil {
		return store.Operation{}, fmt.Errorf("merge: %w", err)
	}
	gates := detail{"approved": true, "head_sha": d.PRHeadSHA, "checks": checks.State, "method": method, "request_id": checks.RequestID}
	if review != nil {
		gates["review"], gates["reviewer"] = string(review.Delegation), review.Agent
	}
	s.evidence(ctx, opID, "gates", store.EvidenceNote, gates)
	if err := s.enqueue(ctx, KindMerge, d, payload{Delivery: d.ID, Operation: opID, Method: method, Head: d.PRHeadSHA}); err != nil {
		s.finish(ctx, opID, store.OperationFailed, nil, err)
		return store.Operation{}, err
	}
	return op, nil
}

// reviewGate, when required, refuses a merge unless the newest
// validated review of the delivery's change set approves it, and returns
// that review.
func (s *Service) reviewGate(ctx context.Context, d store.Delivery, required bool) (*Review, error) {
	if !required {
		return nil, nil
	}
	if s.cfg.Reviews == nil {
		return nil, &GateError{GateReview, "merging needs an approving review, and reviews are not available here"}
	}
	r, found, err := s.cfg.Reviews(ctx, d.ChangeSetID)
	if err != nil {
		return nil, fmt.Errorf("merge: the review gate: %w", err)
	}
	if !found {
		return nil, &GateError{GateReview, fmt.Sprintf("merging needs an approving review of change set %s, and none has been submitted "+
			"(an agent delegates one with jam's delegate tool, role review)", d.ChangeSetID)}
	}
	if !r.Approved {
		return nil, &GateError{GateReview, fmt.Sprintf("the newest review of change set %s (%s by %s) requests changes", d.ChangeSetID, r.Delegation, r.Agent)}
	}
	return &r, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return "(none)"
	}
	return sha
}

// mergeJob merges the pull request at the head the gates saw; GitHub
// refuses the merge if the head moved since.
func (s *Service) mergeJob(ctx context.Context, j store.Job) ([]byte, error) {
	var p payload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, job.Permanent(fmt.Errorf("merge: payload: %w", err))
	}
	op, err := s.ensureOperation(ctx, OpMerge, p.Operation, string(p.Delivery))
	if err != nil {
		return nil, err
	}
	if op.State.Terminal() {
		return nil, nil
	}
	d, err := s.st.DeliveryGet(ctx, s.cfg.Workspace, p.Delivery)
	if err != nil {
		return nil, job.Permanent(err)
	}
	s.progress(ctx, op.ID, progressLines[KindMerge])
	s.evidence(ctx, op.ID, "merge", store.EvidenceStart, detail{"attempt": j.Attempt, "method": p.Method, "head_sha": p.Head})
	res, err := s.mergeCall(ctx, d, p)
	if err != nil {
		final := !retryable(err) || j.Attempt >= j.MaxAttempts
		var fe *forge.Error
		if errors.As(err, &fe) && fe.Code == forge.CodeConflict {
			err = &GateError{GateHead, "the pull request's head moved before the merge: " + fe.Error()}
			final = true
		}
		err = remoteError(err)
		s.evidence(ctx, op.ID, "merge", store.EvidenceError, detail{"attempt": j.Attempt, "code": Code(err), "error": truncate(err.Error(), store.MaxEvidenceDetail/2), "final": final})
		if !final {
			if errors.As(err, &fe) && fe.RetryAfter > 0 {
				return nil, job.RetryAfter(err, fe.RetryAfter)
			}
			return nil, err
		}
		s.finish(ctx, op.ID, store.OperationFailed, nil, err)
		return nil, job.Permanent(err)
	}
	s.evidence(ctx, op.ID, "merge", store.EvidenceEnd, detail{"merge_sha": res.SHA, "message": res.Message, "request_id": res.RequestID})
	if _, err := s.Follow(ctx, d.ID); err != nil {
		s.cfg.Logger.Warn("follow a merged delivery", "delivery", d.ID, "err", err)
	}
	out, _ := json.Marshal(detail{"delivery": d.ID, "pr_number": d.PRNumber, "merge_sha": res.SHA, "method": p.Method})
	s.finish(ctx, op.ID, store.OperationSucceeded, out, nil)
	return out, nil
}

func (s *Service) mergeCall(ctx context.Context, d store.Delivery, p payload) (forge.MergeResult, error) {
	_, token, err := s.credential(ctx, d)
	if err != nil {
		return forge.MergeResult{}, err
	}
	c, repo, err := s.client(d, token)
	if err != nil {
		return forge.MergeResult{}, err
	}
	return c.Merge(ctx, repo, d.PRNumber, p.Head, p.Method)
}
