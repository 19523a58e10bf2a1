package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// ArchiveWorktree archives a session's worktree: its uncommitted changes
// are committed to its branch, its directory is removed, the branch stays,
// and the worktree is recorded archived. The session's turns wait (they
// stay queued) until RestoreWorktree. Refused with jam.ErrConflict while
// a turn of the session runs, or when the worktree is not active.
func (m *Manager) ArchiveWorktree(ctx context.Context, session jam.SessionID) (store.Worktree, error) {
	return m.worktreeOp(ctx, session, store.WorktreeActive, store.WorktreeArchived, func(ctx context.Context, w store.Worktree) error {
		if err := m.requestCheckpoint(ctx, w); err != nil {
			return err
		}
		return worktree.Archive(ctx, w)
	})
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
		if err := m.requestCheckpoint(ctx, w); err != nil {
			return err
		}
		return worktree.Remove(ctx, w, force)
	})
}

// RestoreWorktree makes an archived or removed worktree active again. With
// seq (a checkpoint's number) the worktree is made from that checkpoint.
// Without, an archived worktree's branch (which holds everything the
// archive committed) is checked out at the same path, and a removed one
// is made from the session's latest checkpoint, or, for a session that
// has none, anew from the repository's HEAD. The session's waiting turns
// run.
func (m *Manager) RestoreWorktree(ctx context.Context, session jam.SessionID, seq int) (store.Worktree, error) {
	w, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, session)
	if err != nil {
		return store.Worktree{}, err
	}
	if w.State == store.WorktreeActive {
		return store.Worktree{}, fmt.Errorf("%w: the worktree of %s is active", jam.ErrConflict, session)
	}
	if w.State == store.WorktreeArchived && seq <= 0 {
		// The archive committed everything to the branch: check it out.
		return m.worktreeOp(ctx, session, w.State, store.WorktreeActive, worktree.Restore)
	}
	from, err := m.restorePoint(ctx, session, seq)
	if err != nil {
		return store.Worktree{}, err
	}
	return m.worktreeOp(ctx, session, w.State, store.WorktreeActive, restoreFrom(from))
}

// restoreFrom makes a worktree again from checkpoint c, or, without one,
// as worktree.Restore does (the branch checked out again, or anew from
// HEAD; a plain directory made empty).
func restoreFrom(c *store.Checkpoint) func(context.Context, store.Worktree) error {
	if c == nil {
		return worktree.Restore
	}
	return func(ctx context.Context, w store.Worktree) error { return worktree.RestoreFrom(ctx, w, *c) }
}

// restorePoint is the checkpoint a restore starts from: number seq, or
// the latest (nil when the session has none).
func (m *Manager) restorePoint(ctx context.Context, session jam.SessionID, seq int) (*store.Checkpoint, error) {
	if seq <= 0 {
		c, err := m.cfg.Store.CheckpointLatest(ctx, m.cfg.Workspace, session)
		if errors.Is(err, jam.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
	list, err := m.cfg.Store.CheckpointList(ctx, m.cfg.Workspace, session)
	if err != nil {
		return nil, err
	}
	c, err := numbered(list, session, seq)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// numbered is checkpoint seq of a session's list.
func numbered(list []store.Checkpoint, session jam.SessionID, seq int) (store.Checkpoint, error) {
	for _, c := range list {
		if c.Seq == seq {
			return c, nil
		}
	}
	return store.Checkpoint{}, fmt.Errorf("%w: session %s has no checkpoint %d (it has %d; see jam checkpoint list)", jam.ErrNotFound, session, seq, len(list))
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
