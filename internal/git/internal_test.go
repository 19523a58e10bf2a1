package git

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestRun_gitMissing(t *testing.T) {
	t.Parallel()
	_, err := run(t.Context(), "jam-no-such-git-program", at(t.TempDir()), "status")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, err, jam.ErrUnavailable)
	require.Equal(t, "git status: the git program is not installed (or not on PATH); jam needs it for worktrees", err.Error())
	require.Equal(t, -1, e.ExitCode)
}

func TestEnviron(t *testing.T) {
	t.Parallel()
	got := environ([]string{
		"PATH=/usr/bin", "HOME=/home/pat", "GIT_DIR=/elsewhere/.git", "GIT_WORK_TREE=/elsewhere",
		"GIT_INDEX_FILE=/tmp/index", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.bare", "GIT_CONFIG_VALUE_0=true",
		"LC_ALL=de_DE.UTF-8", "LANG=de_DE.UTF-8", "GIT_TERMINAL_PROMPT=1", "GIT_AUTHOR_NAME=pat", "GITX=1",
		"GIT_SSH_COMMAND=touch /tmp/x", "GIT_ASKPASS=x", "SSH_ASKPASS=x", "GIT_EXTERNAL_DIFF=x", "GIT_PAGER=x", "GIT_EDITOR=x",
		"GIT_CONFIG_NOSYSTEM=0", "GIT_ATTR_SOURCE=HEAD", "GIT_ALLOW_PROTOCOL=ext",
	})
	require.Equal(t, []string{
		"PATH=/usr/bin", "HOME=/home/pat", "LANG=de_DE.UTF-8", "GIT_AUTHOR_NAME=pat", "GITX=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "LANGUAGE=",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1", "GIT_NO_LAZY_FETCH=1", "GIT_PROTOCOL_FROM_USER=0",
	}, got)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stderr string
		want         error
	}{
		{"not a repository", "fatal: not a git repository (or any of the parent directories): .git", jam.ErrInvalid},
		{"missing directory", "fatal: cannot change to '/x': No such file or directory", jam.ErrNotFound},
		{"bad ref", "fatal: invalid reference: nosuch", jam.ErrNotFound},
		{"no commits", "fatal: not a valid object name: 'HEAD'", jam.ErrNotFound},
		{"bad object", "fatal: invalid object name 'nosuch'.", jam.ErrNotFound},
		{"unknown revision", "fatal: ambiguous argument 'x': unknown revision or path not in the working tree.", jam.ErrNotFound},
		{"no branch", "error: branch 'x' not found.", jam.ErrNotFound},
		{"not a worktree", "fatal: '/x' is not a working tree", jam.ErrNotFound},
		{"branch exists", "fatal: a branch named 'main' already exists", jam.ErrAlreadyExists},
		{"path exists", "fatal: '/x' already exists", jam.ErrAlreadyExists},
		{"dirty", "fatal: '/x' contains modified or untracked files, use --force to delete it", jam.ErrConflict},
		{"index lock", "fatal: Unable to create '/x/.git/index.lock': File exists.", jam.ErrConflict},
		{"checked out", "fatal: 'main' is already checked out at '/x'", jam.ErrConflict},
		{"checked out, newer git", "fatal: 'main' is already used by worktree at '/x'", jam.ErrConflict},
		{"locked worktree", "fatal: cannot remove a locked working tree, lock reason: x\nuse 'remove -f -f' to override or unlock first", jam.ErrConflict},
		{"bad branch name", "fatal: 'a..b' is not a valid branch name", jam.ErrInvalid},
		{"unknown", "fatal: something new", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, classify(tc.stderr))
		})
	}
}

func TestSubcommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"status", "--porcelain"}, "status"},
		{[]string{"worktree", "add", "-b", "x", "p"}, "worktree add"},
		{[]string{"worktree", "--help"}, "worktree"},
		{[]string{"-c", "user.name=jam", "-c", "user.email=e", "commit", "-m", "x"}, "commit"},
		{[]string{"-c"}, "-c"},
	} {
		require.Equal(t, tc.want, subcommand(tc.args), "%q", tc.args)
	}
}

