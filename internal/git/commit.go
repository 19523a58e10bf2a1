package git

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// CommitTreeParams says which tree to commit onto a linked worktree's
// branch.
type CommitTreeParams struct {
	// Repo is the repository Path is a linked worktree of; Branch is the
	// branch the worktree has checked out.
	Repo, Path, Branch string
	// Tree is the tree to commit (a snapshot's), Message the commit
	// message (trailers included).
	Tree, Message string
	// At is the commit's author and committer date.
	At time.Time
}

// CommitTree commits p.Tree onto the worktree's branch: a commit whose
// parent is the branch's tip, the branch moved to it only if it still
// points at that tip (a branch moved meanwhile is jam.ErrConflict), and
// the worktree's index set to the new commit's tree, so that what it
// holds shows as committed and nothing else changes in the worktree's
// files. The author and committer are jam. It returns the new commit.
func CommitTree(ctx context.Context, p CommitTreeParams) (string, error) {
	if p.Repo == "" || p.Branch == "" || p.Tree == "" {
		return "", fmt.Errorf("%w: a commit of a tree needs a repository, a branch and a tree", jam.ErrInvalid)
	}
	pl, err := pin(ctx, p.Repo, p.Path)
	if err != nil {
		return "", err
	}
	ref := "refs/heads/" + p.Branch
	git := func(env []string, args ...string) (string, error) {
		ip := pl.place
		ip.env = append(append([]string{}, snapshotEnv...), env...)
		out, err := run(ctx, program, ip, append(append([]string{}, snapshotConfig...), args...)...)
		return strings.TrimSpace(out), err
	}
	head, err := git(nil, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		return "", err
	}
	if head != ref {
		return "", failure([]string{"commit-tree"}, p.Path, jam.ErrConflict, "the worktree has "+head+" checked out, not "+ref)
	}
	tip, err := git(nil, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", err
	}
	date := strconv.FormatInt(p.At.Unix(), 10) + " +0000"
	ident := []string{"GIT_AUTHOR_NAME=jam", "GIT_AUTHOR_EMAIL=jam@localhost", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=jam", "GIT_COMMITTER_EMAIL=jam@localhost", "GIT_COMMITTER_DATE=" + date}
	commit, err := git(ident, "commit-tree", p.Tree, "-p", tip, "-m", p.Message)
	if err != nil {
		return "", err
	}
	if _, err := git(nil, "update-ref", "-m", "jam: turn commit", ref, commit, tip); err != nil {
		return "", failure([]string{"update-ref"}, p.Repo, jam.ErrConflict, "branch "+p.Branch+" moved while its turn was committed: "+err.Error())
	}
	// The index follows the branch; the files are already the tree's.
	for _, args := range [][]string{{"read-tree", commit}, {"update-index", "-q", "--refresh"}} {
		if _, err := git(nil, args...); err != nil {
			return commit, err
		}
	}
	return commit, nil
}
