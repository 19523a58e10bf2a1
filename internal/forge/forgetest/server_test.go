package forgetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/forge/forgetest"
)

// recordingTB stands in for the test the double fails at cleanup, so a
// test can assert that it would have failed.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recordingTB) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// startRecorded starts a double whose cleanup failure is recorded; want
// is checked against it after the double has closed ("" wants none).
func startRecorded(t *testing.T, want ...string) *forgetest.Server {
	t.Helper()
	rec := &recordingTB{TB: t}
	// Registered first, so it runs after the double's own cleanup.
	t.Cleanup(func() {
		got := rec.failures()
		if len(want) == 0 {
			require.Empty(t, got)
			return
		}
		require.Contains(t, got, "broke GitHub's OpenAPI description")
		for _, w := range want {
			require.Contains(t, got, w)
		}
	})
	s := forgetest.Start(rec)
	seed := t.TempDir()
	git(t, seed, "init", "--quiet", "--initial-branch=main")
	require.NoError(t, os.WriteFile(seed+"/f", []byte("x\n"), 0o644))
	git(t, seed, "add", "f")
	git(t, seed, "commit", "--quiet", "-m", "first")
	s.AddRepo("o", "r", "main", seed)
	return s
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// do sends a raw REST request with the token and returns status and body.
func do(t *testing.T, s *forgetest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, strings.TrimSuffix(s.APIURL(), "/")+path, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func TestServer_MalformedResponseIsAViolation(t *testing.T) {
	t.Parallel()
	s := startRecorded(t, `GET /user: response 200: /: matches none of oneOf: /: required property "login" is missing`, `response 200: /: required property "full_name" is missing`)
	s.DropFieldNext("login")
	client, err := forge.New(s.Token(), forge.Options{BaseURL: s.APIURL()})
	require.NoError(t, err)
	_, err = client.Authenticated(context.Background())
	require.Error(t, err, "the client refuses a user without a login")
	require.Len(t, s.Violations(), 1)
	require.Contains(t, s.Violations()[0], "GET /user")

	s.DropFieldNext("full_name")
	status, body := do(t, s, "GET", "/repos/o/r", "")
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, body, "full_name")
	require.Len(t, s.Violations(), 2)

	// The hook is spent: the next response is whole again.
	status, body = do(t, s, "GET", "/repos/o/r", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "o/r", body["full_name"])
	require.Len(t, s.Violations(), 2)
}

func TestServer_MalformedRequestIsAViolation(t *testing.T) {
	t.Parallel()
	s := startRecorded(t,
		`POST /repos/o/r/pulls: request body: /: required property "head" is missing`,
		`GET /repos/o/r/pulls: request: query parameter "colour" is not declared`,
		`GET /repos/o/r/pulls: request: query parameter "per_page": /: want type integer`,
		`DELETE /repos/o/r: no operation of the description has this method and path`,
		`GET /repos/o/r/branches: operation repos/list-branches is in the description but the double does not implement it`,
		`POST /user: no operation`,
	)
	status, _ := do(t, s, "POST", "/repos/o/r/pulls", `{"base":"main","title":"t"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	status, _ = do(t, s, "GET", "/repos/o/r/pulls?colour=blue", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = do(t, s, "GET", "/repos/o/r/pulls?per_page=many", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = do(t, s, "DELETE", "/repos/o/r", "")
	require.Equal(t, http.StatusNotFound, status)
	status, _ = do(t, s, "GET", "/repos/o/r/branches", "")
	require.Equal(t, http.StatusNotFound, status)
	status, _ = do(t, s, "POST", "/user", `{}`)
	require.Equal(t, http.StatusNotFound, status)
	require.Len(t, s.Violations(), 6)
}

func TestServer_ViolationsNeverHoldTheToken(t *testing.T) {
	t.Parallel()
	s := startRecorded(t, `query parameter "state"`)
	status, _ := do(t, s, "GET", "/repos/o/r/pulls?state="+s.Token(), "")
	require.Equal(t, http.StatusOK, status)
	v := strings.Join(s.Violations(), "\n")
	require.Contains(t, v, "[token]")
	require.NotContains(t, v, s.Token())
}

func TestServer_GetRefAndErrors(t *testing.T) {
	t.Parallel()
	s := startRecorded(t)
	tip := git(t, s.BareDir("o", "r"), "rev-parse", "refs/heads/main")
	status, body := do(t, s, "GET", "/repos/o/r/git/ref/heads/main", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "refs/heads/main", body["ref"])
	require.Equal(t, tip, body["object"].(map[string]any)["sha"])

	status, body = do(t, s, "GET", "/repos/o/r/git/ref/heads/nope", "")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "Not Found", body["message"])
	status, _ = do(t, s, "GET", "/repos/o/other", "")
	require.Equal(t, http.StatusNotFound, status)

	// Without a token: 401, an undeclared status with a basic-error body.
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.APIURL()+"repos/o/r", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// The older "token" scheme is accepted too.
	req, err = http.NewRequestWithContext(t.Context(), "GET", s.APIURL()+"repos/o/r", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "token "+s.Token())
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The duplicate body is the one GitHub sends.
	git(t, s.BareDir("o", "r"), "branch", "feature", "main")
	status, _ = do(t, s, "POST", "/repos/o/r/pulls", `{"head":"feature","base":"main","title":"t","draft":true}`)
	require.Equal(t, http.StatusCreated, status)
	status, body = do(t, s, "POST", "/repos/o/r/pulls", `{"head":"o:feature","base":"main","title":"t"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "Validation Failed", body["message"])
	require.Equal(t, []any{map[string]any{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for o:feature."}}, body["errors"])
	require.Equal(t, "422", body["status"])
	require.Equal(t, 7, s.Requests())
}

func TestServer_CloseEndsAStalledRequest(t *testing.T) {
	t.Parallel()
	s := startRecorded(t)
	s.StallNext(1, time.Hour)
	client, err := forge.New(s.Token(), forge.Options{BaseURL: s.APIURL()})
	require.NoError(t, err)
	var wg sync.WaitGroup
	var got error
	started := s.Requests()
	wg.Go(func() { _, got = client.Authenticated(context.Background()) })
	// Close must not wait an hour: the stalled request is answered.
	require.Eventually(t, func() bool { return s.Requests() > started }, 10*time.Second, time.Millisecond, "the request reached the double")
	s.Close()
	wg.Wait()
	var fe *forge.Error
	require.ErrorAs(t, got, &fe)
	require.Equal(t, forge.CodeUnavailable, fe.Code)
	require.Equal(t, 503, fe.Status)
	s.Close() // twice is fine
}
