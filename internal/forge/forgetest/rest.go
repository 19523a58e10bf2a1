package forgetest

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

type route struct {
	pattern string
	op      string
	h       restHandler
}

func (s *Server) routes() []route {
	return []route{
		{"GET /repos/{owner}/{repo}", "repos/get", s.getRepo},
		{"GET /repos/{owner}/{repo}/pulls", "pulls/list", s.listPulls},
		{"POST /repos/{owner}/{repo}/pulls", "pulls/create", s.createPull},
		{"GET /repos/{owner}/{repo}/pulls/{pull_number}", "pulls/get", s.getPull},
		{"PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", "pulls/merge", s.mergePull},
		{"GET /repos/{owner}/{repo}/commits/{ref}/status", "repos/get-combined-status-for-ref", s.combinedStatus},
		{"GET /repos/{owner}/{repo}/commits/{ref}/check-runs", "checks/list-for-ref", s.listCheckRuns},
		{"GET /repos/{owner}/{repo}/git/ref/{ref...}", "git/get-ref", s.getRef},
		{"GET /user", "users/get-authenticated", s.getUser},
	}
}

const login = "forgetest-user"

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (s *Server) notFound() reply {
	return reply{status: http.StatusNotFound, body: map[string]any{"message": "Not Found", "documentation_url": docsURL, "status": "404"}}
}

func validationFailed(field, code, message string) reply {
	e := map[string]any{"resource": "PullRequest", "code": code}
	if field != "" {
		e["field"] = field
	}
	if message != "" {
		e["message"] = message
	}
	return reply{status: http.StatusUnprocessableEntity, body: map[string]any{
		"message": "Validation Failed", "errors": []any{e},
		"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422",
	}}
}

// lookup finds the request's repository (case-insensitively, as GitHub does).
func (s *Server) lookup(r *http.Request) *repo {
	key := r.PathValue("owner") + "/" + r.PathValue("repo")
	for k, rp := range s.repos {
		if strings.EqualFold(k, key) {
			return rp
		}
	}
	return nil
}

// tip is the sha of a branch of rp, "" when it does not exist.
func (s *Server) tip(rp *repo, branch string) string {
	if !branchRE.MatchString(branch) || strings.Contains(branch, "..") {
		return ""
	}
	out, _, err := s.git(context.Background(), rp.dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

// headSHA is the PR's head: the branch tip while open, frozen once closed.
func (s *Server) headSHA(rp *repo, p *pull) string {
	if p.state == "open" {
		if t := s.tip(rp, p.head); t != "" {
			p.headSHA = t
		}
	}
	return p.headSHA
}

// mergeTree merges head into base without a work tree: the tree, and
// false when they conflict.
func (s *Server) mergeTree(rp *repo, base, head string) (string, bool) {
	out, code, err := s.git(context.Background(), rp.dir, "merge-tree", "--write-tree", "--no-messages", base, head)
	if err != nil {
		if code == 1 {
			return "", false
		}
		s.t.Errorf("forgetest: %v", err)
		return "", false
	}
	return strings.Fields(out)[0], true
}

func (s *Server) apiURL(parts ...string) string { return s.APIURL() + strings.Join(parts, "/") }

func (s *Server) htmlURL(rp *repo, p *pull) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", s.hs.URL, rp.owner, rp.name, p.number)
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) userJSON(name string) map[string]any {
	u := s.spec.instance("simple-user", s.APIURL())
	u["login"] = name
	u["type"] = "User"
	u["html_url"] = s.hs.URL + "/" + name
	u["url"] = s.apiURL("users", name)
	return u
}

func (s *Server) repoJSON(rp *repo, schema string) map[string]any {
	m := s.spec.instance(schema, s.APIURL())
	m["id"] = rp.id
	m["node_id"] = fmt.Sprintf("R_%d", rp.id)
	m["name"] = rp.name
	m["full_name"] = rp.owner + "/" + rp.name
	m["owner"] = s.userJSON(rp.owner)
	m["private"] = false
	m["html_url"] = s.hs.URL + "/" + rp.owner + "/" + rp.name
	m["url"] = s.apiURL("repos", rp.owner, rp.name)
	if _, ok := m["default_branch"]; ok {
		m["default_branch"] = rp.defaultBranch
	}
	if _, ok := m["clone_url"]; ok {
		m["clone_url"] = s.GitURL(rp.owner, rp.name)
	}
	return m
}

func (s *Server) pullJSON(rp *repo, p *pull, full bool) map[string]any {
	schema := "pull-request-simple"
	if full {
		schema = "pull-request"
	}
	m := s.spec.instance(schema, s.APIURL())
	m["id"] = p.id
	m["node_id"] = fmt.Sprintf("PR_%d", p.id)
	m["number"] = p.number
	m["url"] = s.apiURL("repos", rp.owner, rp.name, "pulls", strconv.Itoa(p.number))
	m["html_url"] = s.htmlURL(rp, p)
	m["state"] = p.state
	m["locked"] = false
	m["title"] = p.title
	m["body"] = p.body
	m["draft"] = p.draft
	m["user"] = s.userJSON(login)
	m["created_at"] = ts(p.created)
	m["updated_at"] = ts(p.updated)
	m["closed_at"] = ts(p.closedAt)
	m["merged_at"] = ts(p.mergedAt)
	m["author_association"] = "OWNER"
	if p.mergeSHA != "" {
		m["merge_commit_sha"] = p.mergeSHA
	} else {
		m["merge_commit_sha"] = nil
	}
	head := s.headSHA(rp, p)
	base := s.tip(rp, p.base)
	side := func(ref, sha string) map[string]any {
		return map[string]any{
			"label": rp.owner + ":" + ref, "ref": ref, "sha": sha,
			"repo": s.repoJSON(rp, "repository"), "user": s.userJSON(rp.owner),
		}
	}
	m["head"] = side(p.head, head)
	m["base"] = side(p.base, base)
	if full {
		m["merged"] = p.merged
		m["maintainer_can_modify"] = p.maintainerCanModify
		m["mergeable"], m["mergeable_state"] = nil, "unknown"
		if p.state == "open" && head != "" && base != "" {
			_, ok := s.mergeTree(rp, base, head)
			m["mergeable"] = ok
			switch {
			case !ok:
				m["mergeable_state"] = "dirty"
			case p.draft:
				m["mergeable_state"] = "draft"
			default:
				m["mergeable_state"] = "clean"
			}
		}
		if p.merged {
			m["merged_by"] = s.userJSON(login)
		}
		m["commits"], m["comments"], m["review_comments"] = 1, 0, 0
	}
	return m
}

func (s *Server) getRepo(r *http.Request, _ map[string]any) reply {
	rp := s.lookup(r)
	if rp == nil {
		return s.notFound()
	}
	return reply{status: http.StatusOK, body: s.repoJSON(rp, "full-repository")}
}

// page reads per_page (default 30, at most 100) and page (default 1).
func page(r *http.Request) (per, n int) {
	per, n = 30, 1
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		n = v
	}
	return per, n
}

