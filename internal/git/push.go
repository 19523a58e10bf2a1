package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/jamhq/jam/internal/jam"
)

// Pushing. [Push] and [RemoteBranch] are the package's only calls that
// reach a network, and each reaches only the one remote it is given:
// transports stay off (protocol.allow=never) except the one the remote's
// URL names (https; http only to a loopback host, so a password never
// crosses a network in the clear; ssh; file for a local path), and no
// remote name or configured URL is used. Nothing of the local repository
// runs (its hooks, pre-push included, and drivers are off as for every
// call) and nothing of a local remote either: receive-pack and
// upload-pack run there with its hooks, automatic gc and checkout on push
// (receive.denyCurrentBranch=updateInstead) switched off. What git could
// ask a person for is refused instead: GIT_TERMINAL_PROMPT=0, no askpass
// program, credential.interactive=never, ssh with BatchMode=yes.
//
// The credential. A [Credential] never appears in a command line, an
// environment or a file. jam writes "username=...\npassword=...\n" into a
// pipe before git starts and passes its read end to git as descriptor 3;
// the only credential helper git runs (the configured ones are emptied)
// is a shell function that, asked to "get" for the remote's own protocol
// and host, copies descriptor 3 to its output, and does nothing for any
// other request, so a URL rewritten by configuration (url.*.insteadOf) or
// a redirect to another host gets no password. The pipe can be read once:
// git asks once a process, and a rejected credential is an
// authentication failure, not a second try. Whatever git writes to its
// standard error is kept bounded and has the password removed before it
// becomes an error, should a server echo it.
//
// Failures are classified: a credential refused, or none where one is
// needed, is [ErrAuth] (jam.ErrUnauthenticated); a host that cannot be
// reached or a repository that is not there, jam.ErrUnavailable; a push
// refused (the branch is elsewhere, or the remote declined it),
// jam.ErrConflict.

// ErrAuth marks a remote that refused the credential, or asked for one
// jam did not have. It is jam.ErrUnauthenticated.
var ErrAuth = fmt.Errorf("git: authentication failed: %w", jam.ErrUnauthenticated)

// Credential is a username and password (a token) for an https remote.
// It never reaches git's command line, environment or logs.
type Credential struct{ Username, Password string }

// String hides the password, so a Credential printed by mistake leaks
// nothing.
func (c Credential) String() string { return "git.Credential{" + c.Username + ", [redacted]}" }

// GoString is String, for %#v.
func (c Credential) GoString() string { return c.String() }

// PushParams says what to push where.
type PushParams struct {
	// GitDir is the git directory holding Commit.
	GitDir string
	// Remote is an https URL, an ssh URL or scp-like address
	// (user@host:path), or a local path (absolute) or file:// URL. A URL
	// holding a user's password, a query or a fragment is jam.ErrInvalid.
	Remote string
	// Commit is pushed to refs/heads/Branch.
	Commit string
	Branch string
	// Credential is for https; nil for none.
	Credential *Credential
	// Expect is "" to create the branch only (a branch at another commit
	// is refused), or the remote's current commit of the branch to move it
	// from (force-with-lease). A branch already at Commit is success.
	Expect string
}

// PushResult is what the remote's branch is after a push.
type PushResult struct {
	// RemoteSHA is the branch's commit on the remote: Commit after a
	// success; after a refusal (jam.ErrConflict), the commit the branch is
	// at when that could be read, "" for absent or unknown.
	RemoteSHA string
	// Created says the push made the branch; AlreadyThere, that it was at
	// Commit already and nothing was sent.
	Created, AlreadyThere bool
}

// remote is a parsed, checked remote.
type remote struct {
	arg      string // what git is given
	protocol string // git's transport: https, http, ssh or file
	host     string // host[:port] as git's credential request names it; "" for file
}

