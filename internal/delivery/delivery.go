package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/store"
)

// Store is what the service reads and writes.
type Store interface {
	store.Operations
	store.Deliveries
	ChangeSetGet(ctx context.Context, ws jam.WorkspaceID, id jam.ChangeSetID) (store.ChangeSet, error)
	CheckpointGet(ctx context.Context, ws jam.WorkspaceID, id jam.SnapshotID) (store.Checkpoint, error)
	ConnectionGet(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (store.Connection, error)
	ConnectionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Connection, error)
	CredentialCurrent(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (store.CredentialVersion, error)
	JobRetry(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, at time.Time) (store.Job, error)
}

// Jobs is the job runner the steps run on.
type Jobs interface {
	Register(kind string, h job.Handler) error
	Enqueue(ctx context.Context, s job.Spec) (store.Job, error)
	Wake()
}

// The job kinds of the service.
const (
	KindBuild = "delivery.build"
	KindPush  = "delivery.push"
	KindPR    = "delivery.pull_request"
	KindMerge = "delivery.merge"
)

// The operation kinds.
const (
	OpDeliver = "deliver"
	OpMerge   = "merge"
)

// Defaults of Config.
const (
	DefaultMaxAttempts = 8
	DefaultFollowEvery = 5 * time.Minute
	// tokenUser is the user name git sends beside a GitHub token.
	tokenUser = "x-access-token"
)

// Config configures a Service.
type Config struct {
	Workspace jam.WorkspaceID
	Minter    *jam.Minter
	Logger    *slog.Logger
	Now       func() time.Time
	// HTTPClient carries the GitHub API calls (nil: the forge client's own).
	HTTPClient *http.Client
	// MaxAttempts bounds each step's job (0: DefaultMaxAttempts).
	MaxAttempts int
	// AuthorName and AuthorEmail sign the delivery commits.
	AuthorName, AuthorEmail string
	// Reviews answers the review gate; RequireReview asks it of every
	// merge (a merge request can ask it too).
	Reviews       Reviews
	RequireReview bool
}

// Service delivers change sets. Its methods are safe for concurrent use.
type Service struct {
	cfg  Config
	st   Store
	jobs Jobs
}

// New returns a service and registers its job kinds on jobs; call it
// before the runner starts.
func New(cfg Config, st Store, jobs Jobs) (*Service, error) {
	if cfg.Minter == nil || cfg.Workspace == "" {
		return nil, fmt.Errorf("%w: a delivery service needs a workspace and a minter", jam.ErrInvalid)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.AuthorName == "" {
		cfg.AuthorName = "jam"
	}
	if cfg.AuthorEmail == "" {
		cfg.AuthorEmail = "jam@localhost"
	}
	s := &Service{cfg: cfg, st: st, jobs: jobs}
	for kind, h := range map[string]job.Handler{
		KindBuild: s.step(KindBuild, s.build), KindPush: s.step(KindPush, s.push), KindPR: s.step(KindPR, s.openPR),
		KindMerge: s.mergeJob,
	} {
		if err := jobs.Register(kind, h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Request is what to deliver where.
type Request struct {
	ChangeSet jam.ChangeSetID
	// Remote is an https or ssh URL or a local path.
	Remote string
	// Branch is the branch to create ("": jam/<change set id>).
	Branch string
	// Connection names the GitHub connection ("NAME" or "github/NAME"; "":
	// the workspace's only GitHub connection for an https remote, none
	// otherwise).
	Connection string
	// PR asks for a draft pull request into Base (default: the
	// repository's default branch) titled
	// Title (default from the change set) in Repo ("OWNER/NAME"; "": read
	// from a GitHub https remote).
	PR    bool
	Repo  string
	Base  string
	Title string
}

// payload is the input of every step job.
type payload struct {
	Delivery  jam.DeliveryID  `json:"delivery"`
	Operation jam.OperationID `json:"operation,omitempty"`
	Method    string          `json:"method,omitempty"`
	Head      string          `json:"head,omitempty"`
}

// Deliver checks req (the change set, the remote, the credential) and
// starts its delivery, returning at once; the steps run as jobs. Asking
// again for the same change set, remote and branch returns the first
// delivery (resumed if it had stalled) rather than a second.
func (s *Service) Deliver(ctx context.Context, req Request) (store.Delivery, error) {
	cs, err := s.st.ChangeSetGet(ctx, s.cfg.Workspace, req.ChangeSet)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("deliver: change set %s: %w", req.ChangeSet, err)
	}
	if cs.Empty() {
		return store.Delivery{}, fmt.Errorf("deliver: change set %s changes nothing: %w", cs.ID, jam.ErrInvalid)
	}
	base, err := s.st.CheckpointGet(ctx, s.cfg.Workspace, cs.BaseCheckpoint)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("deliver: change set %s: its base checkpoint: %w", cs.ID, err)
	}
	if base.BaseCommit == "" {
		return store.Delivery{}, fmt.Errorf("deliver: change set %s: its session has no repository commit to build on: %w", cs.ID, jam.ErrInvalid)
	}
	d := store.Delivery{
		ID: jam.New[jam.DeliveryID](s.cfg.Minter), WorkspaceID: s.cfg.Workspace, ChangeSetID: cs.ID, SessionID: cs.SessionID, Turn: cs.Turn,
		Remote: strings.TrimSpace(req.Remote), Branch: req.Branch, PR: req.PR, Base: req.Base, Title: req.Title,
		Operation: jam.New[jam.OperationID](s.cfg.Minter), CreatedAt: s.cfg.Now(),
	}
	if d.Remote == "" {
		return store.Delivery{}, fmt.Errorf("deliver: %w: a remote is needed (--remote URL or path)", jam.ErrInvalid)
	}
	if d.Branch == "" {
		d.Branch = "jam/" + string(cs.ID)
	}
	if d.PR {
		if d.Title == "" {
			d.Title = defaultTitle(cs)
		}
	}
	conn, err := s.pickConnection(ctx, req.Connection, d.Remote)
	if err != nil {
		return store.Delivery{}, err
	}
	d.ConnectionID = conn.ID
	if d.PR {
		if err := s.resolveRepo(&d, req.Repo, conn); err != nil {
			return store.Delivery{}, err
		}
	}
	if err := s.preflight(ctx, &d, base.GitDir); err != nil {
		return store.Delivery{}, err
	}
	got, created, err := s.st.DeliveryCreate(ctx, d)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("deliver: %w", err)
	}
	if !created {
		s.cfg.Logger.Info("delivery asked again; resuming the first", "delivery", got.ID, "state", got.State)
		if got.State == store.DeliveryFailed {
			if got, err = s.retry(ctx, got); err != nil {
				return store.Delivery{}, err
			}
		}
	}
	if err := s.resume(ctx, got); err != nil {
		return store.Delivery{}, err
	}
	return got, nil
}

func defaultTitle(cs store.ChangeSet) string {
	n := len(cs.Files)
	what := "files"
	if n == 1 {
		what = "file"
	}
	return fmt.Sprintf("jam: %s (%d %s, +%d −%d)", cs.ID, n, what, cs.Additions, cs.Deletions)
}

// pickConnection finds the GitHub connection ref names; "" picks the
// workspace's only one for the remote's host, and none for a remote that
// is not http(s). A connection's token goes only to its own host
// (github.com, or its base URL's): naming one for another host is
// jam.ErrInvalid.
func (s *Service) pickConnection(ctx context.Context, ref, remote string) (store.Connection, error) {
	ref = strings.TrimPrefix(strings.TrimPrefix(ref, "connection:"), string(store.ProviderGitHub)+"/")
	u, err := url.Parse(remote)
	web := err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
	if !web && ref == "" {
		return store.Connection{}, nil
	}
	list, err := s.st.ConnectionList(ctx, s.cfg.Workspace)
	if err != nil {
		return store.Connection{}, fmt.Errorf("deliver: connections: %w", err)
	}
	var fits []store.Connection
	for _, c := range list {
		if c.Provider != store.ProviderGitHub || c.Removed {
			continue
		}
		ok := web && tokenHost(c, u.Host)
		if ref != "" && c.Name == ref {
			if !ok {
				return store.Connection{}, fmt.Errorf("deliver: %w: connection github/%s is for %s, not for the remote's host; its token goes nowhere else",
					jam.ErrInvalid, c.Name, strings.Join(gitHosts(c), " or "))
			}
			return c, nil
		}
		if ok {
			fits = append(fits, c)
		}
	}
	switch {
	case ref != "":
		return store.Connection{}, fmt.Errorf("deliver: %w: no GitHub connection named %q (jam connection add github %s)", jam.ErrNotFound, ref, ref)
	case len(fits) == 1:
		return fits[0], nil
	case len(fits) == 0:
		return store.Connection{}, nil
	}
	return store.Connection{}, fmt.Errorf("deliver: %w: %d GitHub connections fit the remote; name one with --connection", jam.ErrInvalid, len(fits))
}

// gitHosts are the hosts (with any port) a connection's token may be sent
// to for git: github.com for github.com's API, else its base URL's host
// (and, for an api.HOST, HOST).
func gitHosts(c store.Connection) []string {
	if c.BaseURL == "" {
		return []string{"github.com"}
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Host == "" {
		return nil
	}
	h := strings.ToLower(u.Host)
	if h == "api.github.com" {
		return []string{"github.com"}
	}
	if rest, ok := strings.CutPrefix(h, "api."); ok {
		return []string{h, rest}
	}
	return []string{h}
}

// tokenHost says whether host may receive c's token.
func tokenHost(c store.Connection, host string) bool {
	for _, h := range gitHosts(c) {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// resolveRepo sets the pull request's repository and API base: given, or
// read from a GitHub https remote; the connection's base URL wins.
func (s *Service) resolveRepo(d *store.Delivery, repo string, conn store.Connection) error {
	if conn.ID == "" {
		return fmt.Errorf("deliver: %w: a pull request needs a GitHub connection (jam connection add github NAME)", jam.ErrInvalid)
	}
	if repo == "" {
		r, api, err := forge.ParseRemote(d.Remote)
		if err != nil {
			return fmt.Errorf("deliver: %w: name the pull request's repository with --repo OWNER/NAME (%v)", jam.ErrInvalid, err)
		}
		d.Repo, d.APIBaseURL = r.String(), api
	} else {
		d.Repo = repo
	}
	if conn.BaseURL != "" {
		d.APIBaseURL = conn.BaseURL
	}
	if d.APIBaseURL == forge.DefaultBaseURL {
		d.APIBaseURL = ""
	}
	return nil
}

// preflight reaches the remote (and GitHub) with the credential before
// anything is stored, so a wrong URL or a bad token is one clear error at
// once rather than a failed delivery later. A pull request without a base
// gets the repository's default branch.
func (s *Service) preflight(ctx context.Context, d *store.Delivery, gitDir string) error {
	cred, token, err := s.credential(ctx, *d)
	if err != nil {
		return err
	}
	if _, err := git.RemoteBranch(ctx, gitDir, d.Remote, d.Branch, cred); err != nil {
		return fmt.Errorf("deliver: %w", remoteError(err))
	}
	if !d.PR {
		return nil
	}
	c, repo, err := s.client(*d, token)
	if err != nil {
		return err
	}
	if _, _, err := c.FindPullRequest(ctx, repo, d.Branch); err != nil {
		return fmt.Errorf("deliver: %w", remoteError(err))
	}
	if d.Base == "" {
		if d.Base, err = c.DefaultBranch(ctx, repo); err != nil {
			return fmt.Errorf("deliver: the pull request's base: %w", remoteError(err))
		}
	}
	return nil
}

// credential returns the delivery's token (and git's credential of it),
// nil and "" for a delivery without a connection.
func (s *Service) credential(ctx context.Context, d store.Delivery) (*git.Credential, string, error) {
	if d.ConnectionID == "" {
		return nil, "", nil
	}
	v, err := s.st.CredentialCurrent(ctx, s.cfg.Workspace, d.ConnectionID)
	if err != nil {
		return nil, "", fmt.Errorf("delivery %s: its connection: %w", d.ID, err)
	}
	token := string(v.Secret)
	return &git.Credential{Username: tokenUser, Password: token}, token, nil
}

// client returns a GitHub client of the delivery's API with token.
func (s *Service) client(d store.Delivery, token string) (*forge.Client, forge.Repo, error) {
	owner, name, _ := strings.Cut(d.Repo, "/")
	c, err := forge.New(token, forge.Options{BaseURL: d.APIBaseURL, HTTPClient: s.cfg.HTTPClient, UserAgent: "jam"})
	if err != nil {
		return nil, forge.Repo{}, fmt.Errorf("delivery %s: %w", d.ID, remoteError(err))
	}
	return c, forge.Repo{Owner: owner, Name: name}, nil
}

// remoteError marks what a remote answered with the sentinel of its
// stable code: a refused credential jam.ErrCredentialInvalid, a remote
// that cannot be reached or lacks the repository jam.ErrUnreachable.
func remoteError(err error) error {
	var fe *forge.Error
	switch {
	case errors.As(err, &fe) && fe.Code == forge.CodeCredentialInvalid, errors.Is(err, git.ErrAuth):
		return fmt.Errorf("%w: %w", jam.ErrCredentialInvalid, err)
	case errors.As(err, &fe) && (fe.Code == forge.CodeNotFound || fe.Code == forge.CodeUnavailable), errors.Is(err, jam.ErrUnavailable):
		return fmt.Errorf("%w: %w", jam.ErrUnreachable, err)
	}
	return err
}

// Code is the stable code of a failure, as the API names it.
func Code(err error) string {
	for _, c := range []struct {
		err  error
		code string
	}{
		{jam.ErrCredentialInvalid, "credential_invalid"},
		{jam.ErrUnreachable, "remote_unreachable"},
		{jam.ErrGateRefused, "gate_refused"},
		{jam.ErrInvalid, "invalid_argument"},
		{jam.ErrNotFound, "not_found"},
		{jam.ErrConflict, "conflict"},
		{jam.ErrUnauthenticated, "credential_invalid"},
		{jam.ErrPermissionDenied, "permission_denied"},
		{jam.ErrUnavailable, "unavailable"},
		{context.DeadlineExceeded, "unavailable"},
	} {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "internal"
}

// Resume ensures that every delivery still under way has its operation
// and the job of its next step (after a crash between a step's write and
// the next step's enqueue, say). The daemon calls it at start.
func (s *Service) Resume(ctx context.Context) error {
	for _, state := range []store.DeliveryState{store.DeliveryPending, store.DeliveryBuilding, store.DeliveryPushing, store.DeliveryPushed,
		store.DeliveryPROpen, store.DeliveryFailed} {
		list, err := s.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: s.cfg.Workspace, State: state, Limit: store.MaxDeliveryLimit})
		if err != nil {
			return fmt.Errorf("resume deliveries: %w", err)
		}
		for _, d := range list {
			if err := s.resume(ctx, d); err != nil {
				s.cfg.Logger.Error("resume delivery", "delivery", d.ID, "err", err)
			}
		}
	}
	return nil
}

// resume ensures d's operation and its current step's job, and ends an
// operation a crash left running after its delivery's last write.
func (s *Service) resume(ctx context.Context, d store.Delivery) error {
	op, err := s.ensureOperation(ctx, OpDeliver, d.Operation, string(d.ID))
	if err != nil {
		return err
	}
	kind := nextStep(d)
	switch {
	case kind != "":
		return s.enqueue(ctx, kind, d, payload{Delivery: d.ID})
	case op.State.Terminal():
	case d.State == store.DeliveryFailed:
		s.finish(ctx, d.Operation, store.OperationFailed, nil, codedError{d.ErrorCode, d.Error})
	default:
		s.finish(ctx, d.Operation, store.OperationSucceeded, deliveryResult(d), nil)
	}
	return nil
}

// codedError is a stored failure: its code and message.
type codedError struct{ code, msg string }

func (e codedError) Error() string { return e.msg }

// retry moves a failed delivery back to the step it failed at (what it
// has recorded says which) and its operation back to pending; resume
// then queues that step's job again.
func (s *Service) retry(ctx context.Context, d store.Delivery) (store.Delivery, error) {
	switch {
	case d.Commit == "":
		d.State = store.DeliveryPending
	case d.RemoteSHA == "":
		d.State = store.DeliveryPushing
	default:
		d.State = store.DeliveryPushed
	}
	d.ErrorCode, d.Error, d.UpdatedAt = "", "", s.cfg.Now()
	next, err := s.st.DeliveryUpdate(ctx, d)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("retry delivery %s: %w", d.ID, err)
	}
	line := "retrying"
	if _, err := s.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: s.cfg.Workspace, ID: d.Operation,
		From: []store.OperationState{store.OperationFailed, store.OperationCancelled}, State: store.OperationPending, Progress: &line, At: s.cfg.Now()}); err != nil && !errors.Is(err, jam.ErrConflict) {
		return store.Delivery{}, fmt.Errorf("retry delivery %s: %w", d.ID, err)
	}
	s.evidence(ctx, d.Operation, "retry", store.EvidenceNote, detail{"from": "failed", "to": string(next.State)})
	return next, nil
}

// nextStep is the job kind d's state waits on ("" for none).
func nextStep(d store.Delivery) string {
	switch d.State {
	case store.DeliveryPending, store.DeliveryBuilding:
		return KindBuild
	case store.DeliveryPushing:
		return KindPush
	case store.DeliveryPushed:
		if d.PR {
			return KindPR
		}
	}
	return ""
}

// enqueue enqueues kind for d under the key "DELIVERY/KIND" (enqueueing
// again returns the first job) and adds it to d's operation.
func (s *Service) enqueue(ctx context.Context, kind string, d store.Delivery, p payload) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	key := string(d.ID) + "/" + kind
	if p.Operation != "" {
		key += "/" + string(p.Operation)
	}
	j, err := s.jobs.Enqueue(ctx, job.Spec{Kind: kind, Key: key, Payload: b, MaxAttempts: s.cfg.MaxAttempts})
	if err != nil {
		return fmt.Errorf("delivery %s: enqueue %s: %w", d.ID, kind, err)
	}
	if j.State == store.JobDead || j.State == store.JobCancelled {
		// The step's job from before a retry of the delivery: again.
		if j, err = s.st.JobRetry(ctx, s.cfg.Workspace, j.ID, s.cfg.Now()); err != nil {
			return fmt.Errorf("delivery %s: retry %s: %w", d.ID, kind, err)
		}
		s.jobs.Wake()
	}
	op := d.Operation
	if p.Operation != "" {
		op = p.Operation
	}
	_, err = s.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: s.cfg.Workspace, ID: op, AddJob: j.ID, At: s.cfg.Now()})
	if err != nil && !errors.Is(err, jam.ErrConflict) {
		return fmt.Errorf("delivery %s: operation %s: %w", d.ID, op, err)
	}
	return nil
}

// ensureOperation returns the operation id, creating it pending when a
// crash left it out.
func (s *Service) ensureOperation(ctx context.Context, kind string, id jam.OperationID, subject string) (store.Operation, error) {
	op, err := s.st.OperationGet(ctx, s.cfg.Workspace, id)
	if err == nil || !errors.Is(err, jam.ErrNotFound) {
		return op, err
	}
	op, err = s.st.OperationCreate(ctx, store.Operation{ID: id, WorkspaceID: s.cfg.Workspace, Kind: kind, Subject: subject,
		State: store.OperationPending, Progress: "queued", CreatedAt: s.cfg.Now()})
	if errors.Is(err, jam.ErrAlreadyExists) {
		return s.st.OperationGet(ctx, s.cfg.Workspace, id)
	}
	return op, err
}

// Get returns one delivery of the workspace.
func (s *Service) Get(ctx context.Context, id jam.DeliveryID) (store.Delivery, error) {
	return s.st.DeliveryGet(ctx, s.cfg.Workspace, id)
}
