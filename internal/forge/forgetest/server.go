package forgetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/openapicheck"
)

const (
	// maxRequestBody bounds what the double reads of a request body.
	maxRequestBody = 1 << 20
	// gitTimeout bounds each git command the double runs.
	gitTimeout = 30 * time.Second
	docsURL    = "https://docs.github.com/rest"
)

// Server is the GitHub double. Its methods are safe for concurrent use.
type Server struct {
	t      testing.TB
	spec   *spec
	hs     *httptest.Server
	root   string // bare repositories: root/OWNER/NAME.git
	home   string // HOME of the git the double runs
	gitExe string
	// closing is closed first at Close, so stalled handlers return and
	// httptest.Server.Close (which waits for them) ends.
	closing   chan struct{}
	closeOnce sync.Once

	// state serialises the REST handlers and guards the repository
	// model; it is taken before mu.
	state     sync.Mutex
	repos     map[string]*repo // by "owner/name"
	nextID    int64
	statuses  map[string][]commitStatus // by sha
	checkRuns map[string][]checkRun     // by sha

	// mu guards the token, the injections, the counters and the
	// violations; it is never held across I/O.
	mu          sync.Mutex
	token       string
	revoked     bool
	failN       int
	failStatus  int
	rateN       int
	rateAfter   time.Duration
	stallN      int
	stallFor    time.Duration
	dropField   string
	requests    int
	requestSeq  int
	violations  []string
	reportedLen int
}

type repo struct {
	owner, name, defaultBranch, dir string
	id                              int64
	pulls                           []*pull
}

type pull struct {
	number              int
	id                  int64
	title, body         string
	head, base          string // branch names
	draft, merged       bool
	state               string // open | closed
	headSHA, mergeSHA   string // headSHA is frozen once closed
	created, updated    time.Time
	closedAt, mergedAt  time.Time
	maintainerCanModify bool
}

type commitStatus struct{ context, state string }

type checkRun struct {
	id                 int64
	name, status, conc string
}

// Start starts a double on a loopback socket. It closes at t's cleanup
// and then fails t if any request or response broke GitHub's OpenAPI
// description.
func Start(t testing.TB) *Server {
	t.Helper()
	sp, err := loadSpec()
	if err != nil {
		t.Fatalf("forgetest: load the OpenAPI description: %v", err)
	}
	gitExe, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("forgetest: git is needed: %v", err)
	}
	s := &Server{
		t: t, spec: sp, root: t.TempDir(), home: t.TempDir(), gitExe: gitExe,
		closing: make(chan struct{}), repos: map[string]*repo{},
		statuses: map[string][]commitStatus{}, checkRuns: map[string][]checkRun{},
		token: newToken(),
	}
	s.hs = httptest.NewServer(s.handler())
	t.Cleanup(s.close)
	return s
}

func newToken() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 36)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return "ghp_" + string(b)
}

// Close stops the server, waiting for every handler (a stalled request
// is answered 503 at once), and then fails the test if anything broke
// the description. It runs at the test's cleanup; calling it earlier is
// allowed, and a second call does nothing.
func (s *Server) Close() { s.close() }

func (s *Server) close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.hs.Close()
		if v := s.Violations(); len(v) > 0 {
			s.t.Errorf("forgetest: %d request(s) or response(s) broke GitHub's OpenAPI description:\n%s", len(v), strings.Join(v, "\n"))
		}
	})
}

// APIURL is the REST base URL for forge.Options.BaseURL; it ends with "/".
func (s *Server) APIURL() string { return s.hs.URL + "/" }

// Token is the valid token: Bearer on REST, the Basic password on git.
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// Revoke makes the token invalid: REST answers 401, git 401.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
}