func TestRun_deadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 0)
	defer cancel()
	_, err := run(ctx, program, at(t.TempDir()), "status")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestDrivers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, names string
		want        [][2]string
	}{
		{"none", "", nil},
		{"no drivers", "core.bare\x00user.name\x00core.fsmonitor\x00diff.external\x00credential.helper\x00", nil},
		{"filter", "filter.lfs.clean\x00filter.lfs.smudge\x00filter.lfs.process\x00filter.lfs.required\x00",
			[][2]string{{"filter.lfs.clean", ""}, {"filter.lfs.smudge", ""}, {"filter.lfs.process", ""}, {"filter.lfs.required", "false"}}},
		{"subsection with dots, equals, quotes and blanks", "filter.a.b=c \"d\\.clean\x00",
			[][2]string{{"filter.a.b=c \"d\\.clean", ""}}},
		{"subsection case kept", "diff.Evil.textconv\x00diff.Evil.command\x00diff.evil.cachetextconv\x00",
			[][2]string{{"diff.Evil.textconv", ""}, {"diff.Evil.command", ""}}},
		{"merge, credential, gpg, hook", "merge.m.driver\x00merge.m.name\x00credential.https://x.example.helper\x00credential.https://x.example.username\x00gpg.ssh.program\x00hook.h.command\x00hook.h.event\x00",
			[][2]string{{"merge.m.driver", ""}, {"credential.https://x.example.helper", ""}, {"gpg.ssh.program", ""}, {"hook.h.command", ""}}},
		{"repeated once", "filter.x.clean\x00filter.x.clean\x00", [][2]string{{"filter.x.clean", ""}}},
		{"upper-case section and variable", "FILTER.x.CLEAN\x00", [][2]string{{"FILTER.x.CLEAN", ""}}},
		{"other sections with subsections", "remote.origin.url\x00branch.main.remote\x00includeif.gitdir:/x.path\x00", nil},
		{"no terminator", "filter.x.smudge", [][2]string{{"filter.x.smudge", ""}}},
		{"empty subsection", "filter..clean\x00", [][2]string{{"filter..clean", ""}}},
		{"malformed", "filter\x00filter.\x00.clean\x00\x00filter.clean\x00", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, drivers(tc.names))
		})
	}
}

// FuzzDrivers: every override names a variable of the input, once, with
// a section and variable of driverKeys and a subsection.
func FuzzDrivers(f *testing.F) {
	for _, s := range []string{"", "filter.lfs.clean\x00filter.lfs.required\x00", "diff.a.b.textconv\x00core.bare", "merge..driver\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, names string) {
		in := map[string]bool{}
		for _, n := range strings.Split(names, "\x00") {
			in[n] = true
		}
		seen := map[string]bool{}
		for _, o := range drivers(names) {
			require.True(t, in[o[0]], "%q is not among the names", o[0])
			require.False(t, seen[o[0]], "%q twice", o[0])
			seen[o[0]] = true
			section, rest, ok := strings.Cut(o[0], ".")
			require.True(t, ok)
			i := strings.LastIndexByte(rest, '.')
			require.GreaterOrEqual(t, i, 0, "a subsection, maybe empty")
			want, ok := driverKeys[strings.ToLower(section)][strings.ToLower(rest[i+1:])]
			require.True(t, ok)
			require.Equal(t, want, o[1])
		}
	})
}

