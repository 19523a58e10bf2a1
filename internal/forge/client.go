package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"
)

// DefaultBaseURL is github.com's REST API.
const DefaultBaseURL = "https://api.github.com/"

const (
	// maxBody bounds every response body read (a pull request with a long
	// body and a page of 100 check runs fit many times over).
	maxBody = 8 << 20
	// requestTimeout bounds every call whose context has no sooner deadline.
	requestTimeout = 30 * time.Second
	// maxCheckPages bounds the pages of statuses, and of check runs, read
	// for one commit.
	maxCheckPages = 10
	perPage       = 100
)

// Options configure a Client.
type Options struct {
	BaseURL    string       // API base URL; "" is DefaultBaseURL. GitHub Enterprise: https://HOST/api/v3/
	HTTPClient *http.Client // nil: a client of its own; its Transport is reused, wrapped to bound bodies
	UserAgent  string       // "" keeps go-github's
}

// Client calls GitHub's REST API with one token. It is safe for concurrent use.
type Client struct {
	gh    *github.Client
	token string
}

// New returns a client sending token as "Authorization: Bearer". The token
// must be non-empty; it is never logged nor put in an error.
func New(token string, opt Options) (*Client, error) {
	if strings.TrimSpace(token) == "" {
		return nil, invalidf("the GitHub token is empty")
	}
	if strings.ContainsAny(token, "\r\n\x00 ") {
		return nil, invalidf("the GitHub token contains white space or control characters")
	}
	base := opt.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, invalidf("the API base URL is not an http(s) URL with a host")
	}
	if u.User != nil {
		return nil, invalidf("the API base URL carries userinfo (a credential)")
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, invalidf("the API base URL is http to %s; the token goes only over https (or to a loopback address)", u.Hostname())
	}
	var hc http.Client
	if opt.HTTPClient != nil {
		hc = *opt.HTTPClient
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = boundedTransport{rt}
	// A redirect would carry the Authorization header elsewhere only to
	// the same host (net/http drops it across hosts); jam follows none.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	gh := github.NewClient(&hc).WithAuthToken(token)
	gh.BaseURL = u
	gh.DisableRateLimitCheck = true
	if opt.UserAgent != "" {
		gh.UserAgent = opt.UserAgent
	}
	return &Client{gh: gh, token: token}, nil
}

// loopback reports whether host names this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact removes the token from s.
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[redacted]")
}

// fail classifies a failed call.
func (c *Client) fail(err error, resp *github.Response) *Error {
	var hr *http.Response
	if resp != nil {
		hr = resp.Response
	}
	return classify(err, hr, time.Now(), c.redact)
}

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}

func requestID(resp *github.Response) string {
	if resp == nil || resp.Response == nil {
		return ""
	}
	return resp.Header.Get("X-GitHub-Request-Id")
}

// PullRequest is what jam follows of a pull request.
type PullRequest struct {
	Number    int
	URL       string // html_url
	State     string // open | closed
	Merged    bool
	Draft     bool
	Title     string
	Body      string
	HeadRef   string
	HeadSHA   string
	BaseRef   string
	Mergeable *bool  // nil while GitHub computes it (and in lists)
	RequestID string // X-GitHub-Request-Id of the response it came in
}

// NewPullRequest is what CreateDraftPullRequest opens.
type NewPullRequest struct{ Head, Base, Title, Body string }

func fromGitHub(p *github.PullRequest, resp *github.Response) PullRequest {
	pr := PullRequest{
		Number:    p.GetNumber(),
		URL:       p.GetHTMLURL(),
		State:     p.GetState(),
		Merged:    p.GetMerged() || p.MergedAt != nil,
		Draft:     p.GetDraft(),
		Title:     p.GetTitle(),
		Body:      p.GetBody(),
		Mergeable: p.Mergeable,
		RequestID: requestID(resp),
	}
	if h := p.GetHead(); h != nil {
		pr.HeadRef, pr.HeadSHA = h.GetRef(), h.GetSHA()
	}
	if b := p.GetBase(); b != nil {
		pr.BaseRef = b.GetRef()
	}
	return pr
}

