package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/executor/bwrap"
	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// An owned agent's process runs under an executor (internal/executor):
// bwrap, the default where bubblewrap works, shows it only the system
// directories, its worktrees, the git directories they need, its own home
// and temporary directory and the paths its command names, and nothing
// else of jam's data directory (no daemon.key, api.token, control socket,
// hub, other agents' worktrees); local, the fallback and an explicit
// opt-out, runs it with jamd's own view of the files. Under both, its
// environment is an allowlist (agentconf.AgentEnv) and its home is its own:
//
//	<data>/agents/<template or session>/home, …/tmp
//	<data>/worktrees/<template>/<session>  (worktrees made since sandboxes)
//
// A shared process (placement shared) serves every room of its agent, so
// it sees the template's whole worktree directory; a dedicated one sees its
// session's worktree only.

// agentDir holds the agents' homes and temporary directories.
const agentDir = "agents"

// defaultSandbox is the executor of agents that name none: bwrap where it
// works here, else local, said once, at start, in one warning line.
func defaultSandbox(log *slog.Logger) string { return pickSandbox(bwrap.Probe, log) }

// pickSandbox is defaultSandbox with its probe.
func pickSandbox(probe func() error, log *slog.Logger) string {
	if err := probe(); err != nil {
		log.Warn("owned agents run unsandboxed (sandbox=local): install bubblewrap (bwrap) to confine them", "err", err)
		return executor.Local
	}
	return executor.Bwrap
}

// executorFor is the executor a configuration names ("" is def).
func executorFor(name, def string) (executor.Executor, error) {
	if name == "" {
		name = def
	}
	switch name {
	case executor.Local:
		return local.New(), nil
	case executor.Bwrap:
		if err := bwrap.Probe(); err != nil {
			return nil, fmt.Errorf("sandbox bwrap: %w", err)
		}
		return bwrap.New()
	}
	_, err := executor.ParseName(name)
	return nil, err
}

// agentSpec is where an agent's process runs and what it may touch, built
// anew for each launch from the store's worktrees.
type agentSpec struct {
	home, tmp string
	writable  []string
	readOnly  []string
}

