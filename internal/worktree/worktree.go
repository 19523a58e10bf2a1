// Package worktree keeps a session's working directory: it creates it (a
// linked git worktree of the session's repository on the session's own
// branch, jam/<session id>, or a plain directory when there is no
// repository), lists its uncommitted changes, and archives, removes and
// restores it. It knows nothing of turns: the caller (the session manager)
// holds the session so that no turn runs while an operation is under way,
// and records the worktree's state.
//
// Invariants:
//   - A worktree is owned by its id; its path is only where it is now.
//     Creating or restoring one that is already on disk (a crash before it
//     was recorded) reuses it.
//   - Archive loses nothing but ignored files: it commits every
//     uncommitted change, tracked or not, to the worktree's branch before
//     it removes the directory, and keeps the branch, so Restore checks the
//     same work out again. A plain directory has no branch to keep and
//     cannot be archived (jam.ErrInvalid).
//   - RestoreFrom restores from a checkpoint: the checkpoint's files on
//     the branch at the checkpoint's base, never the repository's HEAD.
//   - Remove deletes the directory and the branch, and refuses
//     (jam.ErrConflict) while there are uncommitted changes unless forced.
//   - Every git call goes through internal/git, hardened: nothing the
//     repository or the worktree names runs, and only the git directory
//     and work tree jam recorded are read.
package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	gitcli "github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// New prepares a session's working directory under root: a git
// worktree of the session's repository (its override, else the
// template's) on its own branch (jam/<session id>), or an empty directory
// when neither names one. It is owned by its id; the path is only where it
// is now.
func New(ctx context.Context, root string, id jam.WorktreeID, t store.Template, s store.Session, at time.Time) (store.Worktree, error) {
	return NewAt(ctx, root, id, t, s, at, "")
}

// NewAt is New with the session's branch started at commit (a full object
// name of the session's repository) instead of the repository's HEAD;
// commit "" is New. A session without a repository cannot start at a
// commit (jam.ErrInvalid).
func NewAt(ctx context.Context, root string, id jam.WorktreeID, t store.Template, s store.Session, at time.Time, commit string) (store.Worktree, error) {
	w := store.Worktree{ID: id, WorkspaceID: s.WorkspaceID, SessionID: s.ID, State: store.WorktreeActive, CreatedAt: at, UpdatedAt: at}
	w.Path = filepath.Join(root, string(s.ID))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return store.Worktree{}, err
	}
	repo := s.Overrides.Apply(t.Desired).Repo
	if repo == "" && commit != "" {
		return store.Worktree{}, fmt.Errorf("%w: session %s has no repository to check commit %s out of", jam.ErrInvalid, s.ID, commit)
	}
	if repo == "" {
		if err := os.MkdirAll(w.Path, 0o755); err != nil {
			return store.Worktree{}, err
		}
		return w, nil
	}
	w.Repo, w.Branch = repo, "jam/"+string(s.ID)
	if _, err := os.Stat(filepath.Join(w.Path, ".git")); err == nil {
		return w, nil // created before a crash kept us from recording it
	}
	if err := gitcli.WorktreeAddBranchAt(ctx, w.Repo, w.Path, w.Branch, commit); err != nil {
		return store.Worktree{}, err
	}
	return w, nil
}

