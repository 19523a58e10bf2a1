// Package git is a small typed wrapper over the git command-line program,
// with the operations jam needs to keep a session's worktree: find a
// repository, add a linked worktree on a new or existing branch, remove
// and prune worktrees, delete a branch, list uncommitted changes, commit
// everything, and read HEAD. It is the one place jam runs git.
//
// jam runs the git CLI rather than a Go implementation because no Go
// implementation can create linked worktrees, and because the CLI is what
// the person's own tools use on the same repository.
//
// # Nothing the repository or the worktree names runs
//
// Invariant: no git call of jamd executes a program named by
// configuration or attributes: not by the repository's config, a
// worktree's, a file either includes (include.path, includeIf), the
// person's global config, or a .gitattributes; and no call reads a git
// directory or work tree other than the one jam recorded. A session's
// worktree is written by its agent, so this is what keeps the agent's
// files from running as jamd. It holds by three means.
//
// Pinned paths. [Status], [CommitAll] and [WorktreeRemove] take the
// repository and the worktree's path and find the worktree's git
// directory from the repository: the entry of <common dir>/worktrees
// whose gitdir file names <path>/.git (or the repository's own git
// directory for its main working tree), never the worktree's .git file.
// git then runs with --git-dir and --work-tree set to those, which beat
// a rewritten .git file and core.worktree. WorktreeRemove deletes the
// directory and that entry itself (os.RemoveAll does not follow links)
// instead of asking git worktree remove, which trusts the .git file.
// [WorktreeAdd] and [WorktreeAddBranch] add the worktree unchecked-out and
// then check it out pinned, because the configuration seen from a linked
// worktree (an includeIf on its git directory or its branch) differs
// from the repository's, and it is the worktree's that the checkout uses.
//
// Command-line configuration. Every call carries -c settings (the command
// scope, which beats every file) that switch off each variable naming a
// program: core.hooksPath=/dev/null (every hook, post-commit,
// post-checkout, reference-transaction and post-index-change included;
// commits also pass --no-verify), core.fsmonitor=false, core.pager=cat
// and --no-pager, core.editor and sequence.editor ":" (no editor),
// core.sshCommand, core.askPass, credential.helper, diff.external,
// core.alternateRefsCommand and uploadpack.packObjectsHook empty,
// commit.gpgSign and tag.gpgSign false, gc.auto=0 and maintenance.auto
// false (no background git), protocol.allow=never (no transport, so a
// partial clone's lazy fetch reaches no ssh or remote helper), and no
// recursion into submodules (submodule.recurse=false,
// diff.ignoreSubmodules=dirty, status --ignore-submodules=dirty), whose
// git directories live inside the worktree.
//
// Named drivers. A filter (filter.<name>.clean, smudge, process), diff
// driver (diff.<name>.command, textconv), merge driver
// (merge.<name>.driver), URL-scoped credential helper, gpg format program
// or configured hook (hook.<name>.command) has a name that attributes or
// URLs choose, unknown in advance. So each call first lists the names of
// the effective configuration (git config --list --name-only --includes,
// which runs nothing) and overrides every such variable found: commands
// to empty (git then skips a filter, and refuses rather than runs a diff
// driver) and filter.<name>.required to false. The overrides go in
// GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, command scope like -c, so a
// subsection name holding "=" cannot split them. Attributes themselves
// run nothing: they only name drivers, and every driver is overridden.
//
// The listing and the command are two processes: configuration written
// between them is not seen. Only the repository's own files can add a
// driver (the worktree's .git file is not read), so this matters only to
// a process that can write the repository's git directory, which can as
// well rewrite the hooks the person's own git runs. A consequence of the rule: filters the person relies on, such as
// Git LFS's, do not run in jam's worktrees either (they check out LFS
// pointer files).
//
// # Environment
//
// Every command is built by one function and runs under the caller's
// context, whether its output is held in memory or streamed (a patch,
// cat-file's objects), with its standard input closed (cat-file reads
// the ids it is given there), with the place's own variables (a
// snapshot's temporary index and identity) after the settings below, and
// with an environment that keeps the outcome independent of where the
// daemon was started: GIT_TERMINAL_PROMPT=0 (git never waits
// for a password), LC_ALL=C (its messages are in English, so they can be
// classified), GIT_OPTIONAL_LOCKS=0 (reading status does not take the
// index lock a running agent may want), GIT_CONFIG_NOSYSTEM=1 and
// GIT_ATTR_NOSYSTEM=1 (no system-wide config or attributes),
// GIT_NO_REPLACE_OBJECTS=1, GIT_NO_LAZY_FETCH=1 and
// GIT_PROTOCOL_FROM_USER=0, and none of the variables that point git at
// another repository, index, configuration or attribute source (GIT_DIR,
// GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS, GIT_ATTR_SOURCE
// and the like, which a daemon started from a git hook would inherit) or
// name a program (GIT_SSH, GIT_SSH_COMMAND, GIT_ASKPASS, SSH_ASKPASS,
// GIT_EDITOR, GIT_PAGER, GIT_EXTERNAL_DIFF, GIT_PROXY_COMMAND). Where jam
// commits, [CommitAll] names jam as the author and committer, so it works
// in a repository without a configured identity.
//
// # Errors
//
// A failed command returns an [*Error] carrying the arguments, the exit
// code and git's standard error, and wrapping one of jam's sentinel errors
// chosen from that text so callers and the control API can branch on it:
// jam.ErrInvalid when the directory is not a repository, jam.ErrNotFound
// for a missing directory, reference, branch or worktree (including HEAD
// of a repository without commits), jam.ErrAlreadyExists for a branch or
// path that exists, jam.ErrConflict for a locked index or a worktree with
// changes that git refuses to remove, and jam.ErrUnavailable when the git
// program is not installed. Any other failure carries no sentinel and is
// reported as an internal error.
package git