// parseRemote checks a remote and finds its transport.
func parseRemote(s string) (remote, error) {
	bad := func(why string) (remote, error) {
		return remote{}, fmt.Errorf("%w: remote %s: %s", jam.ErrInvalid, redactURL(s), why)
	}
	if s == "" || strings.HasPrefix(s, "-") || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return bad("empty, starting with '-' or holding a control character")
	}
	if filepath.IsAbs(s) {
		return remote{arg: filepath.Clean(s), protocol: "file"}, nil
	}
	if strings.ContainsAny(s, " \u00a0") {
		return bad("a URL holds no blank (escape it as %20)")
	}
	if i := strings.Index(s, "://"); i > 0 {
		u, err := url.Parse(s)
		if err != nil {
			return bad("not a URL")
		}
		if _, has := u.User.Password(); has {
			return bad("a password belongs in the credential, never in the URL")
		}
		if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return bad("a query or fragment has no place in a git remote")
		}
		host := u.Hostname()
		if u.Scheme != "file" && (host == "" || strings.HasPrefix(host, "-") || !hostChars.MatchString(u.Host)) {
			return bad("no host, or one with characters no host name has")
		}
		switch u.Scheme {
		case "https":
			if u.User != nil {
				return bad("the user name belongs in the credential")
			}
			return remote{arg: s, protocol: "https", host: u.Host}, nil
		case "http":
			if u.User != nil {
				return bad("the user name belongs in the credential")
			}
			if !loopback(host) {
				return bad("http is allowed only to a loopback host: a credential would cross the network in the clear; use https")
			}
			return remote{arg: s, protocol: "http", host: u.Host}, nil
		case "ssh":
			return remote{arg: s, protocol: "ssh", host: u.Host}, nil
		case "file":
			if u.Host != "" || !filepath.IsAbs(u.Path) {
				return bad("a file URL names an absolute local path")
			}
			return remote{arg: s, protocol: "file"}, nil
		default:
			return bad("the scheme " + u.Scheme + " is not one of https, ssh, file")
		}
	}
	// scp-like: [user@]host:path, where host has no '/' (git's rule), and
	// no "::" (that is a remote helper's address).
	if strings.Contains(s, "::") {
		return bad("remote helper addresses are not allowed")
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || strings.Contains(s[:colon], "/") || colon == len(s)-1 {
		return bad("not an https or ssh URL, a user@host:path address or an absolute path (a remote's name is resolved by the caller)")
	}
	host := s[:colon]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if host == "" || strings.HasPrefix(host, "-") {
		return bad("no host")
	}
	return remote{arg: s, protocol: "ssh", host: host}, nil
}

// hostChars are the characters of a host name, an IP address (v6 in
// brackets) and a port: nothing a shell quote could break on.
var hostChars = regexp.MustCompile(`^[A-Za-z0-9.:\[\]-]+$`)

// loopback says whether host names this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL drops the user information of a URL for messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return s
}

// hardenedPack is a local remote's receive-pack or upload-pack, run with
// nothing of that repository's that starts a program.
func hardenedPack(name string) string {
	return "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.alternateRefsCommand= " +
		"-c receive.autogc=false -c gc.auto=0 -c maintenance.auto=false -c receive.denyCurrentBranch=refuse " +
		"-c uploadpack.packObjectsHook= " + name
}

// transportConfig is the configuration of a call that reaches r: its one
// transport allowed, no prompt, no credential helper but jam's (when
// helper), bounded stalls.
func transportConfig(r remote, helper bool) []string {
	cfg := []string{
		"-c", "protocol.allow=never", "-c", "protocol." + r.protocol + ".allow=always",
		"-c", "credential.interactive=never", "-c", "core.askPass=",
		"-c", "credential.helper=",
		"-c", "core.sshCommand=ssh -o BatchMode=yes -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4",
		"-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60",
	}
	if helper {
		cfg = append(cfg, "-c", "credential.helper="+credentialHelper(r))
	}
	return cfg
}

// credentialHelper is the shell function of the package note: on "get"
// for r's protocol and host, it writes what descriptor 3 holds. The
// protocol and host are checked to hold no quote, so they sit in single
// quotes safely.
func credentialHelper(r remote) string {
	return `!f() { test "$1" = get || return 0; p= h=; ` +
		`while IFS= read -r l && test -n "$l"; do case "$l" in protocol=*) p=${l#protocol=};; host=*) h=${l#host=};; esac; done; ` +
		`test "$p" = '` + r.protocol + `' && test "$h" = '` + r.host + `' && cat <&3; return 0; }; f`
}

// credentialPipe returns the read end of a pipe holding c in git's
// credential format, its write end already closed.
func credentialPipe(c *Credential) (*os.File, error) {
	if c.Username == "" || c.Password == "" {
		return nil, fmt.Errorf("%w: a credential needs a username and a password", jam.ErrInvalid)
	}
	if strings.ContainsAny(c.Username, "\x00\r\n") || strings.ContainsAny(c.Password, "\x00\r\n") {
		return nil, fmt.Errorf("%w: a credential's username and password are one line each", jam.ErrInvalid)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// A few hundred bytes: the pipe's buffer holds them, so nothing waits
	// for git to read.
	_, err = w.WriteString("username=" + c.Username + "\npassword=" + c.Password + "\n")
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// maxRemoteOutput bounds what a push or ls-remote may write to its
// standard output (a few lines each).
const maxRemoteOutput = 1 << 20

// limitedBuffer holds up to max bytes and fails a write beyond.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("git wrote over %d bytes of output", b.max)
	}
	return b.Buffer.Write(p)
}

