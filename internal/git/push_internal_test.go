package git

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestParseRemote(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in   string
		want remote
		ok   bool
	}{
		"https":         {"https://github.com/o/r.git", remote{arg: "https://github.com/o/r.git", protocol: "https", host: "github.com"}, true},
		"https port":    {"https://ghe.example:8443/o/r", remote{arg: "https://ghe.example:8443/o/r", protocol: "https", host: "ghe.example:8443"}, true},
		"http loopback": {"http://127.0.0.1:9/r.git", remote{arg: "http://127.0.0.1:9/r.git", protocol: "http", host: "127.0.0.1:9"}, true},
		"http v6":       {"http://[::1]:9/r.git", remote{arg: "http://[::1]:9/r.git", protocol: "http", host: "[::1]:9"}, true},
		"http local":    {"http://localhost/r.git", remote{arg: "http://localhost/r.git", protocol: "http", host: "localhost"}, true},
		"ssh url":       {"ssh://git@github.com/o/r.git", remote{arg: "ssh://git@github.com/o/r.git", protocol: "ssh", host: "github.com"}, true},
		"scp-like":      {"git@github.com:o/r.git", remote{arg: "git@github.com:o/r.git", protocol: "ssh", host: "github.com"}, true},
		"path":          {"/srv/repos/r git/", remote{arg: "/srv/repos/r git", protocol: "file"}, true},
		"file url":      {"file:///srv/r.git", remote{arg: "file:///srv/r.git", protocol: "file"}, true},
		"empty":         {"", remote{}, false},
		"option":        {"-oProxyCommand=x", remote{}, false},
		"newline":       {"/srv/r\n.git", remote{}, false},
		"name":          {"origin", remote{}, false},
		"relative":      {"../r.git", remote{}, false},
		"password":      {"https://u:p@github.com/r", remote{}, false},
		"user https":    {"https://u@github.com/r", remote{}, false},
		"plain http":    {"http://github.com/r", remote{}, false},
		"ext":           {"ext::ssh -o x", remote{}, false},
		"helper":        {"persistent-https::github.com/r", remote{}, false},
		"fd":            {"fd::3", remote{}, false},
		"git protocol":  {"git://github.com/r", remote{}, false},
		"query":         {"https://github.com/r?a=b", remote{}, false},
		"fragment":      {"https://github.com/r#x", remote{}, false},
		"blank url":     {"https://github.com/r r", remote{}, false},
		"file host":     {"file://host/srv/r", remote{}, false},
		"option host":   {"ssh://-oProxyCommand=x/r", remote{}, false},
		"scp option":    {"-x:r", remote{}, false},
		"scp no host":   {"@:r", remote{}, false},
		"scp no path":   {"host:", remote{}, false},
		"quote host":    {"https://a'b.example/r", remote{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := parseRemote(tc.in)
			if !tc.ok {
				require.ErrorIs(t, err, jam.ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzParseRemote(f *testing.F) {
	for _, s := range []string{"https://github.com/o/r.git", "git@h:o/r", "/srv/r", "file:///x", "http://[::1]:1/r", "ext::x", "https://u:p@h/r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRemote(s)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("%q: %v is not ErrInvalid", s, err)
			}
			return
		}
		// git takes "<transport>::<address>" for a remote helper.
		i := strings.IndexFunc(r.arg, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.')
		})
		if strings.HasPrefix(r.arg, "-") || (i >= 0 && strings.HasPrefix(r.arg[i:], "::")) {
			t.Fatalf("%q accepted as %+v", s, r)
		}
		switch r.protocol {
		case "https", "http":
			// What the helper quotes must not break out of its quotes.
			if !hostChars.MatchString(r.host) || strings.Contains(r.host, "'") {
				t.Fatalf("%q: host %q", s, r.host)
			}
		case "ssh", "file":
		default:
			t.Fatalf("%q: protocol %q", s, r.protocol)
		}
	})
}

func TestClassifyRemote(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		stderr string
		kind   error
	}{
		"https refused":    {"fatal: Authentication failed for 'https://github.com/o/r.git/'", ErrAuth},
		"no username":      {"fatal: could not read Username for 'https://github.com': terminal prompts disabled", ErrAuth},
		"ssh key":          {"git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.", ErrAuth},
		"forbidden":        {"fatal: unable to access 'https://h/r/': The requested URL returned error: 403", ErrAuth},
		"dns":              {"fatal: unable to access 'https://nope/r/': Could not resolve host: nope", jam.ErrUnavailable},
		"refused":          {"fatal: unable to access 'http://127.0.0.1:1/r/': Failed to connect to 127.0.0.1 port 1: Connection refused", jam.ErrUnavailable},
		"missing path":     {"fatal: '/x' does not appear to be a git repository\nfatal: Could not read from remote repository.", jam.ErrUnavailable},
		"missing repo":     {"remote: Repository not found.\nfatal: repository 'https://github.com/o/x/' not found", jam.ErrUnavailable},
		"server error":     {"fatal: unable to access 'https://h/r/': The requested URL returned error: 502", jam.ErrUnavailable},
		"rejected":         {"error: failed to push some refs\n ! [rejected] x -> b (non-fast-forward)", jam.ErrConflict},
		"remote rejected":  {" ! [remote rejected] x -> b (protected branch hook declined)", jam.ErrConflict},
		"unknown failures": {"fatal: something else", nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := &Error{Args: []string{"push"}, ExitCode: 128, Stderr: tc.stderr, Err: errors.New("exit status 128")}
			err := classifyRemote(e, nil)
			if tc.kind == nil {
				assert.Nil(t, e.Kind)
				return
			}
			require.ErrorIs(t, err, tc.kind)
		})
	}
	require.ErrorIs(t, ErrAuth, jam.ErrUnauthenticated)

	e := &Error{Args: []string{"push"}, ExitCode: 128, Stderr: "remote: echo pa$$word and pa%24%24word", Err: errors.New("exit status 128")}
	err := classifyRemote(e, &Credential{Username: "u", Password: "pa$$word"})
	assert.NotContains(t, err.Error(), "pa$$word")
	assert.NotContains(t, err.Error(), "pa%24%24word")
}

