package session

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

// NewWorktree prepares a session's working directory under root: a git
// worktree of the session's repository (its override, else the
// template's) on its own branch (jam/<session id>), or an empty directory
// when neither names one. It is owned by its id; the path is only where it
// is now.
func NewWorktree(ctx context.Context, root string, id jam.WorktreeID, t store.Template, s store.Session, at time.Time) (store.Worktree, error) {
	w := store.Worktree{ID: id, WorkspaceID: s.WorkspaceID, SessionID: s.ID, State: store.WorktreeActive, CreatedAt: at, UpdatedAt: at}
	w.Path = filepath.Join(root, string(s.ID))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return store.Worktree{}, err
	}
	repo := s.Overrides.Apply(t.Desired).Repo
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
	if err := gitcli.WorktreeAddBranch(ctx, w.Repo, w.Path, w.Branch); err != nil {
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

// archiveWorktree commits the worktree's uncommitted changes to its branch
// (so nothing is lost), then removes its directory; the branch stays.
// Ignored files go with the directory.
func archiveWorktree(ctx context.Context, w store.Worktree) error {
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

// removeWorktree deletes the worktree's directory and its branch. With
// uncommitted changes it refuses (jam.ErrConflict) unless force.
func removeWorktree(ctx context.Context, w store.Worktree, force bool) error {
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

// restoreWorktree checks the worktree out again: its kept branch after an
// archive, or a new branch from the repository's HEAD after a removal.
func restoreWorktree(ctx context.Context, w store.Worktree) error {
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

// summary shows the first few changes.
func summary(changes []string) string {
	const show = 3
	s := strings.Join(changes[:min(show, len(changes))], ", ")
	if len(changes) > show {
		s += ", …"
	}
	return s
}

// ArchiveWorktree archives a session's worktree: its uncommitted changes
// are committed to its branch, its directory is removed, the branch stays,
// and the worktree is recorded archived. The session's turns wait (they
// stay queued) until RestoreWorktree. Refused with jam.ErrConflict while
// a turn of the session runs, or when the worktree is not active.
func (m *Manager) ArchiveWorktree(ctx context.Context, session jam.SessionID) (store.Worktree, error) {
	return m.worktreeOp(ctx, session, store.WorktreeActive, store.WorktreeArchived, archiveWorktree)
}

// RemoveWorktree deletes a session's worktree: its directory (git worktree
// remove, then prune) and its branch, and records it removed. It refuses
// with jam.ErrConflict while a turn of the session runs, or when the
// worktree has uncommitted changes unless force. An archived worktree's
// branch is deleted the same way. The session's turns wait until
// RestoreWorktree gives it a new one.
func (m *Manager) RemoveWorktree(ctx context.Context, session jam.SessionID, force bool) (store.Worktree, error) {
	w, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, session)
	if err != nil {
		return store.Worktree{}, err
	}
	from := store.WorktreeActive
	if w.State == store.WorktreeArchived {
		from = store.WorktreeArchived
	}
	return m.worktreeOp(ctx, session, from, store.WorktreeRemoved, func(ctx context.Context, w store.Worktree) error {
		return removeWorktree(ctx, w, force)
	})
}

// RestoreWorktree makes an archived or removed worktree active again: the
// archived branch is checked out at the same path, or a removed one is
// made anew from the repository's HEAD. The session's waiting turns run.
func (m *Manager) RestoreWorktree(ctx context.Context, session jam.SessionID) (store.Worktree, error) {
	w, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, session)
	if err != nil {
		return store.Worktree{}, err
	}
	if w.State == store.WorktreeActive {
		return store.Worktree{}, fmt.Errorf("%w: the worktree of %s is active", jam.ErrConflict, session)
	}
	return m.worktreeOp(ctx, session, w.State, store.WorktreeActive, restoreWorktree)
}

// worktreeOp holds the session (no turn runs meanwhile), checks the
// worktree is in from, runs op, and records to.
func (m *Manager) worktreeOp(ctx context.Context, session jam.SessionID, from, to string, op func(context.Context, store.Worktree) error) (store.Worktree, error) {
	if !m.hold(session, holdWorktree) {
		return store.Worktree{}, fmt.Errorf("%w: session %s is busy: a turn is running or another worktree operation is under way (cancel the turn with jam turn cancel, or wait)", jam.ErrConflict, session)
	}
	defer func() {
		m.release(session)
		m.wakeSession(session)
	}()
	w, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, session)
	if err != nil {
		return store.Worktree{}, err
	}
	if w.State != from {
		return store.Worktree{}, fmt.Errorf("%w: the worktree of %s is %s", jam.ErrConflict, session, w.State)
	}
	if err := op(ctx, w); err != nil {
		return store.Worktree{}, fmt.Errorf("worktree of %s: %w", session, err)
	}
	w, err = m.cfg.Store.WorktreeSetState(context.WithoutCancel(ctx), store.WorktreeSetStateParams{WorkspaceID: m.cfg.Workspace, ID: w.ID, From: from, To: to, At: m.cfg.Now()})
	if err != nil {
		return store.Worktree{}, err
	}
	m.log.Info("worktree "+to, "session", session, "worktree", w.ID, "path", w.Path, "branch", w.Branch)
	return w, nil
}
