// Package gittest plants, in a repository and in a linked worktree of it,
// every piece of git configuration and every file that makes git run a
// program: hooks of every name, core.fsmonitor, clean, smudge and process
// filters named by .gitattributes, diff drivers (textconv and command),
// an external diff, a merge driver, the pager, the editor, the ssh
// command, credential helpers, askpass, the gpg program, the alternate
// refs command, configuration brought in by include.path and includeIf,
// and a worktree .git file rewritten to point at a gitdir of the
// worktree's own making (with core.worktree aimed at a decoy directory),
// and a submodule of the worktree's making whose own config names its own
// filter (.gitmodules asks for ignore = none, so git looks inside it).
// Filters with names git's -c option cannot carry (one holding "=", one
// empty) are among them. Each planted program creates a file named after itself in a marker
// directory outside the worktree, so a test can show that nothing ran.
//
// It exists for tests of jam's git calls, in this package and in the
// daemon's.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Hooks are the hook names git knows (githooks(5)), all planted.
var Hooks = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
	"post-index-change",
}

// Files are the tracked files PlantRepo commits and PlantWorktree
// changes: one per filter driver the attributes name.
var Files = []string{"a.txt", "b.dat", "c.inc", "d.cond", "e.eq", "f.none", "g.wt"}

// attributes names every planted driver; the worktree's copy is the same.
const attributes = "*.txt filter=evil diff=evil merge=evil\n" +
	"*.dat filter=proc diff=evil\n" +
	"*.inc filter=inc diff=inc\n" +
	"*.cond filter=cond\n" +
	"*.eq filter=e=vil\n" +
	"*.none filter=\n" +
	"*.wt filter=wt\n"

// mark is a shell command that creates marker name in dir.
func mark(dir, name string) string {
	return "touch '" + filepath.Join(dir, name) + "'"
}

// git runs the real git program, outside jam's package, with the
// person's settings plus the planted ones.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// hooks writes every hook into dir, each marking prefix-<name>.
func hooks(t testing.TB, dir, markers, prefix string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, h := range Hooks {
		script := "#!/bin/sh\n" + mark(markers, prefix+h) + "\nexit 0\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, h), []byte(script), 0o755))
	}
}

// programs is the configuration of scope, each naming a program that
// marks <scope>-<what>.
func programs(markers, scope string) string {
	m := func(what string) string { return mark(markers, scope+"-"+what) }
	return "[core]\n" +
		"\tfsmonitor = \"" + m("fsmonitor") + "; false\"\n" +
		"\tpager = \"" + m("pager") + "; cat\"\n" +
		"\teditor = \"" + m("editor") + "; true\"\n" +
		"\tsshCommand = \"" + m("sshcommand") + "; false\"\n" +
		"\taskPass = \"" + m("askpass") + "; false\"\n" +
		"\talternateRefsCommand = \"" + m("alternaterefs") + "; true\"\n" +
		"[sequence]\n\teditor = \"" + m("sequence-editor") + "; true\"\n" +
		"[credential]\n\thelper = \"!" + m("credential") + "; true\"\n" +
		"[credential \"https://example.com\"]\n\thelper = \"!" + m("credential-url") + "; true\"\n" +
		"[gpg]\n\tprogram = \"" + m("gpg") + "\"\n" +
		"[commit]\n\tgpgSign = true\n" +
		"[diff]\n\texternal = \"" + m("diff-external") + "; true\"\n" +
		"[filter \"evil\"]\n" +
		"\tclean = \"" + m("filter-clean") + "; cat\"\n" +
		"\tsmudge = \"" + m("filter-smudge") + "; cat\"\n" +
		"\trequired = true\n" +
		"[filter \"proc\"]\n\tprocess = \"" + m("filter-process") + "; false\"\n" +
		"[diff \"evil\"]\n" +
		"\ttextconv = \"" + m("textconv") + "; cat\"\n" +
		"\tcommand = \"" + m("diff-command") + "; true\"\n" +
		"[filter \"e=vil\"]\n" +
		"\tclean = \"" + m("filter-eq-clean") + "; cat\"\n" +
		"\tsmudge = \"" + m("filter-eq-smudge") + "; cat\"\n" +
		"[filter \"\"]\n" +
		"\tclean = \"" + m("filter-unnamed-clean") + "; cat\"\n" +
		"\tsmudge = \"" + m("filter-unnamed-smudge") + "; cat\"\n" +
		"[merge \"evil\"]\n\tdriver = \"" + m("merge-driver") + "; true\"\n" +
		"[uploadpack]\n\tpackObjectsHook = \"" + m("packobjects") + "\"\n"
}