// paginate returns the bounds of the page of total items and the Link
// header naming the next and last pages.
func (s *Server) paginate(r *http.Request, total int) (lo, hi int, h http.Header) {
	per, n := page(r)
	lo = min((n-1)*per, total)
	hi = min(lo+per, total)
	last := max(1, (total+per-1)/per)
	if n < last {
		link := func(p int) string {
			q := r.URL.Query()
			q.Set("page", strconv.Itoa(p))
			q.Set("per_page", strconv.Itoa(per))
			return fmt.Sprintf("<%s%s?%s>", s.hs.URL, r.URL.Path, q.Encode())
		}
		h = http.Header{"Link": {link(n+1) + `; rel="next", ` + link(last) + `; rel="last"`}}
	}
	return lo, hi, h
}

func (s *Server) listPulls(r *http.Request, _ map[string]any) reply {
	rp := s.lookup(r)
	if rp == nil {
		return s.notFound()
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var list []*pull
	for _, p := range rp.pulls {
		if state != "all" && p.state != state {
			continue
		}
		if h := q.Get("head"); h != "" {
			owner, ref, ok := strings.Cut(h, ":")
			if !ok {
				owner, ref = rp.owner, h
			}
			if !strings.EqualFold(owner, rp.owner) || ref != p.head {
				continue
			}
		}
		if b := q.Get("base"); b != "" && b != p.base {
			continue
		}
		list = append(list, p)
	}
	desc := q.Get("direction") == "desc" || q.Get("direction") == "" && (q.Get("sort") == "" || q.Get("sort") == "created")
	sort.SliceStable(list, func(i, j int) bool {
		if desc {
			return list[i].number > list[j].number
		}
		return list[i].number < list[j].number
	})
	lo, hi, h := s.paginate(r, len(list))
	out := []any{}
	for _, p := range list[lo:hi] {
		out = append(out, s.pullJSON(rp, p, false))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

func (s *Server) createPull(r *http.Request, body map[string]any) reply {
	rp := s.lookup(r)
	if rp == nil {
		return s.notFound()
	}
	head, base, title := str(body, "head"), str(body, "base"), str(body, "title")
	if owner, ref, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, rp.owner) {
			return validationFailed("head", "invalid", "")
		}
		head = ref
	}
	if head == "" || s.tip(rp, head) == "" {
		return validationFailed("head", "invalid", "")
	}
	if base == "" || s.tip(rp, base) == "" {
		return validationFailed("base", "invalid", "")
	}
	if title == "" {
		return validationFailed("title", "missing_field", "")
	}
	for _, p := range rp.pulls {
		if p.state == "open" && p.head == head && p.base == base {
			return validationFailed("", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head))
		}
	}
	s.nextID++
	now := time.Now()
	draft, _ := body["draft"].(bool)
	mcm, _ := body["maintainer_can_modify"].(bool)
	p := &pull{
		number: len(rp.pulls) + 1, id: s.nextID, title: title, body: str(body, "body"), head: head, base: base,
		draft: draft, state: "open", created: now, updated: now, maintainerCanModify: mcm,
	}
	p.headSHA = s.tip(rp, head)
	rp.pulls = append(rp.pulls, p)
	m := s.pullJSON(rp, p, true)
	return reply{status: http.StatusCreated, body: m, header: http.Header{"Location": {str(m, "url")}}}
}

