package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// NewWorktree prepares a session's working directory under root: a git
// worktree of the template's repository on its own branch
// (jam/<session id>), or an empty directory when the template names no
// repository. It is owned by its id; the path is only where it is now.
func NewWorktree(ctx context.Context, root string, id jam.WorktreeID, t store.Template, s store.Session, at time.Time) (store.Worktree, error) {
	w := store.Worktree{ID: id, WorkspaceID: s.WorkspaceID, SessionID: s.ID, State: store.WorktreeActive, CreatedAt: at, UpdatedAt: at}
	w.Path = filepath.Join(root, string(s.ID))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return store.Worktree{}, err
	}
	if t.Desired.Repo == "" {
		if err := os.MkdirAll(w.Path, 0o755); err != nil {
			return store.Worktree{}, err
		}
		return w, nil
	}
	w.Repo, w.Branch = t.Desired.Repo, "jam/"+string(s.ID)
	if _, err := os.Stat(filepath.Join(w.Path, ".git")); err == nil {
		return w, nil // created before a crash kept us from recording it
	}
	if out, err := git(ctx, w.Repo, "worktree", "add", "-b", w.Branch, w.Path); err != nil {
		return store.Worktree{}, fmt.Errorf("git worktree add: %w: %s", err, out)
	}
	return w, nil
}

// git runs the git CLI in dir.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}
