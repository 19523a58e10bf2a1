package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/store"
)

// stepNames name each step's kind in the evidence.
var stepNames = map[string]string{KindBuild: "build", KindPush: "push", KindPR: "pull_request", KindMerge: "merge"}

// progressLines say what each step is doing, for the person's view.
var progressLines = map[string]string{
	KindBuild: "building the commit",
	KindPush:  "pushing the branch",
	KindPR:    "opening the draft pull request",
	KindMerge: "merging the pull request",
}

// detail is what a step saw, appended to the evidence as a JSON object.
type detail map[string]any

// stepFunc does one step's effect on d and returns d as it is to be
// stored (its State moved on) with what the step saw.
type stepFunc func(ctx context.Context, d store.Delivery) (store.Delivery, detail, error)

// step wraps fn as the handler of a job kind: it skips a delivery that is
// not waiting on kind (the step is done, or the delivery failed), records
// the start, the end or the error, stores the delivery's new state fenced
// by its generation, then enqueues the next step or ends the operation.
func (s *Service) step(kind string, fn stepFunc) job.Handler {
	name := stepNames[kind]
	return func(ctx context.Context, j store.Job) ([]byte, error) {
		var p payload
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return nil, job.Permanent(fmt.Errorf("%s: payload: %w", kind, err))
		}
		d, err := s.st.DeliveryGet(ctx, s.cfg.Workspace, p.Delivery)
		if errors.Is(err, jam.ErrNotFound) {
			return nil, job.Permanent(err)
		} else if err != nil {
			return nil, err
		}
		if nextStep(d) != kind {
			return nil, nil
		}
		s.progress(ctx, d.Operation, progressLines[kind])
		s.evidence(ctx, d.Operation, name, store.EvidenceStart, detail{"attempt": j.Attempt})
		next, seen, err := fn(ctx, d)
		if err == nil {
			next, err = s.st.DeliveryUpdate(ctx, withTime(next, s))
			if errors.Is(err, jam.ErrConflict) {
				// Another writer moved the row first: read it again.
				err = fmt.Errorf("%w: %w", errStale, err)
			}
		}
		if err != nil {
			return nil, s.stepFailed(ctx, d, j, name, err)
		}
		s.evidence(ctx, d.Operation, name, store.EvidenceEnd, seen)
		if k := nextStep(next); k != "" {
			return nil, s.enqueue(ctx, k, next, payload{Delivery: next.ID})
		}
		res := deliveryResult(next)
		s.finish(ctx, next.Operation, store.OperationSucceeded, res, nil)
		return res, nil
	}
}

func withTime(d store.Delivery, s *Service) store.Delivery {
	d.UpdatedAt = s.cfg.Now()
	return d
}

// deliveryResult is the deliver operation's result.
func deliveryResult(d store.Delivery) []byte {
	b, _ := json.Marshal(detail{"delivery": d.ID, "branch": d.Branch, "commit": d.Commit, "remote_sha": d.RemoteSHA,
		"pr_number": d.PRNumber, "pr_url": d.PRURL})
	return b
}

// retryable says whether err may pass by itself.
func retryable(err error) bool {
	var fe *forge.Error
	if errors.As(err, &fe) {
		return fe.Retryable()
	}
	return errors.Is(err, jam.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errStale)
}

// errStale marks a delivery row another writer moved first.
var errStale = errors.New("the delivery moved meanwhile")

// stepFailed records a failed attempt. A transient failure with attempts
// left is returned for the job to retry (after GitHub's Retry-After, if
// it gave one); anything else fails the delivery and its operation with
// the failure's stable code, and the job goes dead at once.
func (s *Service) stepFailed(ctx context.Context, d store.Delivery, j store.Job, name string, err error) error {
	final := !retryable(err) || j.Attempt >= j.MaxAttempts
	err = remoteError(err)
	code := Code(err)
	s.evidence(ctx, d.Operation, name, store.EvidenceError, detail{"attempt": j.Attempt, "code": code, "error": truncate(err.Error(), store.MaxEvidenceDetail/2), "final": final})
	if !final {
		s.progress(ctx, d.Operation, fmt.Sprintf("%s: attempt %d of %d failed (%s); retrying", name, j.Attempt, j.MaxAttempts, code))
		var fe *forge.Error
		if errors.As(err, &fe) && fe.RetryAfter > 0 {
			return job.RetryAfter(err, fe.RetryAfter)
		}
		return err
	}
	if cur, gerr := s.st.DeliveryGet(ctx, s.cfg.Workspace, d.ID); gerr == nil && nextStep(cur) == nextStep(d) {
		cur.State, cur.ErrorCode, cur.Error = store.DeliveryFailed, code, truncate(err.Error(), store.MaxDeliveryErrorLen)
		if _, uerr := s.st.DeliveryUpdate(ctx, withTime(cur, s)); uerr != nil {
			s.cfg.Logger.Error("record a failed delivery", "delivery", d.ID, "err", uerr)
		}
	}
	s.finish(ctx, d.Operation, store.OperationFailed, nil, err)
	return job.Permanent(err)
}