// PlantRepo commits the attributes and one file per driver on the
// repository's current branch (with the person's plain git, before
// anything is planted), then plants hooks in .git/hooks and every program
// in .git/config, in a file it includes (include.path) and in files
// included conditionally (includeIf "gitdir:" and "onbranch:"), one of
// them only for linked worktrees and jam's branches. A worktree made from the branch
// afterwards checks the attributes out.
func PlantRepo(t testing.TB, repo, markers string) {
	t.Helper()
	write(t, repo, ".gitattributes", attributes)
	for _, f := range Files {
		write(t, repo, f, "committed "+f+"\n")
	}
	write(t, repo, ".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n\tignore = none\n")
	git(t, repo, "add", "--all")
	git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",sub")
	git(t, repo, "-c", "user.name=pat", "-c", "user.email=pat@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "attributes")

	gitDir := git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	hooks(t, filepath.Join(gitDir, "hooks"), markers, "repo-hook-")
	included := filepath.Join(gitDir, "jam-included.cfg")
	require.NoError(t, os.WriteFile(included, []byte(programs(markers, "included")+
		"[filter \"inc\"]\n\tclean = \""+mark(markers, "included-filter-inc-clean")+"; cat\"\n\tsmudge = \""+mark(markers, "included-filter-inc-smudge")+"; cat\"\n"+
		"[diff \"inc\"]\n\ttextconv = \""+mark(markers, "included-textconv-inc")+"; cat\"\n"), 0o644))
	conditional := filepath.Join(gitDir, "jam-conditional.cfg")
	require.NoError(t, os.WriteFile(conditional, []byte(programs(markers, "conditional")+
		"[filter \"cond\"]\n\tclean = \""+mark(markers, "conditional-filter-cond-clean")+"; cat\"\n\tsmudge = \""+mark(markers, "conditional-filter-cond-smudge")+"; cat\"\n"), 0o644))
	// Seen only from a linked worktree's git directory or its branch, not
	// from the repository's.
	linked := filepath.Join(gitDir, "jam-linked.cfg")
	require.NoError(t, os.WriteFile(linked, []byte(programs(markers, "linked")+
		"[filter \"wt\"]\n\tclean = \""+mark(markers, "linked-filter-wt-clean")+"; cat\"\n\tsmudge = \""+mark(markers, "linked-filter-wt-smudge")+"; cat\"\n"), 0o644))
	cfg, err := os.OpenFile(filepath.Join(gitDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = cfg.WriteString(programs(markers, "repo") +
		"[include]\n\tpath = " + included + "\n" +
		"[includeIf \"gitdir:" + gitDir + "/**\"]\n\tpath = " + conditional + "\n" +
		"[includeIf \"onbranch:**\"]\n\tpath = " + conditional + "\n" +
		"[includeIf \"gitdir:" + gitDir + "/worktrees/**\"]\n\tpath = " + linked + "\n" +
		"[includeIf \"onbranch:jam/**\"]\n\tpath = " + linked + "\n")
	require.NoError(t, err)
	require.NoError(t, cfg.Close())
}

// PlantWorktree does what an agent that can write its worktree can:
// changes every tracked file (so filters have work), writes the
// attributes again, makes a submodule repository at sub (the gitlink PlantRepo
// committed) with programs, a filter and hooks of its own, and rewrites the worktree's .git file to point at a
// gitdir of its own, .evil, whose config names every program (and aims
// core.worktree at a decoy directory) and whose hooks directory holds
// every hook. It returns the decoy directory.
func PlantWorktree(t testing.TB, wt, markers string) string {
	t.Helper()
	for _, f := range Files {
		write(t, wt, f, "changed "+f+"\n")
	}
	write(t, wt, ".gitattributes", attributes+"* filter=evil\n")
	write(t, wt, "new.txt", "untracked\n")

	// A submodule of the agent's making, with a filter of its own (a
	// name the superproject's configuration does not have) and a file
	// the filter would clean.
	sub := filepath.Join(wt, "sub")
	git(t, wt, "init", "-q", "sub")
	write(t, sub, "s.txt", "sub\n")
	write(t, sub, ".gitattributes", "* filter=subf\n")
	git(t, sub, "add", "--all")
	git(t, sub, "-c", "user.name=pat", "-c", "user.email=pat@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "sub")
	subCfg, err := os.OpenFile(filepath.Join(sub, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = subCfg.WriteString(programs(markers, "submodule") +
		"[filter \"subf\"]\n\tclean = \"" + mark(markers, "submodule-filter-clean") + "; cat\"\n\tsmudge = \"" + mark(markers, "submodule-filter-smudge") + "; cat\"\n")
	require.NoError(t, err)
	require.NoError(t, subCfg.Close())
	hooks(t, filepath.Join(sub, ".git", "hooks"), markers, "submodule-hook-")
	write(t, sub, "s.txt", "sub changed\n")
	write(t, sub, "untracked.txt", "x\n")

	evil := filepath.Join(wt, ".evil")
	decoy := filepath.Join(filepath.Dir(markers), filepath.Base(markers)+"-decoy")
	require.NoError(t, os.MkdirAll(decoy, 0o755))
	write(t, decoy, "decoy.txt", "decoy\n")
	write(t, evil, "HEAD", "ref: refs/heads/main\n")
	for _, d := range []string{"objects", "refs/heads", "refs/tags"} {
		require.NoError(t, os.MkdirAll(filepath.Join(evil, d), 0o755))
	}
	write(t, evil, "config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = "+decoy+"\n"+
		programs(markers, "worktree"))
	hooks(t, filepath.Join(evil, "hooks"), markers, "worktree-hook-")
	write(t, wt, ".git", "gitdir: "+evil+"\n")
	return decoy
}

// Fired lists the markers planted programs left, sorted; none means
// nothing ran.
func Fired(t testing.TB, markers string) []string {
	t.Helper()
	entries, err := os.ReadDir(markers)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func write(t testing.TB, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}