func (s *Server) findPull(r *http.Request) (*repo, *pull) {
	rp := s.lookup(r)
	if rp == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(r.PathValue("pull_number"))
	if err != nil || n < 1 || n > len(rp.pulls) {
		return rp, nil
	}
	return rp, rp.pulls[n-1]
}

func (s *Server) getPull(r *http.Request, _ map[string]any) reply {
	rp, p := s.findPull(r)
	if p == nil {
		return s.notFound()
	}
	return reply{status: http.StatusOK, body: s.pullJSON(rp, p, true)}
}

func (s *Server) mergePull(r *http.Request, body map[string]any) reply {
	rp, p := s.findPull(r)
	if p == nil {
		return s.notFound()
	}
	notMergeable := func(msg string) reply {
		return reply{status: http.StatusMethodNotAllowed, body: map[string]any{
			"message": msg, "documentation_url": "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request",
		}}
	}
	if p.state != "open" {
		return notMergeable("Pull Request is not mergeable")
	}
	head := s.headSHA(rp, p)
	if sha := str(body, "sha"); sha != "" && sha != head {
		return reply{status: http.StatusConflict, body: map[string]any{
			"message":           "Head branch was modified. Review and try the merge again.",
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request",
		}}
	}
	base := s.tip(rp, p.base)
	if head == "" || base == "" {
		return notMergeable("Pull Request is not mergeable")
	}
	ctx := context.Background()
	var newTip string
	switch method := str(body, "merge_method"); method {
	case "", "merge", "squash":
		tree, ok := s.mergeTree(rp, base, head)
		if !ok {
			return notMergeable("Pull Request is not mergeable")
		}
		args := []string{"commit-tree", tree, "-p", base}
		msg := fmt.Sprintf("%s (#%d)", p.title, p.number)
		if method != "squash" {
			args = append(args, "-p", head)
			msg = fmt.Sprintf("Merge pull request #%d from %s/%s\n\n%s", p.number, rp.owner, p.head, p.title)
		}
		out, _, err := s.git(ctx, rp.dir, append(args, "-m", msg)...)
		if err != nil {
			s.t.Errorf("forgetest: merge: %v", err)
			return s.errorReply(s.spec.ops["pulls/merge"], http.StatusInternalServerError, "Server Error")
		}
		newTip = out
	case "rebase":
		// The double rebases only what needs no rewriting: a head that
		// already contains the base fast-forwards it.
		if _, code, _ := s.git(ctx, rp.dir, "merge-base", "--is-ancestor", base, head); code != 0 {
			return notMergeable("This branch can't be rebased")
		}
		newTip = head
	default:
		return reply{status: http.StatusUnprocessableEntity, body: map[string]any{
			"message": "Validation Failed", "documentation_url": docsURL, "status": "422",
			"errors": []any{map[string]any{"resource": "PullRequest", "field": "merge_method", "code": "invalid"}},
		}}
	}
	if _, _, err := s.git(ctx, rp.dir, "update-ref", "refs/heads/"+p.base, newTip, base); err != nil {
		return reply{status: http.StatusConflict, body: map[string]any{
			"message": "Base branch was modified. Review and try the merge again.", "documentation_url": docsURL,
		}}
	}
	now := time.Now()
	p.merged, p.state, p.mergeSHA, p.headSHA = true, "closed", newTip, head
	p.mergedAt, p.closedAt, p.updated = now, now, now
	return reply{status: http.StatusOK, body: map[string]any{"sha": newTip, "merged": true, "message": "Pull Request successfully merged"}}
}