func TestPushStatus(t *testing.T) {
	t.Parallel()
	out := "To /srv/r.git\n*\tabc:refs/heads/b\t[new branch]\n!\tdef:refs/heads/c\t[rejected] (stale info)\nDone\n"
	flag, summary, ok := pushStatus(out, "refs/heads/b")
	assert.True(t, ok)
	assert.Equal(t, byte('*'), flag)
	assert.Equal(t, "[new branch]", summary)
	flag, summary, ok = pushStatus(out, "refs/heads/c")
	assert.True(t, ok)
	assert.Equal(t, byte('!'), flag)
	assert.Equal(t, "[rejected] (stale info)", summary)
	_, _, ok = pushStatus(out, "refs/heads/d")
	assert.False(t, ok)
	_, _, ok = pushStatus("", "refs/heads/b")
	assert.False(t, ok)
}

func FuzzPushStatus(f *testing.F) {
	f.Add("To x\n*\tabc:refs/heads/b\t[new branch]\nDone\n", "refs/heads/b")
	f.Add("=\ta:refs/heads/b\t[up to date]", "refs/heads/b")
	f.Fuzz(func(t *testing.T, out, ref string) {
		flag, _, ok := pushStatus(out, ref)
		if ok && (!strings.Contains(out, ":"+ref+"\t") || !strings.Contains(out, string([]byte{flag})+"\t")) {
			t.Fatalf("flag %q not in %q", flag, out)
		}
	})
}

func TestParseLsRemote(t *testing.T) {
	t.Parallel()
	id1, id2 := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for name, tc := range map[string]struct {
		out, want string
		ok        bool
	}{
		"found":     {id1 + "\trefs/heads/b\n", id1, true},
		"tail":      {id2 + "\trefs/heads/x/refs/heads/b\n" + id1 + "\trefs/heads/b\n", id1, true},
		"absent":    {"", "", true},
		"other":     {id2 + "\trefs/heads/x/refs/heads/b\n", "", true},
		"malformed": {"nonsense\n", "", false},
		"short id":  {"abc\trefs/heads/b\n", "", false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseLsRemote(tc.out, "refs/heads/b")
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzParseLsRemote(f *testing.F) {
	f.Add(strings.Repeat("a", 40)+"\trefs/heads/b\n", "refs/heads/b")
	f.Add("x\ty\n", "y")
	f.Fuzz(func(t *testing.T, out, ref string) {
		id, err := ParseLsRemote(out, ref)
		if err == nil && id != "" && (!validSHA(id) || !strings.Contains(out, id+"\t"+ref)) {
			t.Fatalf("%q from %q", id, out)
		}
	})
}

// TestRemoteCommand_noSecret: the command a push with a credential runs
// carries the password in neither its arguments nor its environment;
// only the pipe on descriptor 3 holds it.
func TestRemoteCommand_noSecret(t *testing.T) {
	t.Parallel()
	const pw = "pipe-only-canary"
	r, err := parseRemote("https://example.com/o/r.git")
	require.NoError(t, err)
	fd, err := credentialPipe(&Credential{Username: "u", Password: pw})
	require.NoError(t, err)
	defer fd.Close()
	p := place{dir: t.TempDir(), extra: []*os.File{fd}}
	cmd := command(t.Context(), program, p, nil, append(transportConfig(r, true), "push", r.arg, "x:refs/heads/y"))
	assert.NotContains(t, strings.Join(cmd.Args, "\x00"), pw)
	assert.NotContains(t, strings.Join(cmd.Env, "\x00"), pw)
	assert.Equal(t, []*os.File{fd}, cmd.ExtraFiles)
	assert.Contains(t, cmd.Env, "GIT_TERMINAL_PROMPT=0")
	for _, v := range cmd.Env {
		assert.False(t, strings.HasPrefix(v, "GIT_ASKPASS=") || strings.HasPrefix(v, "SSH_ASKPASS="), v)
	}
	b := make([]byte, 128)
	n, err := fd.Read(b)
	require.NoError(t, err)
	assert.Equal(t, "username=u\npassword="+pw+"\n", string(b[:n]))
}

func TestCappedBuffer(t *testing.T) {
	t.Parallel()
	b := cappedBuffer{max: 8}
	for _, s := range []string{"ab", "cdef", "ghij", "kl"} {
		n, err := b.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	assert.Equal(t, "abcd\n[... 4 bytes dropped ...]\nijkl", b.String())
	small := cappedBuffer{max: 8}
	small.Write([]byte("abc"))
	assert.Equal(t, "abc", small.String())
}
