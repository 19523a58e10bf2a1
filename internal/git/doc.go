// Package git is a small typed wrapper over the git command-line program,
// with the operations jam needs to keep a session's worktree: find a
// repository, add a linked worktree on a new or existing branch, remove
// and prune worktrees, delete a branch, list uncommitted changes, commit
// everything, and read HEAD.
//
// jam runs the git CLI rather than a Go implementation because no Go
// implementation can create linked worktrees, and because the CLI is what
// the person's own tools use on the same repository.
//
// Every command runs under the caller's context, with its standard input
// closed and with an environment that keeps the outcome independent of
// where the daemon was started: GIT_TERMINAL_PROMPT=0 (git never waits
// for a password), LC_ALL=C (its messages are in English, so they can be
// classified), GIT_OPTIONAL_LOCKS=0 (reading status does not take the
// index lock a running agent may want), and none of the variables that
// point git at another repository (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE
// and the like, which a daemon started from a git hook would inherit).
// The person's own git configuration still applies, except where jam
// commits: [CommitAll] names jam as the author and committer and skips
// signing and commit hooks, so it works in a repository without a
// configured identity and never prompts for a key.
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
