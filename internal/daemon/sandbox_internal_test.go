package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// TestRuntimeConfig_sandboxKeys: the sandbox, network and read_only keys of
// a runtime request, valid and not.
func TestRuntimeConfig_sandboxKeys(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rt        wire.AgentRuntime
		sandbox   string
		noNetwork bool
		readOnly  []string
		invalid   bool
	}{
		"defaults":                {rt: wire.AgentRuntime{}},
		"bwrap":                   {rt: wire.AgentRuntime{Sandbox: "bwrap"}, sandbox: "bwrap"},
		"local":                   {rt: wire.AgentRuntime{Sandbox: "local"}, sandbox: "local"},
		"network on":              {rt: wire.AgentRuntime{Network: "on"}},
		"network off":             {rt: wire.AgentRuntime{Sandbox: "bwrap", Network: "off"}, sandbox: "bwrap", noNetwork: true},
		"read-only paths cleaned": {rt: wire.AgentRuntime{ReadOnly: []string{"/opt/tools/", "/srv//m"}}, readOnly: []string{"/opt/tools", "/srv/m"}},
		"unknown sandbox":         {rt: wire.AgentRuntime{Sandbox: "docker"}, invalid: true},
		"sandbox case":            {rt: wire.AgentRuntime{Sandbox: "Bwrap"}, invalid: true},
		"unknown network":         {rt: wire.AgentRuntime{Network: "no"}, invalid: true},
		"local cannot cut":        {rt: wire.AgentRuntime{Sandbox: "local", Network: "off"}, invalid: true},
		"relative read-only":      {rt: wire.AgentRuntime{ReadOnly: []string{"tools"}}, invalid: true},
		"root read-only":          {rt: wire.AgentRuntime{ReadOnly: []string{"/"}}, invalid: true},
		"root in disguise":        {rt: wire.AgentRuntime{ReadOnly: []string{"/usr/.."}}, invalid: true},
		"NUL in read-only":        {rt: wire.AgentRuntime{ReadOnly: []string{"/a\x00b"}}, invalid: true},
	} {
		tc.rt.Command = []string{"agent"}
		c, err := runtimeConfig(&tc.rt)
		if tc.invalid {
			require.ErrorIs(t, err, jam.ErrInvalid, name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, tc.sandbox, c.Sandbox, name)
		require.Equal(t, tc.noNetwork, c.NoNetwork, name)
		require.Equal(t, tc.readOnly, c.ReadOnly, name)
		// A read round-trips.
		back := wireRuntime(c)
		c2, err := runtimeConfig(&back)
		require.NoError(t, err, name)
		require.Equal(t, c.Sandbox, c2.Sandbox, name)
		require.Equal(t, c.NoNetwork, c2.NoNetwork, name)
		require.Equal(t, c.ReadOnly, c2.ReadOnly, name)
	}
}

func FuzzRuntimeConfigSandbox(f *testing.F) {
	f.Add("bwrap", "off", "/opt/tools")
	f.Add("local", "on", "")
	f.Add("x", "", "/")
	f.Fuzz(func(t *testing.T, sandbox, network, ro string) {
		rt := wire.AgentRuntime{Command: []string{"agent"}, Sandbox: sandbox, Network: network}
		if ro != "" {
			rt.ReadOnly = filepath.SplitList(ro)
		}
		c, err := runtimeConfig(&rt)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error is not invalid: %v", err)
			}
			return
		}
		if c.Sandbox != "" && c.Sandbox != "bwrap" && c.Sandbox != "local" {
			t.Fatalf("sandbox %q accepted", c.Sandbox)
		}
		if c.NoNetwork && c.Sandbox == "local" {
			t.Fatal("local without network accepted")
		}
		for _, p := range c.ReadOnly {
			if !filepath.IsAbs(p) || p == "/" || strings.ContainsRune(p, 0) {
				t.Fatalf("read-only path %q accepted", p)
			}
		}
	})
}

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
