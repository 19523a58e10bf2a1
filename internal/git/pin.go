package git

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// pinned is a worktree's place with the repository fixed, and whether it
// is the repository's own working tree rather than a linked one.
type pinned struct {
	place
	main bool
}

// pin finds the git directory of the worktree of repo at path from the
// repository, never from the worktree: for a linked worktree, the entry
// of the repository's worktrees directory (<common dir>/worktrees/<id>)
// whose gitdir file names path/.git, as git worktree add wrote it; for
// the repository's own working tree, its git directory. Commands then run
// with --git-dir and --work-tree set to those, so what the worktree's
// user writes in path/.git, or as core.worktree in a gitdir of its own,
// redirects nothing. A path that is neither fails with jam.ErrNotFound.
func pin(ctx context.Context, repo, path string) (pinned, error) {
	args := []string{"rev-parse", "--path-format=absolute", "--git-common-dir"}
	common, err := Run(ctx, repo, args...)
	if err != nil {
		return pinned{}, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return pinned{}, failure([]string{"worktree"}, repo, jam.ErrNotFound, "'"+path+"' is not a working tree: it does not exist")
		}
		return pinned{}, err
	}
	want := filepath.Join(real, ".git")
	admin := filepath.Join(common, "worktrees")
	entries, err := os.ReadDir(admin)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return pinned{}, err
	}
	for _, e := range entries {
		dir := filepath.Join(admin, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "gitdir"))
		if err != nil {
			continue // not a worktree record (or one being written)
		}
		named := strings.TrimSpace(string(b))
		if !filepath.IsAbs(named) {
			named = filepath.Join(dir, named) // worktree.useRelativePaths
		}
		if filepath.Clean(named) == want {
			return pinned{place: place{dir: real, gitDir: dir, workTree: real}}, nil
		}
	}
	// The repository's own working tree: its top level and git directory
	// as the repository (not path) says.
	if top, err := Run(ctx, repo, "rev-parse", "--show-toplevel"); err == nil {
		if topReal, err := filepath.EvalSymlinks(top); err == nil && topReal == real {
			gitDir, err := Run(ctx, repo, "rev-parse", "--path-format=absolute", "--absolute-git-dir")
			if err != nil {
				return pinned{}, err
			}
			return pinned{place: place{dir: real, gitDir: gitDir, workTree: real}, main: true}, nil
		}
	}
	return pinned{}, failure([]string{"worktree"}, repo, jam.ErrNotFound, "'"+path+"' is not a working tree of the repository at "+repo)
}

// failure is an [*Error] jam finds itself, before or instead of git.
func failure(args []string, dir string, kind error, msg string) *Error {
	return &Error{Args: args, Dir: dir, ExitCode: -1, Stderr: msg, Kind: kind, Err: errors.New(msg)}
}
