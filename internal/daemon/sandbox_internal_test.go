package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

// TestOverlaps: a path in the data directory, or holding it, is never
// given to a sandbox.
func TestOverlaps(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(data, link))
	for p, want := range map[string]bool{
		data:                              true,
		filepath.Join(data, "daemon.key"): true,
		filepath.Dir(data):                true,
		"/":                               true,
		link:                              true,
		filepath.Join(link, "jamd.sock"):  true,
		data + "-other":                   false,
		"/usr/bin/env":                    false,
	} {
		require.Equal(t, want, overlaps(p, data), p)
	}
}

// TestWorktreeGitDirs: a linked worktree needs its repository's common git
// directory; a plain directory needs none.
func TestWorktreeGitDirs(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	common := filepath.Join(repo, ".git")
	gitdir := filepath.Join(common, "worktrees", "w1")
	require.NoError(t, os.MkdirAll(gitdir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644))
	tree := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tree, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644))
	require.Equal(t, []string{common}, worktreeGitDirs(tree))
	require.Nil(t, worktreeGitDirs(t.TempDir()))
	require.Equal(t, common, repoGitDir(repo))
	require.Equal(t, "", repoGitDir(t.TempDir()))
}

// TestPickSandbox: bwrap where the probe succeeds, silently; else local,
// with one warning line that says what to install.
func TestPickSandbox(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	require.Equal(t, "bwrap", pickSandbox(func() error { return nil }, log))
	require.Empty(t, buf.String())
	require.Equal(t, "local", pickSandbox(func() error { return fmt.Errorf("%w: bubblewrap (bwrap) is not installed", jam.ErrUnavailable) }, log))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, "one line")
	require.Contains(t, lines[0], "level=WARN")
	require.Contains(t, lines[0], "install bubblewrap")
}