// agentArea prepares the home and temporary directory of the process cfg
// launches and lists the paths it needs: its worktrees (for a shared
// process the template's whole worktree directory, and any worktree of its
// sessions made before that layout), the git directories those worktrees
// and the configured repository use, and, read-only, the template's extra
// paths and the absolute paths its command names. Nothing inside the data
// directory is given except these.
func (m *messaging) agentArea(ctx context.Context, cfg store.TemplateConfig) (agentSpec, error) {
	if cfg.Template == "" {
		return agentSpec{}, fmt.Errorf("%w: launch without a template", jam.ErrInvalid)
	}
	data := m.d.cfg.DataDir
	owner := string(cfg.Template)
	if cfg.Session != "" {
		owner = string(cfg.Session)
	}
	base := filepath.Join(data, agentDir, owner)
	sp := agentSpec{home: filepath.Join(base, "home"), tmp: filepath.Join(base, "tmp")}
	for _, d := range []string{sp.home, sp.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return sp, err
		}
	}
	sp.writable = []string{sp.home, sp.tmp}

	ws := m.d.workspace.ID
	var trees []store.Worktree
	if cfg.Session != "" {
		w, err := m.d.store.WorktreeForSession(ctx, ws, cfg.Session)
		if err != nil {
			return sp, fmt.Errorf("worktree of session %s: %w", cfg.Session, err)
		}
		trees = append(trees, w)
	} else {
		dir := filepath.Join(data, worktreeDir, string(cfg.Template))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return sp, err
		}
		sp.writable = append(sp.writable, dir)
		ss, err := m.d.store.SessionList(ctx, ws)
		if err != nil {
			return sp, err
		}
		for _, s := range ss {
			if s.TemplateID != cfg.Template {
				continue
			}
			w, err := m.d.store.WorktreeForSession(ctx, ws, s.ID)
			if errors.Is(err, jam.ErrNotFound) {
				continue
			}
			if err != nil {
				return sp, err
			}
			trees = append(trees, w)
		}
	}
	seen := map[string]bool{}
	addWritable := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			sp.writable = append(sp.writable, p)
		}
	}
	// A repository's git directory is writable (the agent commits: objects,
	// refs, its worktree's own entry), but not what makes git run programs
	// for whoever uses the repository next, the person included: its config
	// and its hooks stay read-only. The directory comes from the repository
	// jam recorded, never from the worktree's .git file, which the agent
	// can rewrite to name any directory it would like mounted.
	addGitDir := func(g string) error {
		if g == "" || seen[g] {
			return nil
		}
		addWritable(g)
		hooks := filepath.Join(g, "hooks")
		if err := os.MkdirAll(hooks, 0o755); err != nil { // so none can be made inside
			return err
		}
		sp.readOnly = append(sp.readOnly, filepath.Join(g, "config"), hooks)
		return nil
	}
	for _, w := range trees {
		if fi, err := os.Stat(w.Path); err != nil || !fi.IsDir() {
			continue // archived or removed: nothing to show
		}
		addWritable(w.Path)
		if w.Repo != "" {
			if err := addGitDir(repoGitDir(w.Repo)); err != nil {
				return sp, err
			}
		}
	}
	if cfg.Repo != "" {
		if err := addGitDir(repoGitDir(cfg.Repo)); err != nil {
			return sp, err
		}
	}

	for _, p := range cfg.ReadOnly {
		if overlaps(p, data) {
			return sp, fmt.Errorf("%w: read-only path %s is in (or holds) jam's data directory", jam.ErrInvalid, p)
		}
		sp.readOnly = append(sp.readOnly, p)
	}
	// A script or tool the command names by an absolute path is readable;
	// one in (or holding) the data directory is not given.
	for _, a := range cfg.Command {
		if !filepath.IsAbs(a) || overlaps(a, data) {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			sp.readOnly = append(sp.readOnly, filepath.Clean(a))
		}
	}
	return sp, nil
}

// overlaps reports whether p is inside dir or holds it, as written and
// with symlinks resolved (as far as the path exists).
func overlaps(p, dir string) bool {
	in := func(a, b string) bool {
		return a == b || b == "/" || strings.HasPrefix(a, b+string(filepath.Separator))
	}
	check := func(a, b string) bool { return in(a, b) || in(b, a) }
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return check(p, dir) || check(resolve(p), resolve(dir))
}

// resolve resolves the symlinks of the longest existing prefix of p.
func resolve(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// worktreeGitDirs are the git directories a linked worktree uses: its own
// (named by its .git file) and the repository's common one. A worktree
// whose .git is a directory (or missing) needs nothing more.
func worktreeGitDirs(path string) []string {
	b, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return nil // a directory, or none
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(path, gitdir)
	}
	return []string{commonDir(gitdir)}
}

// commonDir is the common git directory of gitdir (itself, unless it has
// a commondir file).
func commonDir(gitdir string) string {
	b, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return filepath.Clean(gitdir)
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitdir, c)
	}
	return filepath.Clean(c)
}

// repoGitDir is the common git directory of a repository: its .git
// directory, the common directory a .git file leads to, or the repository
// itself when it is bare. "" when it is none of these.
func repoGitDir(repo string) string {
	dotgit := filepath.Join(repo, ".git")
	fi, err := os.Stat(dotgit)
	switch {
	case err == nil && fi.IsDir():
		return commonDir(dotgit)
	case err == nil:
		if g := worktreeGitDirs(repo); len(g) > 0 {
			return g[0]
		}
		return ""
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(filepath.Join(repo, "HEAD")); err == nil {
			return filepath.Clean(repo)
		}
	}
	return ""
}
