package changeset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// VerifyTree checks the tree of commit in the repository at gitDir
// against the new side of the manifest of cs, as a delivery does before
// it pushes the commit it built: every file's NewSHA256 (the SHA-256 of
// the blob; a symlink's target) and NewMode match, a submodule's mode
// matches, a deleted path and a renamed file's OldPath are absent. It
// also checks that the commit changes no path over its first parent (over
// the empty tree for a root commit) that the manifest does not name: a
// delivery commit is its parent plus the change set's patch, so a file
// added, changed or removed beside the change set is a mismatch too. The
// first mismatch, in manifest order (then the first path outside it), is
// an error wrapping jam.ErrConflict naming the path. It costs a fixed
// number of git processes: the commits resolved, one ls-tree stream, one
// diff against the parent and one cat-file --batch stream of the blobs.
func VerifyTree(ctx context.Context, gitDir, commit string, cs store.ChangeSet) error {
	id, err := git.Resolve(ctx, gitDir, commit)
	if err != nil {
		return fmt.Errorf("change set: verify: %w", err)
	}
	mismatch := func(path, format string, args ...any) error {
		return fmt.Errorf("change set: commit %s does not hold the change set: %q: %s: %w", id, path, fmt.Sprintf(format, args...), jam.ErrConflict)
	}
	// named are the paths the manifest speaks of; present, those it says
	// the commit holds.
	named := make(map[string]bool, len(cs.Files))
	present := make(map[string]bool, len(cs.Files))
	for _, f := range cs.Files {
		named[f.Path] = true
		if f.OldPath != "" {
			named[f.OldPath] = true
		}
		if f.Kind != store.ChangeDeleted {
			present[f.Path] = true
		}
	}
	parent, err := git.Resolve(ctx, gitDir, id+"^")
	root := errors.Is(err, jam.ErrNotFound)
	if err != nil && !root {
		return fmt.Errorf("change set: verify: parent of %s: %w", id, err)
	}

	have := make(map[string]git.TreeEntry, len(named))
	outside := ""
	err = git.ListTree(ctx, gitDir, id, func(e git.TreeEntry) error {
		switch {
		case named[e.Path]:
			have[e.Path] = e
		case root && outside == "":
			outside = e.Path
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("change set: verify: listing %s: %w", id, err)
	}

	var ids []string
	seen := map[string]bool{}
	for _, f := range cs.Files {
		if e, ok := have[f.Path]; ok && present[f.Path] && e.Type == "blob" && !seen[e.ID] {
			seen[e.ID] = true
			ids = append(ids, e.ID)
		}
	}
	sums := make(map[string]string, len(ids))
	h, buf := sha256.New(), make([]byte, 64<<10)
	err = git.CatBlobs(ctx, gitDir, ids, func(b git.Blob, r io.Reader) error {
		h.Reset()
		if _, err := io.CopyBuffer(h, r, buf); err != nil {
			return err
		}
		sums[b.ID] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		return fmt.Errorf("change set: verify: reading blobs: %w", err)
	}

	for _, f := range cs.Files {
		gone := removedPath(f)
		if gone != "" && !present[gone] {
			if _, ok := have[gone]; ok {
				return mismatch(gone, "should be absent, and is there")
			}
		}
		if f.Kind == store.ChangeDeleted {
			continue
		}
		e, ok := have[f.Path]
		switch {
		case !ok:
			return mismatch(f.Path, "missing")
		case e.Mode != f.NewMode:
			return mismatch(f.Path, "mode %o, the manifest says %o", e.Mode, f.NewMode)
		case f.NewMode == modeGitlink:
			// A submodule's commit has no digest in the manifest.
		case sums[e.ID] != f.NewSHA256:
			return mismatch(f.Path, "content digest %s, the manifest says %s", sums[e.ID], f.NewSHA256)
		}
	}

	if root {
		if outside != "" {
			return mismatch(outside, "in the commit, and not in the change set")
		}
		return nil
	}
	changed, err := git.DiffRaw(ctx, gitDir, parent, id)
	if err != nil {
		return fmt.Errorf("change set: verify: diff against the parent %s: %w", parent, err)
	}
	for _, e := range changed {
		for _, p := range []string{e.OldPath, e.Path} {
			if p != "" && !named[p] {
				return mismatch(p, "changed over the parent %s, and not in the change set", parent)
			}
		}
	}
	return nil
}