// remoteCall runs one git command that reaches r from the git directory
// gitDir, the credential (if any) on descriptor 3, and returns its
// standard output (bounded) even when it failed. A failure is classified
// and holds no password.
func remoteCall(ctx context.Context, gitDir string, r remote, cred *Credential, args ...string) (string, error) {
	if cred != nil && r.protocol != "https" && r.protocol != "http" {
		return "", fmt.Errorf("%w: a credential is sent only over https, not to a %s remote", jam.ErrInvalid, r.protocol)
	}
	pl, err := gitDirPlace(gitDir)
	if err != nil {
		return "", err
	}
	pl.env = append(pl.env, "SSH_ASKPASS_REQUIRE=never", "GCM_INTERACTIVE=never")
	if cred != nil {
		fd, err := credentialPipe(cred)
		if err != nil {
			return "", err
		}
		defer fd.Close()
		pl.extra = []*os.File{fd}
	}
	out := &limitedBuffer{max: maxRemoteOutput}
	all := append(transportConfig(r, cred != nil), args...)
	err = stream(ctx, program, pl, nil, out, all...)
	if err != nil {
		err = classifyRemote(err, cred)
	}
	return out.String(), err
}

// remoteKinds map fragments of git's messages about a remote (lower-cased)
// to the kinds of the package note, the first match winning.
var remoteKinds = []struct {
	fragment string
	kind     error
}{
	{"authentication failed", ErrAuth},
	{"could not read username", ErrAuth},
	{"could not read password", ErrAuth},
	{"invalid username or password", ErrAuth},
	{"permission denied (publickey", ErrAuth},
	{"permission denied, please try again", ErrAuth},
	{"returned error: 401", ErrAuth},
	{"returned error: 403", ErrAuth},
	{"[rejected]", jam.ErrConflict},
	{"[remote rejected]", jam.ErrConflict},
	{"stale info", jam.ErrConflict},
	{"non-fast-forward", jam.ErrConflict},
	{"fetch first", jam.ErrConflict},
	{"could not resolve host", jam.ErrUnavailable},
	{"could not resolve hostname", jam.ErrUnavailable},
	{"failed to connect", jam.ErrUnavailable},
	{"couldn't connect", jam.ErrUnavailable},
	{"connection refused", jam.ErrUnavailable},
	{"connection timed out", jam.ErrUnavailable},
	{"operation timed out", jam.ErrUnavailable},
	{"connection reset", jam.ErrUnavailable},
	{"network is unreachable", jam.ErrUnavailable},
	{"no route to host", jam.ErrUnavailable},
	{"empty reply from server", jam.ErrUnavailable},
	{"host key verification failed", jam.ErrUnavailable},
	{"does not appear to be a git repository", jam.ErrUnavailable},
	{"could not read from remote repository", jam.ErrUnavailable},
	{"remote end hung up", jam.ErrUnavailable},
	{"not found", jam.ErrUnavailable},
	{"returned error: 5", jam.ErrUnavailable},
	{"unable to access", jam.ErrUnavailable},
	{"ssl", jam.ErrUnavailable},
}

// classifyRemote sets the kind of a remote call's failure and removes
// the password from its text.
func classifyRemote(err error, cred *Credential) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	if cred != nil && cred.Password != "" {
		e.Stderr = strings.ReplaceAll(e.Stderr, cred.Password, "[redacted]")
		if esc := url.QueryEscape(cred.Password); esc != cred.Password {
			e.Stderr = strings.ReplaceAll(e.Stderr, esc, "[redacted]")
		}
	}
	if e.ExitCode < 0 {
		return e
	}
	s := strings.ToLower(e.Stderr)
	for _, k := range remoteKinds {
		if strings.Contains(s, k.fragment) {
			e.Kind = k.kind
			return e
		}
	}
	return e
}

// checkBranch checks that refs/heads/branch is a valid ref name.
func checkBranch(ctx context.Context, branch string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("%w: %q is not a valid branch name", jam.ErrInvalid, branch)
	}
	if _, err := exe(ctx, program, at(os.TempDir()), nil, "check-ref-format", "refs/heads/"+branch); err != nil {
		var e *Error
		if errors.As(err, &e) && e.ExitCode == 1 {
			return fmt.Errorf("%w: %q is not a valid branch name", jam.ErrInvalid, branch)
		}
		return err
	}
	return nil
}

// validSHA says whether s is a full lower-case object id.
func validSHA(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}