// TestRunner_bufferedAndStreamed: both ways of running a command carry
// the place's environment and the driver overrides, and fail alike.
func TestRunner_bufferedAndStreamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := exe(t.Context(), program, at(dir), nil, "init", "--quiet", "--template=")
	require.NoError(t, err)
	_, err = exe(t.Context(), program, at(dir), nil, "config", "filter.evil.clean", "touch pwned")
	require.NoError(t, err)
	p := at(dir)
	p.env = []string{"GIT_AUTHOR_NAME=Placed", "GIT_AUTHOR_EMAIL=placed@example.com", "GIT_AUTHOR_DATE=@1 +0000"}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, bin string, p place, args ...string) (string, error)
	}{
		{"buffered", run},
		{"streamed", func(ctx context.Context, bin string, p place, args ...string) (string, error) {
			var out strings.Builder
			err := stream(ctx, bin, p, nil, &out, args...)
			return out.String(), err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := tc.run(t.Context(), program, p, "var", "GIT_AUTHOR_IDENT")
			require.NoError(t, err)
			require.Equal(t, "Placed <placed@example.com> 1 +0000\n", out, "the place's environment")
			out, err = tc.run(t.Context(), program, p, "config", "--get", "filter.evil.clean")
			require.NoError(t, err)
			require.Equal(t, "\n", out, "the driver is overridden to nothing")
			_, err = tc.run(t.Context(), "jam-no-such-git-program", p, "status")
			require.ErrorIs(t, err, jam.ErrUnavailable)
			_, err = tc.run(t.Context(), program, p, "rev-parse", "--verify", "no-such-ref")
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, 128, e.ExitCode)
			require.Equal(t, dir, e.Dir)
		})
	}
	t.Run("standard input", func(t *testing.T) {
		t.Parallel()
		var out strings.Builder
		require.NoError(t, stream(t.Context(), program, p, strings.NewReader("hello\n"), &out, "hash-object", "--stdin"))
		require.Equal(t, "ce013625030ba8dba906f756967f9e9ca394464a\n", out.String())
	})
}

func TestHeadSplitter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		in         []string // the writes
		head, tail string
		done       bool
	}{
		{"empty", nil, "", "", false},
		{"entries and patch", []string{":a\x00p\x001\t2\tp\x00\x00diff --git a/p b/p\n"}, ":a\x00p\x001\t2\tp\x00", "diff --git a/p b/p\n", true},
		{"separator across writes", []string{":a\x00p\x00", "\x00diff", " --git\x00\x00x"}, ":a\x00p\x00", "diff --git\x00\x00x", true},
		{"byte by byte", []string{"a", "\x00", "\x00", "b", "\x00", "\x00"}, "a\x00", "b\x00\x00", true},
		{"no separator", []string{"a\x00b\x00"}, "a\x00b\x00", "", false},
		{"separator first", []string{"\x00\x00x"}, "\x00", "x", true},
		{"nothing after", []string{"a\x00\x00"}, "a\x00", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var tail strings.Builder
			s := &headSplitter{w: &tail}
			for _, w := range tc.in {
				n, err := s.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n)
			}
			require.Equal(t, tc.head, s.head.String())
			require.Equal(t, tc.tail, tail.String())
			require.Equal(t, tc.done, s.done)
		})
	}
}

// FuzzHeadSplitter: however the output is cut into writes, the head is
// everything before the first two NULs in a row (the first of them kept),
// and the tail everything after them.
func FuzzHeadSplitter(f *testing.F) {
	f.Add([]byte(":a\x00p\x001\t2\tp\x00\x00diff"), uint8(3))
	f.Add([]byte("\x00\x00\x00"), uint8(1))
	f.Add([]byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		var tail strings.Builder
		s := &headSplitter{w: &tail}
		for rest := in; len(rest) > 0; {
			k := min(len(rest), int(step)+1)
			n, err := s.Write(rest[:k])
			require.NoError(t, err)
			require.Equal(t, k, n)
			rest = rest[k:]
		}
		i := strings.Index(string(in), "\x00\x00")
		if i < 0 {
			require.False(t, s.done)
			require.Equal(t, string(in), s.head.String())
			require.Empty(t, tail.String())
			return
		}
		require.True(t, s.done)
		require.Equal(t, string(in[:i+1]), s.head.String())
		require.Equal(t, string(in[i+2:]), tail.String())
	})
}