// commit resolves the {ref} of a commits/ path: a sha of the repository
// or a branch name.
func (s *Server) commit(rp *repo, ref string) string {
	if shaRE.MatchString(ref) {
		if out, _, err := s.git(context.Background(), rp.dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err == nil {
			return out
		}
		return ""
	}
	return s.tip(rp, ref)
}

func (s *Server) combinedStatus(r *http.Request, _ map[string]any) reply {
	rp := s.lookup(r)
	if rp == nil {
		return s.notFound()
	}
	sha := s.commit(rp, r.PathValue("ref"))
	if sha == "" {
		return s.notFound()
	}
	list := s.statuses[sha]
	state := "success"
	if len(list) == 0 {
		state = "pending" // what GitHub says of a commit without statuses
	}
	for _, st := range list {
		switch {
		case st.state == "failure" || st.state == "error":
			state = "failure"
		case st.state == "pending" && state != "failure":
			state = "pending"
		}
	}
	lo, hi, _ := s.paginate(r, len(list)) // GitHub declares no Link header here
	out := []any{}
	for i := lo; i < hi; i++ {
		st := list[i]
		e := s.spec.instance("simple-commit-status", s.APIURL())
		e["id"], e["node_id"] = i+1, fmt.Sprintf("SC_%d", i+1)
		e["context"], e["state"] = st.context, st.state
		e["description"], e["target_url"] = nil, nil
		out = append(out, e)
	}
	m := s.spec.instance("combined-commit-status", s.APIURL())
	m["state"], m["sha"], m["total_count"], m["statuses"] = state, sha, len(list), out
	m["repository"] = s.repoJSON(rp, "minimal-repository")
	m["url"] = s.apiURL("repos", rp.owner, rp.name, "commits", sha, "status")
	m["commit_url"] = s.apiURL("repos", rp.owner, rp.name, "commits", sha)
	return reply{status: http.StatusOK, body: m}
}

func (s *Server) listCheckRuns(r *http.Request, _ map[string]any) reply {
	rp := s.lookup(r)
	if rp == nil {
		return s.notFound()
	}
	sha := s.commit(rp, r.PathValue("ref"))
	if sha == "" {
		return s.notFound()
	}
	q := r.URL.Query()
	var list []checkRun
	for _, c := range s.checkRuns[sha] {
		if n := q.Get("check_name"); n != "" && n != c.name {
			continue
		}
		if st := q.Get("status"); st != "" && st != c.status {
			continue
		}
		list = append(list, c)
	}
	lo, hi, h := s.paginate(r, len(list))
	out := []any{}
	for _, c := range list[lo:hi] {
		e := s.spec.instance("check-run", s.APIURL())
		e["id"], e["node_id"], e["head_sha"], e["name"] = c.id, fmt.Sprintf("CR_%d", c.id), sha, c.name
		e["external_id"] = strconv.FormatInt(c.id, 10)
		e["status"] = c.status
		if c.conc == "" {
			e["conclusion"], e["completed_at"] = nil, nil
		} else {
			e["conclusion"] = c.conc
		}
		out = append(out, e)
	}
	return reply{status: http.StatusOK, header: h, body: map[string]any{"total_count": len(list), "check_runs": out}}
}

func (s *Server) getRef(r *http.Request, _ map[string]any) reply {
	rp := s.lookup(r)
	if rp == nil {
		return s.notFound()
	}
	ref := r.PathValue("ref")
	if !branchRE.MatchString(ref) || strings.Contains(ref, "..") || !(strings.HasPrefix(ref, "heads/") || strings.HasPrefix(ref, "tags/")) {
		return s.notFound()
	}
	out, _, err := s.git(context.Background(), rp.dir, "rev-parse", "--verify", "--quiet", "refs/"+ref)
	if err != nil {
		return s.notFound()
	}
	typ := "commit"
	if strings.HasPrefix(ref, "tags/") {
		if t, _, err := s.git(context.Background(), rp.dir, "cat-file", "-t", out); err == nil {
			typ = t
		}
	}
	return reply{status: http.StatusOK, body: map[string]any{
		"ref": "refs/" + ref, "node_id": "REF_" + out[:12], "url": s.apiURL("repos", rp.owner, rp.name, "git", "refs", ref),
		"object": map[string]any{"type": typ, "sha": out, "url": s.apiURL("repos", rp.owner, rp.name, "git", typ+"s", out)},
	}}
}

func (s *Server) getUser(*http.Request, map[string]any) reply {
	u := s.spec.instance("private-user", s.APIURL())
	for k, v := range s.userJSON(login) {
		u[k] = v
	}
	u["user_view_type"] = "private"
	u["name"] = "Forge Test"
	return reply{status: http.StatusOK, body: u}
}