// Changes lists a worktree's uncommitted changes (lines like those of git
// status --porcelain, paths unquoted; for a plain directory, its
// entries). None when the directory is gone.
func Changes(ctx context.Context, w store.Worktree) ([]string, error) {
	if _, err := os.Stat(w.Path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if w.Repo == "" {
		entries, err := os.ReadDir(w.Path)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range entries {
			out = append(out, "?? "+e.Name())
		}
		return out, nil
	}
	changes, err := gitcli.Status(ctx, w.Repo, w.Path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range changes {
		out = append(out, c.String())
	}
	return out, nil
}

// Archive commits the worktree's uncommitted changes to its branch
// (so nothing is lost), then removes its directory; the branch stays.
// Ignored files go with the directory.
func Archive(ctx context.Context, w store.Worktree) error {
	if w.Repo == "" {
		return fmt.Errorf("%w: the worktree of %s is a plain directory without a repository; there is no branch to keep (remove it instead)", jam.ErrInvalid, w.SessionID)
	}
	changes, err := Changes(ctx, w)
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		if _, err := gitcli.CommitAll(ctx, w.Repo, w.Path, "jam: uncommitted work of session "+string(w.SessionID)+" at archive"); err != nil {
			return err
		}
	}
	return dropCheckout(ctx, w, true)
}

// dropCheckout removes a worktree's directory with git worktree remove
// (forced: the caller has checked or saved the changes) and prunes the
// repository's worktree records.
func dropCheckout(ctx context.Context, w store.Worktree, force bool) error {
	if _, err := os.Stat(w.Path); err == nil {
		if err := gitcli.WorktreeRemove(ctx, w.Repo, w.Path, force); err != nil {
			return err
		}
	}
	return gitcli.WorktreePrune(ctx, w.Repo)
}

// Remove deletes the worktree's directory and its branch. With
// uncommitted changes it refuses (jam.ErrConflict) unless force.
func Remove(ctx context.Context, w store.Worktree, force bool) error {
	changes, err := Changes(ctx, w)
	if err != nil {
		return err
	}
	if len(changes) > 0 && !force {
		return fmt.Errorf("%w: the worktree of %s has %d uncommitted change(s) (%s); archive it to keep them, or remove with --force to discard them",
			jam.ErrConflict, w.SessionID, len(changes), summary(changes))
	}
	if w.Repo == "" {
		return os.RemoveAll(w.Path)
	}
	if err := dropCheckout(ctx, w, force); err != nil {
		return err
	}
	if w.Branch == "" {
		return nil
	}
	exists, err := gitcli.BranchExists(ctx, w.Repo, w.Branch)
	if err != nil || !exists {
		return err
	}
	return gitcli.BranchDelete(ctx, w.Repo, w.Branch)
}

// Restore checks the worktree out again: its kept branch after an
// archive, or a new branch from the repository's HEAD after a removal.
func Restore(ctx context.Context, w store.Worktree) error {
	if w.Repo == "" {
		return os.MkdirAll(w.Path, 0o755)
	}
	if _, err := os.Stat(filepath.Join(w.Path, ".git")); err == nil {
		return nil // restored before a crash kept us from recording it
	}
	if err := gitcli.WorktreePrune(ctx, w.Repo); err != nil {
		return err
	}
	exists, err := gitcli.BranchExists(ctx, w.Repo, w.Branch)
	if err != nil {
		return err
	}
	if exists {
		return gitcli.WorktreeAdd(ctx, w.Repo, w.Path, w.Branch)
	}
	return gitcli.WorktreeAddBranch(ctx, w.Repo, w.Path, w.Branch)
}

// RestoreFrom makes a removed (or archived) worktree again from checkpoint
// c: its files are the checkpoint's, byte for byte, on its branch at the
// checkpoint's base commit (created there when it was deleted), never
// reset to the repository's current HEAD. A branch that points elsewhere
// (an archive's commit) is left as it is and the restore refused
// (jam.ErrConflict). A directory still on disk is refused
// (jam.ErrAlreadyExists): a checkpoint replaces nothing.
func RestoreFrom(ctx context.Context, w store.Worktree, c store.Checkpoint) error {
	if c.SessionID != w.SessionID {
		return fmt.Errorf("%w: checkpoint %s is of session %s, not %s", jam.ErrInvalid, c.ID, c.SessionID, w.SessionID)
	}
	if w.Repo != "" {
		if err := gitcli.WorktreePrune(ctx, w.Repo); err != nil {
			return err
		}
	}
	return gitcli.RestoreSnapshot(ctx, gitcli.RestoreParams{Repo: w.Repo, GitDir: c.GitDir, Path: w.Path, Branch: w.Branch, Commit: c.Commit, Base: c.BaseCommit})
}

// summary shows the first few changes.
func summary(changes []string) string {
	const show = 3
	s := strings.Join(changes[:min(show, len(changes))], ", ")
	if len(changes) > show {
		s += ", …"
	}
	return s
}
