package git_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
)

// password is the canary of the push tests: it must appear in no error,
// argument or environment.
const password = "s3cret-T0KEN-canary"

// pushBundle is a repository with two commits (one, then two on top) and
// a bare remote with hooks that would mark that they ran.
type pushBundle struct {
	repo, gitDir, bare, markers string
	one, two                    string
}

func pushSetup(t *testing.T) pushBundle {
	t.Helper()
	r := repo(t)
	one := run(t, r, "rev-parse", "HEAD")
	write(t, r, "more.txt", "more\n")
	run(t, r, "add", "more.txt")
	run(t, r, append(append([]string{}, person...), "commit", "-q", "-m", "two")...)
	two := run(t, r, "rev-parse", "HEAD")
	bare := filepath.Join(t.TempDir(), "remote repo.git")
	plain(t, "", "init", "-q", "--bare", bare)
	markers := t.TempDir()
	for _, h := range []string{"pre-receive", "update", "post-receive", "post-update", "reference-transaction"} {
		script := "#!/bin/sh\ntouch '" + filepath.Join(markers, h) + "'\nexit 0\n"
		require.NoError(t, os.WriteFile(filepath.Join(bare, "hooks", h), []byte(script), 0o755))
	}
	pre := "#!/bin/sh\ntouch '" + filepath.Join(markers, "pre-push") + "'\nexit 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(r, ".git", "hooks", "pre-push"), []byte(pre), 0o755))
	return pushBundle{repo: r, gitDir: filepath.Join(r, ".git"), bare: bare, markers: markers, one: one, two: two}
}

// plain runs the person's own git, outside jam's package.
func plain(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func remoteRef(t *testing.T, bare, branch string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", bare, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func TestPush_local(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := pushSetup(t)
	for _, remote := range []string{b.bare, (&url.URL{Scheme: "file", Path: b.bare}).String()} {
		branch := "jam/deliver-" + map[bool]string{true: "path", false: "url"}[remote == b.bare]
		sha, err := git.RemoteBranch(ctx, b.gitDir, remote, branch, nil)
		require.NoError(t, err)
		assert.Equal(t, "", sha, "an absent branch is no error")

		res, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.one, Branch: branch})
		require.NoError(t, err)
		assert.Equal(t, git.PushResult{RemoteSHA: b.one, Created: true}, res)
		assert.Equal(t, b.one, remoteRef(t, b.bare, branch))
		sha, err = git.RemoteBranch(ctx, b.gitDir, remote, branch, nil)
		require.NoError(t, err)
		assert.Equal(t, b.one, sha)

		res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.one, Branch: branch})
		require.NoError(t, err, "pushing again is idempotent")
		assert.Equal(t, git.PushResult{RemoteSHA: b.one, AlreadyThere: true}, res)

		res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.two, Branch: branch})
		require.ErrorIs(t, err, jam.ErrConflict, "create-only refuses a branch that exists elsewhere")
		assert.Equal(t, b.one, res.RemoteSHA, "the refusal says where the branch is")
		assert.Contains(t, err.Error(), b.one)
		assert.Equal(t, b.one, remoteRef(t, b.bare, branch))

		res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.two, Branch: branch, Expect: b.two})
		require.ErrorIs(t, err, jam.ErrConflict, "a wrong expectation is refused")
		assert.Equal(t, b.one, res.RemoteSHA)

		res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.two, Branch: branch, Expect: b.one})
		require.NoError(t, err, "the right expectation moves it")
		assert.Equal(t, git.PushResult{RemoteSHA: b.two}, res)
		assert.Equal(t, b.two, remoteRef(t, b.bare, branch))

		// Moving it back is not a fast-forward: the lease allows it.
		res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.one, Branch: branch, Expect: b.two})
		require.NoError(t, err)
		assert.Equal(t, b.one, res.RemoteSHA)
		assert.Equal(t, b.one, remoteRef(t, b.bare, branch))

		res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.one, Branch: branch, Expect: b.two})
		require.NoError(t, err, "a branch at Commit is success whatever was expected")
		assert.True(t, res.AlreadyThere)
	}
	entries, err := os.ReadDir(b.markers)
	require.NoError(t, err)
	assert.Empty(t, entries, "no hook ran: neither the local pre-push nor the remote's")
	assert.Equal(t, "", remoteRef(t, b.bare, "main"), "only the one branch is pushed")
}

