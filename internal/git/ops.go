package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// TopLevel returns the top directory of the working tree that contains
// dir. Outside a repository it fails with jam.ErrInvalid.
func TopLevel(ctx context.Context, dir string) (string, error) {
	return Run(ctx, dir, "rev-parse", "--show-toplevel")
}

// IsRepository says whether dir is inside a git working tree. A directory
// that does not exist is an error (jam.ErrNotFound), not a "no".
func IsRepository(ctx context.Context, dir string) (bool, error) {
	_, err := TopLevel(ctx, dir)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jam.ErrInvalid):
		return false, nil
	default:
		return false, err
	}
}

// Head returns the commit id HEAD points at (a branch's tip, or the
// commit of a detached HEAD). A repository without commits fails with
// jam.ErrNotFound.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := Run(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	var e *Error
	if errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "" {
		// --quiet makes git say nothing about a HEAD that names no commit.
		e.Kind, e.Stderr = jam.ErrNotFound, "HEAD names no commit: the repository has no commits yet"
	}
	return out, err
}

// BranchExists says whether the local branch exists in the repository at
// dir.
func BranchExists(ctx context.Context, dir, branch string) (bool, error) {
	_, err := Run(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	var e *Error
	if errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "" {
		return false, nil
	}
	return err == nil, err
}

// BranchDelete deletes a local branch, merged or not (git branch -D). A
// branch that does not exist fails with jam.ErrNotFound.
func BranchDelete(ctx context.Context, dir, branch string) error {
	_, err := Run(ctx, dir, "branch", "-D", "--", branch)
	return err
}

// WorktreeAddBranch checks out a new linked worktree of the repository at
// repo at path, on a new branch started from the repository's HEAD. A
// repository without commits fails with jam.ErrNotFound; an existing
// branch or a path that exists and is not empty, with jam.ErrAlreadyExists.
func WorktreeAddBranch(ctx context.Context, repo, path, branch string) error {
	return WorktreeAddBranchAt(ctx, repo, path, branch, "")
}

// WorktreeAddBranchAt is WorktreeAddBranch with the new branch at commit
// (a full object name) instead of HEAD; commit "" is HEAD.
func WorktreeAddBranchAt(ctx context.Context, repo, path, branch, commit string) error {
	args := []string{"-b", branch, "--", path}
	if commit != "" {
		args = append(args, commit)
	}
	return worktreeAdd(ctx, repo, path, branch, args...)
}

// WorktreeAdd checks out an existing branch as a new linked worktree at
// path. A branch that does not exist fails with jam.ErrNotFound, and one
// checked out in another worktree with jam.ErrConflict.
func WorktreeAdd(ctx context.Context, repo, path, branch string) error {
	return worktreeAdd(ctx, repo, path, "", "--", path, branch)
}

// worktreeAdd adds the worktree without checking it out, then checks it
// out pinned: the configuration seen from the new worktree (an includeIf
// on its git directory or its branch) is not the repository's, so its
// drivers are listed from there. A checkout that fails takes the
// worktree away again, and newBranch when it names the branch just made,
// so that none is left half made.
func worktreeAdd(ctx context.Context, repo, path, newBranch string, args ...string) error {
	if _, err := Run(ctx, repo, append([]string{"worktree", "add", "--quiet", "--no-checkout"}, args...)...); err != nil {
		return err
	}
	p, err := pin(ctx, repo, path)
	if err == nil {
		_, err = run(ctx, program, p.place, "reset", "--hard", "--quiet", "--no-recurse-submodules")
	}
	if err != nil {
		ctx := context.WithoutCancel(ctx)
		if rmErr := WorktreeRemove(ctx, repo, path, true); rmErr != nil {
			return errors.Join(err, rmErr)
		}
		if newBranch != "" {
			if rmErr := BranchDelete(ctx, repo, newBranch); rmErr != nil {
				return errors.Join(err, rmErr)
			}
		}
	}
	return err
}

// WorktreeRemove removes the linked worktree of repo at path: its
// directory and the repository's record of it (as git worktree remove
// does, but without asking git to validate the worktree's .git file,
// which its user may have rewritten). Without force it refuses a
// worktree with changes (jam.ErrConflict); with force the changes are
// lost. A path that is no linked worktree of repo fails with
// jam.ErrNotFound, the repository's own working tree with jam.ErrInvalid.
func WorktreeRemove(ctx context.Context, repo, path string, force bool) error {
	p, err := pin(ctx, repo, path)
	if err != nil {
		return err
	}
	if p.main {
		return failure([]string{"worktree", "remove"}, repo, jam.ErrInvalid, "'"+path+"' is the main working tree of the repository; jam removes only linked worktrees")
	}
	if !force {
		changes, err := status(ctx, p.place)
		if err != nil {
			return err
		}
		if len(changes) > 0 {
			return failure([]string{"worktree", "remove"}, repo, jam.ErrConflict, "'"+path+"' contains modified or untracked files, use --force to delete it")
		}
	}
	// os.RemoveAll does not follow symbolic links, so a link the
	// worktree's user planted is removed, not its target.
	if err := os.RemoveAll(p.workTree); err != nil {
		return err
	}
	return os.RemoveAll(p.gitDir)
}

// WorktreePrune forgets the worktrees whose directories are gone.
func WorktreePrune(ctx context.Context, repo string) error {
	_, err := Run(ctx, repo, "worktree", "prune")
	return err
}

// Change is one entry of git status: a changed, added, deleted or
// untracked path.
type Change struct {
	// XY is git's two-letter status: index then working tree, "??" for an
	// untracked path.
	XY string
	// Path is relative to the top of the working tree, unquoted.
	Path string
	// From is the source of a rename or copy, empty otherwise.
	From string
}

// String reads like a line of git status --porcelain, without its
// quoting: "?? my notes.md", or "R  old.go -> new.go" for a rename.
func (c Change) String() string {
	if c.From != "" {
		return c.XY + " " + c.From + " -> " + c.Path
	}
	return c.XY + " " + c.Path
}

// Status lists the uncommitted changes of the worktree of repo at path
// (a linked worktree, or the repository's own working tree), untracked
// files one by one (not their directories), ignored files not at all,
// submodules by their commits only. None means the tree is clean. The
// worktree is pinned: see [pin].
func Status(ctx context.Context, repo, path string) ([]Change, error) {
	p, err := pin(ctx, repo, path)
	if err != nil {
		return nil, err
	}
	return status(ctx, p.place)
}

func status(ctx context.Context, p place) ([]Change, error) {
	// Not Run: trimming would eat a path's leading or trailing blanks.
	out, err := run(ctx, program, p, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty")
	if err != nil {
		return nil, err
	}
	return ParseStatus(out)
}

// ParseStatus decodes git status --porcelain=v1 -z output: entries "XY
// PATH" separated by NUL, where a rename or copy (R or C in either column)
// is followed by one more NUL-terminated field, its source path.
func ParseStatus(out string) ([]Change, error) {
	var changes []Change
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" {
			if i == len(fields)-1 {
				break // the terminator of the last entry
			}
			return nil, fmt.Errorf("git status: empty entry %d", i)
		}
		if len(f) < 4 || f[2] != ' ' {
			return nil, fmt.Errorf("git status: malformed entry %q", f)
		}
		c := Change{XY: f[:2], Path: f[3:]}
		if strings.ContainsAny(c.XY, "RC") {
			i++
			if i >= len(fields) || fields[i] == "" {
				return nil, fmt.Errorf("git status: rename of %q without its source", c.Path)
			}
			c.From = fields[i]
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// identity makes jam's commits work in a repository without a configured
// identity, and keeps the person's signing setup out of them.
var identity = []string{"-c", "user.name=jam", "-c", "user.email=jam@localhost", "-c", "commit.gpgsign=false"}

// CommitAll stages every change in the worktree of repo at path (git add
// --all: new, changed and deleted files; ignored files stay out) and
// commits them with message, as jam, without running hooks. It returns
// the new commit id. With nothing to commit it fails (git's own message,
// no sentinel); callers check Status first. The worktree is pinned: see
// [pin].
func CommitAll(ctx context.Context, repo, path, message string) (string, error) {
	p, err := pin(ctx, repo, path)
	if err != nil {
		return "", err
	}
	if _, err := run(ctx, program, p.place, "add", "--all"); err != nil {
		return "", err
	}
	args := append(append([]string{}, identity...), "commit", "--no-verify", "--quiet", "-m", message)
	if _, err := run(ctx, program, p.place, args...); err != nil {
		return "", err
	}
	out, err := run(ctx, program, p.place, "rev-parse", "--verify", "HEAD^{commit}")
	return strings.TrimSpace(out), err
}

// DeleteRef deletes a ref (refs/...) of the git directory at dir; one
// that does not exist is no error.
func DeleteRef(ctx context.Context, dir, ref string) error {
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("%w: ref %q is not under refs/", jam.ErrInvalid, ref)
	}
	_, err := Run(ctx, dir, "update-ref", "-d", ref)
	return err
}