// Push pushes p.Commit to refs/heads/p.Branch of p.Remote with
// force-with-lease semantics (see [PushParams.Expect]): one git push,
// atomic on the remote's side, so two pushers never both win. A branch
// already at Commit is success with AlreadyThere. A branch elsewhere than
// Expect (or present, when Expect is "") is jam.ErrConflict, with
// RemoteSHA the branch's commit as the remote then says. The other
// failures are those of the package note on pushing.
func Push(ctx context.Context, p PushParams) (PushResult, error) {
	r, err := parseRemote(p.Remote)
	if err != nil {
		return PushResult{}, err
	}
	if err := checkBranch(ctx, p.Branch); err != nil {
		return PushResult{}, err
	}
	if p.Expect != "" && !validSHA(p.Expect) {
		return PushResult{}, fmt.Errorf("%w: expected commit %q is not a full object id", jam.ErrInvalid, p.Expect)
	}
	pl, err := gitDirPlace(p.GitDir)
	if err != nil {
		return PushResult{}, err
	}
	commit, err := resolveAt(ctx, pl, p.Commit)
	if err != nil {
		return PushResult{}, fmt.Errorf("push: commit: %w", err)
	}
	ref := "refs/heads/" + p.Branch
	args := []string{"-c", "push.gpgSign=false", "-c", "push.followTags=false", "-c", "push.recurseSubmodules=no",
		"-c", "push.useForceIfIncludes=false", "-c", "push.pushOption=", "-c", "push.negotiate=false",
		"push", "--porcelain", "--no-verify", "--no-progress", "--no-signed", "--no-follow-tags",
		"--recurse-submodules=no", "--force-with-lease=" + ref + ":" + p.Expect}
	if r.protocol == "file" {
		args = append(args, "--receive-pack="+hardenedPack("receive-pack"))
	}
	args = append(args, "--end-of-options", r.arg, commit+":"+ref)
	out, err := remoteCall(ctx, p.GitDir, r, p.Credential, args...)
	flag, summary, found := pushStatus(out, ref)
	switch {
	case found && flag == '=':
		return PushResult{RemoteSHA: commit, AlreadyThere: true}, nil
	case found && err == nil && (flag == '*' || flag == ' ' || flag == '+'):
		return PushResult{RemoteSHA: commit, Created: flag == '*'}, nil
	case found && flag == '!':
		res := PushResult{}
		// The branch's commit now, for the caller's evidence; a failure
		// to read it leaves it unknown.
		if sha, rerr := RemoteBranch(ctx, p.GitDir, p.Remote, p.Branch, p.Credential); rerr == nil {
			if sha == commit {
				// Another pusher put it there between the two reads.
				return PushResult{RemoteSHA: commit, AlreadyThere: true}, nil
			}
			res.RemoteSHA = sha
		}
		want := "absent"
		if p.Expect != "" {
			want = "at " + p.Expect
		}
		got := res.RemoteSHA
		if got == "" {
			got = "absent or unknown"
		}
		return res, fmt.Errorf("push %s to %s: refused %s: the branch was to be %s and is %s: %w",
			commit, p.Branch, summary, want, got, jam.ErrConflict)
	case err != nil:
		return PushResult{}, fmt.Errorf("push to %s: %w", redactURL(p.Remote), err)
	default:
		return PushResult{}, fmt.Errorf("push to %s: git reported nothing of %s", redactURL(p.Remote), ref)
	}
}

// pushStatus finds ref's line in git push --porcelain output ("FLAG TAB
// FROM:TO TAB SUMMARY") and returns its flag and summary.
func pushStatus(out, ref string) (flag byte, summary string, found bool) {
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || len(parts[0]) != 1 {
			continue
		}
		_, to, ok := strings.Cut(parts[1], ":")
		if ok && to == ref {
			return parts[0][0], parts[2], true
		}
	}
	return 0, "", false
}

// RemoteBranch returns the remote's commit of refs/heads/branch, "" and
// no error when the remote has no such branch (git ls-remote). Failures
// are those of the package note on pushing.
func RemoteBranch(ctx context.Context, gitDir, remoteURL, branch string, cred *Credential) (string, error) {
	r, err := parseRemote(remoteURL)
	if err != nil {
		return "", err
	}
	if err := checkBranch(ctx, branch); err != nil {
		return "", err
	}
	ref := "refs/heads/" + branch
	args := []string{"ls-remote", "--refs"}
	if r.protocol == "file" {
		args = append(args, "--upload-pack="+hardenedPack("upload-pack"))
	}
	args = append(args, "--end-of-options", r.arg, ref)
	out, err := remoteCall(ctx, gitDir, r, cred, args...)
	if err != nil {
		return "", fmt.Errorf("ls-remote %s: %w", redactURL(remoteURL), err)
	}
	return ParseLsRemote(out, ref)
}

// ParseLsRemote finds ref in git ls-remote output ("ID TAB REF" lines;
// git matches patterns by their tail, so other refs may be listed) and
// returns its id, "" when it is not listed.
func ParseLsRemote(out, ref string) (string, error) {
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		id, name, ok := strings.Cut(line, "\t")
		if !ok || !validSHA(id) || name == "" {
			return "", fmt.Errorf("git ls-remote: malformed line %q", line)
		}
		if name == ref {
			return id, nil
		}
	}
	return "", nil
}