func TestPush_concurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := pushSetup(t)
	var created, refused atomic.Int32
	errs := make(chan error, 2)
	for _, c := range []string{b.one, b.two} {
		go func() {
			res, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: b.bare, Commit: c, Branch: "race"})
			switch {
			case err == nil && res.Created:
				created.Add(1)
			case errors.Is(err, jam.ErrConflict):
				refused.Add(1)
				err = nil
			}
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	assert.Equal(t, int32(1), created.Load(), "exactly one create wins")
	assert.Equal(t, int32(1), refused.Load())
}

func TestPush_invalid(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := pushSetup(t)
	for name, p := range map[string]git.PushParams{
		"remote name":        {Remote: "origin"},
		"option remote":      {Remote: "--upload-pack=evil"},
		"password in url":    {Remote: "https://user:" + password + "@example.com/r.git"},
		"user in https":      {Remote: "https://user@example.com/r.git"},
		"plain http":         {Remote: "http://example.com/r.git"},
		"ext transport":      {Remote: "ext::sh -c evil"},
		"helper address":     {Remote: "foo::bar"},
		"relative path":      {Remote: "some/dir"},
		"query":              {Remote: "https://example.com/r.git?x=1"},
		"bad branch":         {Remote: b.bare, Branch: "a..b"},
		"option branch":      {Remote: b.bare, Branch: "-x"},
		"short expect":       {Remote: b.bare, Expect: "abc"},
		"credential to file": {Remote: b.bare, Credential: &git.Credential{Username: "u", Password: password}},
		"two-line password":  {Remote: "http://127.0.0.1:1/r.git", Credential: &git.Credential{Username: "u", Password: "a\nb"}},
		"quote in host":      {Remote: "https://ex'ample.com/r.git"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p.GitDir, p.Commit = b.gitDir, b.one
			if p.Branch == "" {
				p.Branch = "b"
			}
			_, err := git.Push(ctx, p)
			require.ErrorIs(t, err, jam.ErrInvalid)
			assert.NotContains(t, err.Error(), password)
		})
	}
	_, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: b.bare, Commit: strings.Repeat("3", 40), Branch: "b"})
	require.ErrorIs(t, err, jam.ErrNotFound, "a commit the git directory lacks")
}

func TestPush_unreachable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := pushSetup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/r.git"
	require.NoError(t, l.Close())
	for _, remote := range []string{closed, filepath.Join(t.TempDir(), "missing.git")} {
		_, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: remote, Commit: b.one, Branch: "b",
			Credential: cred(remote, password)})
		require.ErrorIs(t, err, jam.ErrUnavailable, "%v", err)
		assert.NotContains(t, err.Error(), password)
		_, err = git.RemoteBranch(ctx, b.gitDir, remote, "b", cred(remote, password))
		require.ErrorIs(t, err, jam.ErrUnavailable, "%v", err)
	}
}

// cred is a credential for an http remote, nil for a path.
func cred(remote, pw string) *git.Credential {
	if !strings.HasPrefix(remote, "http") {
		return nil
	}
	return &git.Credential{Username: "jam-bot", Password: pw}
}

// httpRemote serves the bare repository with git http-backend behind
// Basic authentication, and counts the requests that came with the right
// password.
type httpRemote struct {
	url  string
	good atomic.Int32
}