// truncate makes s storable text (valid UTF-8, no NUL) of at most n
// bytes, cut at a rune boundary.
func truncate(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}

// evidence appends one entry to op's evidence; a failure to is logged
// (the step's effect stands either way).
func (s *Service) evidence(ctx context.Context, op jam.OperationID, step string, ev store.EvidenceEvent, seen detail) {
	b, err := json.Marshal(seen)
	if err == nil && len(b) > store.MaxEvidenceDetail {
		b, err = json.Marshal(detail{"truncated": true, "error": truncate(fmt.Sprint(seen["error"]), store.MaxEvidenceDetail/2)})
	}
	if err == nil {
		_, err = s.st.EvidenceAppend(ctx, store.Evidence{OperationID: op, WorkspaceID: s.cfg.Workspace, Step: step, Event: ev, Detail: b, At: s.cfg.Now()})
	}
	if err != nil {
		s.cfg.Logger.Warn("append evidence", "operation", op, "step", step, "err", err)
	}
}

// progress marks op running with line.
func (s *Service) progress(ctx context.Context, op jam.OperationID, line string) {
	_, err := s.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: s.cfg.Workspace, ID: op,
		From: []store.OperationState{store.OperationPending, store.OperationRunning}, State: store.OperationRunning, Progress: &line, At: s.cfg.Now()})
	if err != nil {
		s.cfg.Logger.Warn("operation progress", "operation", op, "err", err)
	}
}

// finish ends op.
func (s *Service) finish(ctx context.Context, op jam.OperationID, state store.OperationState, result []byte, failure error) {
	p := store.OperationUpdateParams{WorkspaceID: s.cfg.Workspace, ID: op, State: state, Result: result, At: s.cfg.Now()}
	line := string(state)
	if failure != nil {
		p.ErrorCode, p.Error = Code(failure), truncate(failure.Error(), store.MaxDeliveryErrorLen)
		if ce, ok := failure.(codedError); ok && ce.code != "" {
			p.ErrorCode = ce.code
		}
		line = "failed: " + p.ErrorCode
	}
	p.Progress = &line
	if _, err := s.st.OperationUpdate(ctx, p); err != nil {
		s.cfg.Logger.Warn("end operation", "operation", op, "state", state, "err", err)
	}
}

// gitDir returns the git directory holding d's change set's commits,
// with the change set.
func (s *Service) gitDir(ctx context.Context, d store.Delivery) (string, store.ChangeSet, store.Checkpoint, error) {
	cs, err := s.st.ChangeSetGet(ctx, s.cfg.Workspace, d.ChangeSetID)
	if err != nil {
		return "", store.ChangeSet{}, store.Checkpoint{}, job.Permanent(fmt.Errorf("change set %s: %w", d.ChangeSetID, err))
	}
	base, err := s.st.CheckpointGet(ctx, s.cfg.Workspace, cs.BaseCheckpoint)
	if err != nil {
		return "", store.ChangeSet{}, store.Checkpoint{}, job.Permanent(fmt.Errorf("change set %s: base checkpoint: %w", cs.ID, err))
	}
	return base.GitDir, cs, base, nil
}