// FailNext makes the next n REST requests answer status (a 5xx) with an
// error body of the declared (or basic-error) shape.
func (s *Server) FailNext(n, status int) {
	if status < 500 || status > 599 {
		s.t.Fatalf("forgetest: FailNext wants a 5xx status, not %d", status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failN, s.failStatus = n, status
}

// RateLimitNext makes the next n REST requests answer 429 with
// Retry-After (whole seconds, rounded up).
func (s *Server) RateLimitNext(n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateN, s.rateAfter = n, retryAfter
}

// StallNext delays the next n REST requests by d before they are
// answered; a stalled request ends early when its client goes away or
// the server closes, so nothing outlives Close.
func (s *Server) StallNext(n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallN, s.stallFor = n, d
}

// DropFieldNext removes the top-level field name from the next JSON object
// response: a deliberately malformed response, for tests that the
// validator is live (the violation is recorded like any other).
func (s *Server) DropFieldNext(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropField = name
}

// Requests counts the REST requests served (git traffic is not counted).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Violations returns what broke the OpenAPI description so far.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) violate(where string, msgs ...string) {
	if len(msgs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if len(s.violations) >= 1000 {
			return
		}
		s.violations = append(s.violations, strings.ReplaceAll(where+": "+m, s.token, "[token]"))
	}
}

var (
	ownerRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	branchRE = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,200}$`)
)

// AddRepo creates the bare repository OWNER/NAME with defaultBranch; when
// seedGitDir is not "", it pushes defaultBranch from that repository into
// it (real git).
func (s *Server) AddRepo(owner, name, defaultBranch, seedGitDir string) {
	s.t.Helper()
	if !ownerRE.MatchString(owner) || !nameRE.MatchString(name) || name == "." || name == ".." || !branchRE.MatchString(defaultBranch) {
		s.t.Fatalf("forgetest: AddRepo(%q, %q, %q): not a valid owner, name or branch", owner, name, defaultBranch)
	}
	dir := filepath.Join(s.root, owner, name+".git")
	if _, err := os.Stat(dir); err == nil {
		s.t.Fatalf("forgetest: AddRepo: %s/%s exists already", owner, name)
	}
	ctx := context.Background()
	if _, _, err := s.git(ctx, "", "init", "--quiet", "--bare", "--initial-branch="+defaultBranch, dir); err != nil {
		s.t.Fatalf("forgetest: %v", err)
	}
	if _, _, err := s.git(ctx, dir, "config", "http.receivepack", "true"); err != nil {
		s.t.Fatalf("forgetest: %v", err)
	}
	if seedGitDir != "" {
		ref := "refs/heads/" + defaultBranch
		if _, _, err := s.git(ctx, seedGitDir, "push", "--quiet", dir, ref+":"+ref); err != nil {
			s.t.Fatalf("forgetest: seed %s/%s: %v", owner, name, err)
		}
	}
	s.state.Lock()
	defer s.state.Unlock()
	s.nextID++
	s.repos[owner+"/"+name] = &repo{owner: owner, name: name, defaultBranch: defaultBranch, dir: dir, id: s.nextID}
}

// GitURL is the repository's smart-HTTP URL, served by git http-backend,
// Basic auth (any user name, the token as password), push enabled.
func (s *Server) GitURL(owner, name string) string {
	return s.hs.URL + "/git/" + owner + "/" + name + ".git"
}

// BareDir is the bare repository's directory.
func (s *Server) BareDir(owner, name string) string {
	return filepath.Join(s.root, owner, name+".git")
}

// SetStatus sets the commit status of sha named statusContext (its
// "context") to state: success, pending, failure or error.
func (s *Server) SetStatus(sha, statusContext, state string) {
	switch state {
	case "success", "pending", "failure", "error":
	default:
		s.t.Fatalf("forgetest: SetStatus: state %q is not success, pending, failure or error", state)
	}
	s.state.Lock()
	defer s.state.Unlock()
	list := s.statuses[sha]
	for i := range list {
		if list[i].context == statusContext {
			list[i].state = state
			return
		}
	}
	s.statuses[sha] = append(list, commitStatus{context: statusContext, state: state})
}

// SetCheckRun sets the check run name of sha: status queued|in_progress|
// completed, and for completed a conclusion (success, failure, neutral,
// cancelled, skipped, timed_out, action_required).
func (s *Server) SetCheckRun(sha, name, status, conclusion string) {
	switch status {
	case "queued", "in_progress", "completed":
	default:
		s.t.Fatalf("forgetest: SetCheckRun: status %q is not queued, in_progress or completed", status)
	}
	if status != "completed" {
		conclusion = ""
	}
	s.state.Lock()
	defer s.state.Unlock()
	list := s.checkRuns[sha]
	for i := range list {
		if list[i].name == name {
			list[i].status, list[i].conc = status, conclusion
			return
		}
	}
	s.nextID++
	s.checkRuns[sha] = append(list, checkRun{id: s.nextID, name: name, status: status, conc: conclusion})
}

// PullRequests returns the pull requests the double holds for a
// repository, oldest first.
func (s *Server) PullRequests(owner, name string) []forge.PullRequest {
	s.state.Lock()
	defer s.state.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return nil
	}
	var out []forge.PullRequest
	for _, p := range r.pulls {
		out = append(out, forge.PullRequest{
			Number: p.number, URL: s.htmlURL(r, p), State: p.state, Merged: p.merged, Draft: p.draft,
			Title: p.title, Body: p.body, HeadRef: p.head, HeadSHA: s.headSHA(r, p), BaseRef: p.base,
		})
	}
	return out
}

// git runs the git program with an environment of the double's own (no
// system or global configuration, a fixed identity).
func (s *Server) git(ctx context.Context, dir string, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	full := []string{"-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0"}
	if dir != "" {
		full = append(full, "-C", dir)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, s.gitExe, full...)
	cmd.Env = s.gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		msg := stderr.String()
		if len(msg) > 2000 {
			msg = msg[:2000]
		}
		return stdout.String(), code, fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(msg))
	}
	return strings.TrimSpace(stdout.String()), 0, nil
}

func (s *Server) gitEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=forgetest", "GIT_AUTHOR_EMAIL=forgetest@example.invalid",
		"GIT_COMMITTER_NAME=forgetest", "GIT_COMMITTER_EMAIL=forgetest@example.invalid",
	}
}

// handler routes git to http-backend and REST to the operations.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		o := s.spec.ops[rt.op]
		if o == nil {
			panic("forgetest: the description has no operation " + rt.op)
		}
		mux.Handle(rt.pattern, s.rest(o, rt.h))
	}
	backend := &cgi.Handler{
		Path: s.gitExe, Args: []string{"http-backend"}, Root: "/git", Dir: s.root,
		Env:    append(s.gitEnv(), "GIT_PROJECT_ROOT="+s.root, "GIT_HTTP_EXPORT_ALL=1"),
		Logger: log.New(io.Discard, "", 0), Stderr: io.Discard,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/git/") {
			s.serveGit(w, r, backend)
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			s.unknown(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// serveGit checks Basic auth (password = token) and hands the request to
// git http-backend without the Authorization header.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, backend *cgi.Handler) {
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	good := ok && !s.revoked && subtle.ConstantTimeCompare([]byte(pass), []byte(s.token)) == 1
	s.mu.Unlock()
	if !good {
		w.Header().Set("WWW-Authenticate", `Basic realm="forgetest"`)
		http.Error(w, "authentication failed", http.StatusUnauthorized)
		return
	}
	if strings.Contains(r.URL.Path, "..") {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	r.Body = http.MaxBytesReader(w, r.Body, 256<<20)
	b := *backend
	b.Env = append(append([]string(nil), backend.Env...), "REMOTE_USER="+safeUser(user))
	b.ServeHTTP(w, r)
}

func safeUser(u string) string {
	if ownerRE.MatchString(u) {
		return u
	}
	return "git"
}

// unknown answers a request no route of the double takes: a violation
// (either GitHub has no such operation, or the double does not implement it).
func (s *Server) unknown(w http.ResponseWriter, r *http.Request) {
	where := r.Method + " " + r.URL.Path
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	if op := s.spec.doc.Find(r.Method, r.URL.Path); op != nil {
		s.violate(where, fmt.Sprintf("operation %s is in the description but the double does not implement it", op.OperationID))
	} else {
		s.violate(where, "no operation of the description has this method and path")
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": docsURL, "status": "404"}, nil, s.newRequestID())
}

func (s *Server) newRequestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestSeq++
	return fmt.Sprintf("FT00:%06X:%04X", s.requestSeq, s.requestSeq*7919%65536)
}

// reply is what a REST handler answers.
type reply struct {
	status int
	body   any
	header http.Header
}

type restHandler func(r *http.Request, body map[string]any) reply

type injection struct {
	stall      time.Duration
	failStatus int
	rateAfter  time.Duration
	rated      bool
	drop       string
}

func (s *Server) take() injection {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	var in injection
	if s.stallN > 0 {
		s.stallN--
		in.stall = s.stallFor
	}
	switch {
	case s.failN > 0:
		s.failN--
		in.failStatus = s.failStatus
	case s.rateN > 0:
		s.rateN--
		in.rated, in.rateAfter = true, s.rateAfter
	}
	return in
}

// rest wraps an operation's handler: it validates the request, applies
// the injections and authentication, and validates the response.
func (s *Server) rest(o *opSpec, h restHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		where := r.Method + " " + r.URL.Path
		in := s.take()
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		if err != nil || len(raw) > maxRequestBody {
			s.violate(where, "request: the body is unreadable or longer than the double reads")
			s.respond(w, o, where, s.errorReply(o, http.StatusBadRequest, "Problems parsing JSON"))
			return
		}
		body, bad := s.checkRequest(o, r, raw)
		s.violate(where, bad...)
		if in.stall > 0 {
			timer := time.NewTimer(in.stall)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				timer.Stop()
				return
			case <-s.closing:
				timer.Stop()
				s.respond(w, o, where, s.errorReply(o, http.StatusServiceUnavailable, "The double is closing"))
				return
			}
		}
		var rep reply
		switch {
		case in.failStatus != 0:
			rep = s.errorReply(o, in.failStatus, http.StatusText(in.failStatus))
		case in.rated:
			rep = s.errorReply(o, http.StatusTooManyRequests, "API rate limit exceeded for user ID 1.")
			secs := int64((in.rateAfter + time.Second - 1) / time.Second)
			rep.header = http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}
		default:
			if msg := s.authenticate(r); msg != "" {
				rep = s.errorReply(o, http.StatusUnauthorized, msg)
			} else if body == nil && len(raw) > 0 {
				rep = s.errorReply(o, http.StatusBadRequest, "Problems parsing JSON")
			} else {
				s.state.Lock()
				rep = h(r, body)
				s.state.Unlock()
			}
		}
		s.respond(w, o, where, rep)
	})
}

// authenticate returns "" for a valid token, else GitHub's 401 message.
func (s *Server) authenticate(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if h == "" || !ok {
		return "Requires authentication"
	}
	if !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
		return "Bad credentials"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revoked || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return "Bad credentials"
	}
	return ""
}

// checkRequest validates a request against its operation and decodes the
// body (nil when there is none or it is not a JSON object).
func (s *Server) checkRequest(o *opSpec, r *http.Request, raw []byte) (map[string]any, []string) {
	var bad []string
	for _, e := range s.spec.checkQuery(o, r.URL.Query()) {
		bad = append(bad, "request: "+e)
	}
	args := map[string]string{}
	for name := range o.pathArgs {
		args[name] = r.PathValue(name)
	}
	for _, e := range s.spec.checkPath(o, args) {
		bad = append(bad, "request: "+e)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if o.body != nil && o.bodyReq {
			bad = append(bad, "request: the operation requires a body")
		}
		return nil, bad
	}
	if o.body == nil {
		return nil, append(bad, "request: the operation takes no body")
	}
	v, err := openapicheck.DecodeJSON(raw)
	if err != nil {
		return nil, append(bad, "request: the body is not JSON: "+err.Error())
	}
	for _, e := range s.spec.doc.Validate(o.body, v) {
		bad = append(bad, "request body: "+e)
	}
	m, _ := v.(map[string]any)
	return m, bad
}

// errorReply is an error of the schema the operation declares for status,
// else basic-error (the undeclared statuses GitHub really sends, per NOTES.md).
func (s *Server) errorReply(o *opSpec, status int, message string) reply {
	body := map[string]any{}
	schema, declared := o.responseSchema(status)
	if declared && schema != nil {
		if m, ok := s.spec.fill(schema, s.APIURL(), 0).(map[string]any); ok {
			body = m
		}
	}
	body["message"] = message
	body["documentation_url"] = docsURL
	if !declared || isBasicError(schema) {
		body["status"] = strconv.Itoa(status)
	}
	return reply{status: status, body: body}
}

func isBasicError(schema any) bool {
	m, _ := schema.(map[string]any)
	return m["$ref"] == openapicheck.SchemaPrefix+"basic-error"
}

// respond writes rep and validates what was written.
func (s *Server) respond(w http.ResponseWriter, o *opSpec, where string, rep reply) {
	var b []byte
	if rep.body != nil {
		var err error
		if b, err = json.Marshal(rep.body); err != nil {
			s.violate(where, "response: the double cannot encode its body: "+err.Error())
			b = nil
		}
	}
	s.mu.Lock()
	drop := s.dropField
	s.mu.Unlock()
	if drop != "" && len(b) > 0 && b[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			if _, ok := m[drop]; ok {
				delete(m, drop)
				b, _ = json.Marshal(m)
				s.mu.Lock()
				s.dropField = ""
				s.mu.Unlock()
			}
		}
	}
	s.violate(where, s.checkResponse(o, rep.status, b)...)
	writeJSONBytes(w, rep.status, b, rep.header, s.newRequestID())
}

// checkResponse validates a response body against the description: the
// declared schema of the status; an undeclared 4xx or 5xx must be a
// basic-error; an undeclared 2xx or 3xx is itself a violation.
func (s *Server) checkResponse(o *opSpec, status int, b []byte) []string {
	prefix := fmt.Sprintf("response %d: ", status)
	schema, declared := o.responseSchema(status)
	if !declared {
		if status < 400 {
			return []string{prefix + "the status is not declared"}
		}
		schema = map[string]any{"$ref": openapicheck.SchemaPrefix + "basic-error"}
	}
	if schema == nil {
		if len(b) > 0 {
			return []string{prefix + "a body where the description declares none"}
		}
		return nil
	}
	v, err := openapicheck.DecodeJSON(b)
	if err != nil {
		return []string{prefix + "the body is not JSON: " + err.Error()}
	}
	var out []string
	for _, e := range s.spec.doc.Validate(schema, v) {
		out = append(out, prefix+e)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, body any, header http.Header, requestID string) {
	b, _ := json.Marshal(body)
	writeJSONBytes(w, status, b, header, requestID)
}

func writeJSONBytes(w http.ResponseWriter, status int, b []byte, header http.Header, requestID string) {
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	h.Set("X-GitHub-Request-Id", requestID)
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	if len(b) > 0 {
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(b)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