func serveHTTP(t *testing.T, bare string) *httpRemote {
	t.Helper()
	plain(t, bare, "config", "http.receivepack", "true")
	execPath := plain(t, "", "--exec-path")
	backend := &cgi.Handler{
		Path: filepath.Join(execPath, "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1", "REMOTE_USER=jam-bot"},
		InheritEnv: []string{"PATH"},
	}
	h := &httpRemote{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, ok := r.BasicAuth()
		if !ok || user != "jam-bot" || pw != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.good.Add(1)
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/" + (&url.URL{Path: filepath.Base(bare)}).EscapedPath()
	return h
}

func TestPush_http(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := pushSetup(t)
	srv := serveHTTP(t, b.bare)
	good := &git.Credential{Username: "jam-bot", Password: password}

	res, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: srv.url, Commit: b.one, Branch: "jam/http", Credential: good})
	require.NoError(t, err)
	assert.Equal(t, git.PushResult{RemoteSHA: b.one, Created: true}, res)
	assert.Equal(t, b.one, remoteRef(t, b.bare, "jam/http"))
	assert.NotZero(t, srv.good.Load())

	sha, err := git.RemoteBranch(ctx, b.gitDir, srv.url, "jam/http", good)
	require.NoError(t, err)
	assert.Equal(t, b.one, sha)

	res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: srv.url, Commit: b.one, Branch: "jam/http", Credential: good})
	require.NoError(t, err)
	assert.True(t, res.AlreadyThere)

	res, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: srv.url, Commit: b.two, Branch: "jam/http", Credential: good})
	require.ErrorIs(t, err, jam.ErrConflict)
	assert.Equal(t, b.one, res.RemoteSHA)

	for name, c := range map[string]*git.Credential{
		"wrong password": {Username: "jam-bot", Password: password + "-wrong"},
		"none":           nil,
	} {
		_, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: srv.url, Commit: b.two, Branch: "jam/other", Credential: c})
		require.ErrorIs(t, err, git.ErrAuth, name)
		require.ErrorIs(t, err, jam.ErrUnauthenticated, name)
		assert.NotContains(t, err.Error(), password, name)
		_, err = git.RemoteBranch(ctx, b.gitDir, srv.url, "jam/other", c)
		require.ErrorIs(t, err, git.ErrAuth, name)
		assert.NotContains(t, err.Error(), password, name)
	}
	assert.Equal(t, "", remoteRef(t, b.bare, "jam/other"))
}

// TestPush_redirectedHostGetsNoPassword: a URL rewritten by the
// repository's configuration to another host (url.*.insteadOf) gets no
// password from jam's helper, though the first host would have.
func TestPush_redirectedHostGetsNoPassword(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := pushSetup(t)
	srv := serveHTTP(t, b.bare)
	// The same server under another name of the loopback host.
	other := strings.Replace(srv.url, "127.0.0.1", "localhost", 1)
	plain(t, b.repo, "config", "url."+other+".pushInsteadOf", srv.url)
	_, err := git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: srv.url, Commit: b.one, Branch: "x",
		Credential: &git.Credential{Username: "jam-bot", Password: password}})
	require.ErrorIs(t, err, git.ErrAuth, "the rewritten host asks, and jam's helper answers nothing")
	assert.Zero(t, srv.good.Load(), "no request carried the password")
}

// TestPush_passwordNeverInArgvOrEnv puts a git on PATH that records its
// command line and environment (from /proc) and then runs the real git:
// the password is in neither, though the push authenticates.
func TestPush_passwordNeverInArgvOrEnv(t *testing.T) {
	b := pushSetup(t)
	srv := serveHTTP(t, b.bare)
	real, err := exec.LookPath("git")
	require.NoError(t, err)
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "record")
	script := "#!/bin/sh\n" +
		"cat /proc/$$/cmdline >> '" + record + "'\n" +
		"cat /proc/$$/environ >> '" + record + "'\n" +
		"exec '" + real + "' \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = git.Push(ctx, git.PushParams{GitDir: b.gitDir, Remote: srv.url, Commit: b.one, Branch: "argv",
		Credential: &git.Credential{Username: "jam-bot", Password: password}})
	require.NoError(t, err)
	assert.Equal(t, b.one, remoteRef(t, b.bare, "argv"))
	got, err := os.ReadFile(record)
	require.NoError(t, err)
	require.True(t, bytes.Contains(got, []byte("push")), "the wrapper saw the push")
	assert.False(t, bytes.Contains(got, []byte(password)), "the password is in no git's argv or environment")
	assert.True(t, bytes.Contains(got, []byte("credential.helper=!f()")), "the helper is on the command line, its secret is not")
}