// build makes the delivery commit and checks its tree.
func (s *Service) build(ctx context.Context, d store.Delivery) (store.Delivery, detail, error) {
	dir, cs, base, err := s.gitDir(ctx, d)
	if err != nil {
		return d, nil, err
	}
	title := d.Title
	if title == "" {
		title = defaultTitle(cs)
	}
	msg := title + "\n\nDelivered by jam from change set " + string(cs.ID) + "."
	trailers := [][2]string{{"Jam-Change-Set", string(cs.ID)}, {"Jam-Session", string(cs.SessionID)}}
	if cs.Turn != "" {
		trailers = append(trailers, [2]string{"Jam-Turn", string(cs.Turn)})
	}
	commit, tree, err := git.BuildDeliveryCommit(ctx, git.DeliveryCommitParams{GitDir: dir, Parent: base.BaseCommit, From: cs.BaseCommit, To: cs.EndCommit,
		Message: msg, Trailers: trailers, Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, At: cs.CreatedAt})
	if err != nil {
		return d, nil, fmt.Errorf("build: %w", err)
	}
	if err := changeset.VerifyTree(ctx, dir, commit, cs); err != nil {
		return d, nil, fmt.Errorf("build: %w", err)
	}
	d.State, d.Commit = store.DeliveryPushing, commit
	return d, detail{"commit": commit, "tree": tree, "parent": base.BaseCommit, "verified_files": len(cs.Files)}, nil
}

// push creates the branch at the commit.
func (s *Service) push(ctx context.Context, d store.Delivery) (store.Delivery, detail, error) {
	dir, _, _, err := s.gitDir(ctx, d)
	if err != nil {
		return d, nil, err
	}
	cred, _, err := s.credential(ctx, d)
	if err != nil {
		return d, nil, err
	}
	res, err := git.Push(ctx, git.PushParams{GitDir: dir, Remote: d.Remote, Commit: d.Commit, Branch: d.Branch, Credential: cred})
	if err != nil {
		return d, nil, fmt.Errorf("push: %w", err)
	}
	d.State, d.RemoteSHA = store.DeliveryPushed, res.RemoteSHA
	return d, detail{"branch": d.Branch, "remote_sha": res.RemoteSHA, "created": res.Created, "already_there": res.AlreadyThere}, nil
}

// openPR finds the branch's pull request, or opens a draft one.
func (s *Service) openPR(ctx context.Context, d store.Delivery) (store.Delivery, detail, error) {
	_, cs, _, err := s.gitDir(ctx, d)
	if err != nil {
		return d, nil, err
	}
	_, token, err := s.credential(ctx, d)
	if err != nil {
		return d, nil, err
	}
	c, repo, err := s.client(d, token)
	if err != nil {
		return d, nil, err
	}
	pr, found, err := c.FindPullRequest(ctx, repo, d.Branch)
	if err != nil {
		return d, nil, fmt.Errorf("find the pull request: %w", err)
	}
	if !found {
		pr, err = c.CreateDraftPullRequest(ctx, repo, forge.NewPullRequest{Head: d.Branch, Base: d.Base, Title: d.Title, Body: prBody(d, cs)})
		if err != nil {
			return d, nil, fmt.Errorf("open the pull request: %w", err)
		}
	}
	d.State, d.PRNumber, d.PRURL, d.PRHeadSHA = store.DeliveryPROpen, pr.Number, pr.URL, pr.HeadSHA
	d.PRState = prState(pr)
	return d, detail{"pr_number": pr.Number, "pr_url": pr.URL, "head_sha": pr.HeadSHA, "draft": pr.Draft, "found_existing": found,
		"request_id": pr.RequestID}, nil
}

func prState(pr forge.PullRequest) string {
	if pr.Merged {
		return "merged"
	}
	return pr.State
}

// maxBodyFiles bounds the files a pull request's body lists.
const maxBodyFiles = 50

// prBody is the draft pull request's description: the change set, the
// session and the turn it came from, and its files.
func prBody(d store.Delivery, cs store.ChangeSet) string {
	var b strings.Builder
	b.WriteString("Delivered by jam.\n\n")
	fmt.Fprintf(&b, "- Change set: `%s` (%s)\n", cs.ID, cs.SubjectDigest)
	fmt.Fprintf(&b, "- Session: `%s`\n", cs.SessionID)
	if cs.Turn != "" {
		fmt.Fprintf(&b, "- Turn: `%s`\n", cs.Turn)
	}
	fmt.Fprintf(&b, "- Commit: `%s`\n\n", d.Commit)
	fmt.Fprintf(&b, "%d files changed, +%d −%d:\n\n", len(cs.Files), cs.Additions, cs.Deletions)
	for i, f := range cs.Files {
		if i == maxBodyFiles {
			fmt.Fprintf(&b, "- … and %d more\n", len(cs.Files)-maxBodyFiles)
			break
		}
		fmt.Fprintf(&b, "- `%s` (%s)\n", f.Path, f.Kind)
	}
	return b.String()
}