// FindPullRequest returns the newest pull request, in any state, whose head
// is repo.Owner+":"+head (head is a branch name); ok is false when there is
// none. It reads one page of 100, newest first.
func (c *Client) FindPullRequest(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	if err := validRepo(repo); err != nil {
		return PullRequest{}, false, err
	}
	if head == "" {
		return PullRequest{}, false, invalidf("the head branch is empty")
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	list, resp, err := c.gh.PullRequests.List(ctx, repo.Owner, repo.Name, &github.PullRequestListOptions{
		State: "all", Head: repo.Owner + ":" + head, Sort: "created", Direction: "desc",
		ListOptions: github.ListOptions{PerPage: perPage},
	})
	if err != nil {
		return PullRequest{}, false, c.fail(err, resp)
	}
	var best *github.PullRequest
	for _, p := range list {
		// The filter is GitHub's; check it, since a head it cannot parse
		// is ignored rather than refused.
		if p.GetHead().GetRef() != head {
			continue
		}
		if best == nil || p.GetNumber() > best.GetNumber() {
			best = p
		}
	}
	if best == nil {
		return PullRequest{}, false, nil
	}
	return fromGitHub(best, resp), true, nil
}

// CreateDraftPullRequest opens p as a draft pull request. When GitHub
// answers that one already exists for the head, it returns that one.
func (c *Client) CreateDraftPullRequest(ctx context.Context, repo Repo, p NewPullRequest) (PullRequest, error) {
	if err := validRepo(repo); err != nil {
		return PullRequest{}, err
	}
	if p.Head == "" || p.Base == "" || p.Title == "" {
		return PullRequest{}, invalidf("a pull request needs a head, a base and a title")
	}
	tctx, cancel := withTimeout(ctx)
	defer cancel()
	draft := true
	got, resp, err := c.gh.PullRequests.Create(tctx, repo.Owner, repo.Name, &github.NewPullRequest{
		Title: &p.Title, Head: &p.Head, Base: &p.Base, Body: &p.Body, Draft: &draft,
	})
	if err == nil {
		return fromGitHub(got, resp), nil
	}
	if !alreadyExists(err) {
		return PullRequest{}, c.fail(err, resp)
	}
	pr, ok, ferr := c.FindPullRequest(ctx, repo, p.Head)
	if ferr != nil {
		return PullRequest{}, ferr
	}
	if !ok {
		e := c.fail(err, resp)
		e.Message += " (but no pull request of that head was found)"
		return PullRequest{}, e
	}
	return pr, nil
}

// alreadyExists recognises GitHub's 422 for a second pull request of one head.
func alreadyExists(err error) bool {
	var ger *github.ErrorResponse
	if !errors.As(err, &ger) || ger.Response == nil || ger.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, d := range ger.Errors {
		if strings.Contains(d.Message, "A pull request already exists") {
			return true
		}
	}
	return strings.Contains(ger.Message, "A pull request already exists")
}

// DefaultBranch returns repo's default branch (GET /repos/{owner}/{repo}).
func (c *Client) DefaultBranch(ctx context.Context, repo Repo) (string, error) {
	if err := validRepo(repo); err != nil {
		return "", err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	r, resp, err := c.gh.Repositories.Get(ctx, repo.Owner, repo.Name)
	if err != nil {
		return "", c.fail(err, resp)
	}
	if r.GetDefaultBranch() == "" {
		return "", &Error{Code: CodeUnavailable, Message: "the repository names no default branch", RequestID: requestID(resp)}
	}
	return r.GetDefaultBranch(), nil
}

// PullRequest returns pull request number of repo.
func (c *Client) PullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	if err := validRepo(repo); err != nil {
		return PullRequest{}, err
	}
	if number <= 0 {
		return PullRequest{}, invalidf("pull request number %d is not positive", number)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	p, resp, err := c.gh.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return PullRequest{}, c.fail(err, resp)
	}
	return fromGitHub(p, resp), nil
}

// Checks is the verdict of a commit's combined status and check runs.
type Checks struct {
	State     string   // success | pending | failure; no statuses and no check runs at all is success
	Failing   []string // contexts and check-run names that failed (error, failure, timed_out, cancelled, ...)
	Pending   []string // contexts and check-run names not finished
	RequestID string   // of the last response read
}

// The check states.
const (
	StateSuccess = "success"
	StatePending = "pending"
	StateFailure = "failure"
)

// Checks reads the combined status and the check runs of sha. A failure
// anywhere makes the state failure; else anything unfinished makes it
// pending.
func (c *Client) Checks(ctx context.Context, repo Repo, sha string) (Checks, error) {
	if err := validRepo(repo); err != nil {
		return Checks{}, err
	}
	if sha == "" || strings.ContainsAny(sha, "/?# ") {
		return Checks{}, invalidf("the commit %q is not a sha", sha)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var out Checks
	sopt := &github.ListOptions{PerPage: perPage}
	for seen := 0; sopt.Page < maxCheckPages; {
		cs, resp, err := c.gh.Repositories.GetCombinedStatus(ctx, repo.Owner, repo.Name, sha, sopt)
		if err != nil {
			return Checks{}, c.fail(err, resp)
		}
		out.RequestID = requestID(resp)
		for _, s := range cs.Statuses {
			switch s.GetState() {
			case "success":
			case "pending":
				out.Pending = append(out.Pending, s.GetContext())
			default: // failure, error
				out.Failing = append(out.Failing, s.GetContext())
			}
		}
		// The combined status declares no Link header; total_count says
		// whether another page holds more.
		seen += len(cs.Statuses)
		if len(cs.Statuses) == 0 || seen >= cs.GetTotalCount() {
			break
		}
		sopt.Page = max(sopt.Page, 1) + 1
	}
	opt := &github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: perPage}}
	for page := 0; page < maxCheckPages; page++ {
		runs, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, opt)
		if err != nil {
			return Checks{}, c.fail(err, resp)
		}
		out.RequestID = requestID(resp)
		for _, r := range runs.CheckRuns {
			switch {
			case r.GetStatus() != "completed":
				out.Pending = append(out.Pending, r.GetName())
			case checkRunPasses(r.GetConclusion()):
			default:
				out.Failing = append(out.Failing, r.GetName())
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	switch {
	case len(out.Failing) > 0:
		out.State = StateFailure
	case len(out.Pending) > 0:
		out.State = StatePending
	default:
		out.State = StateSuccess
	}
	return out, nil
}

// checkRunPasses: GitHub's branch protection counts these conclusions as passing.
func checkRunPasses(conclusion string) bool {
	switch conclusion {
	case "success", "neutral", "skipped":
		return true
	}
	return false
}

// MergeResult is GitHub's answer to a merge.
type MergeResult struct {
	SHA       string
	Merged    bool
	Message   string
	RequestID string
}

// Merge merges pull request number if its head is still headSHA (GitHub
// answers 409, CodeConflict, when it moved) with method merge, squash or
// rebase.
func (c *Client) Merge(ctx context.Context, repo Repo, number int, headSHA, method string) (MergeResult, error) {
	if err := validRepo(repo); err != nil {
		return MergeResult{}, err
	}
	if number <= 0 {
		return MergeResult{}, invalidf("pull request number %d is not positive", number)
	}
	if headSHA == "" {
		return MergeResult{}, invalidf("merge needs the head sha the gates approved")
	}
	switch method {
	case "merge", "squash", "rebase":
	default:
		return MergeResult{}, invalidf("merge method %q is not merge, squash or rebase", method)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	r, resp, err := c.gh.PullRequests.Merge(ctx, repo.Owner, repo.Name, number, "", &github.PullRequestOptions{SHA: headSHA, MergeMethod: method})
	if err != nil {
		return MergeResult{}, c.fail(err, resp)
	}
	return MergeResult{SHA: r.GetSHA(), Merged: r.GetMerged(), Message: c.redact(r.GetMessage()), RequestID: requestID(resp)}, nil
}

// Authenticated returns the login of the token's user (GET /user), which
// checks that the token works.
func (c *Client) Authenticated(ctx context.Context) (string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	u, resp, err := c.gh.Users.Get(ctx, "")
	if err != nil {
		return "", c.fail(err, resp)
	}
	if u.GetLogin() == "" {
		return "", &Error{Code: CodeUnavailable, Status: resp.StatusCode, Message: "GET /user answered no login", RequestID: requestID(resp)}
	}
	return u.GetLogin(), nil
}

// errBodyTooLarge is a response body longer than maxBody.
var errBodyTooLarge = fmt.Errorf("the response body is longer than %d bytes", maxBody)

// boundedTransport bounds every response body to maxBody.
type boundedTransport struct{ rt http.RoundTripper }

func (b boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > maxBody {
		resp.Body.Close()
		return nil, errBodyTooLarge
	}
	resp.Body = &boundedBody{rc: resp.Body, left: maxBody}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly maxBody from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errBodyTooLarge
		}
		return 0, err // io.EOF at the end; nil lets the caller read again
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
