package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
)

// changeSetApplied is what "jam changeset apply --json" prints.
type changeSetApplied struct {
	ChangeSet string `json:"changeset"`
	Dir       string `json:"dir"`
	// Check says only whether it applies was checked; nothing changed.
	Check     bool `json:"check"`
	Files     int  `json:"files"`
	Additions int  `json:"additions"`
	Deletions int  `json:"deletions"`
}

// Git's modes of a change set's manifest.
const (
	modeExec    = "100755"
	modeSymlink = "120000"
	modeGitlink = "160000"
)

// runChangeSetApply applies a change set's patch to opts.Dir with git
// apply and then checks the directory against the manifest. The patch's
// paths are relative to the top of the tree it was taken from, and git
// apply in a subdirectory of a work tree takes them from that work tree's
// top (and skips the rest), so Dir must be the top of a work tree or a
// directory in none.
func runChangeSetApply(ctx context.Context, opts *ChangeSetOptions) error {
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil {
		return &usageError{err: fmt.Errorf("--to %s: %w", dir, err)}
	} else if !fi.IsDir() {
		return &usageError{err: fmt.Errorf("--to %s is not a directory", dir)}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	cs, err := client.ChangeSet(ctx, opts.Ref)
	if err != nil {
		return err
	}
	if cs.PatchOmitted {
		return fmt.Errorf("change set %s cannot be applied: its patch (%d bytes) was over the bound and is not kept; its checkpoints %s and %s reproduce it (git diff --binary --full-index %s %s): %w",
			cs.ID, cs.PatchBytes, cs.BaseCheckpoint, cs.EndCheckpoint, cs.BaseCommit, cs.EndCommit, jam.ErrInvalid)
	}
	for _, f := range cs.Files {
		for i, p := range []string{f.Path, f.OldPath} {
			if (i == 0 || p != "") && !localPath(p) {
				return fmt.Errorf("change set %s names the path %q, which is not inside the tree: %w", cs.ID, p, jam.ErrInvalid)
			}
		}
	}
	if err := applyTarget(ctx, dir); err != nil {
		return err
	}
	out := changeSetApplied{ChangeSet: cs.ID, Dir: dir, Check: opts.Check, Files: len(cs.Files), Additions: cs.Additions, Deletions: cs.Deletions}
	if len(cs.Files) > 0 {
		patch, err := client.ChangeSetPatch(ctx, cs.ID)
		if err != nil {
			return err
		}
		if int64(len(patch)) != cs.PatchBytes {
			return fmt.Errorf("the patch of change set %s has %d bytes, its record says %d: %w", cs.ID, len(patch), cs.PatchBytes, jam.ErrInvalid)
		}
		if err := applyPatch(ctx, dir, patch, opts.Check); err != nil {
			return fmt.Errorf("change set %s does not apply to %s (nothing was changed): %w", cs.ID, dir, err)
		}
	}
	if !opts.Check {
		if err := verifyManifest(dir, cs.Files); err != nil {
			return fmt.Errorf("applied change set %s to %s, but the result differs from its manifest: %w", cs.ID, dir, err)
		}
	}
	if opts.JSON {
		return printJSON(opts.IO, out)
	}
	verb := "applied %s to %s: %s\n"
	if opts.Check {
		verb = "%s applies to %s: %s\n"
	}
	_, err = fmt.Fprintf(opts.IO.Out, verb, cs.ID, dir, figures(cs))
	return err
}

// figures reads like "3 files, +12 −4", or "no changes".
func figures(cs wire.ChangeSet) string {
	switch len(cs.Files) {
	case 0:
		return "no changes"
	case 1:
		return fmt.Sprintf("1 file, +%d −%d", cs.Additions, cs.Deletions)
	}
	return fmt.Sprintf("%d files, +%d −%d", len(cs.Files), cs.Additions, cs.Deletions)
}

// localPath says whether p (slash-separated, as git writes it) names a
// path inside the tree: relative, with no "..", "." or empty element.
func localPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return false
	}
	for el := range strings.SplitSeq(p, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// applyTarget refuses a directory inside a git work tree that is not its
// top: git apply would read the patch's paths from the top and skip those
// outside dir.
func applyTarget(ctx context.Context, dir string) error {
	top, err := git.TopLevel(ctx, dir)
	if errors.Is(err, jam.ErrInvalid) {
		return nil // in no work tree: git apply works as patch does
	}
	if err != nil {
		return fmt.Errorf("--to %s: %w", dir, err)
	}
	a, err := filepath.EvalSymlinks(top)
	if err != nil {
		return err
	}
	b, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if a != b {
		return &usageError{err: fmt.Errorf("--to %s is inside the git work tree %s but not its top; git apply takes a patch's paths from the top, so apply it there (--to %s)", dir, top, top)}
	}
	return nil
}

// applyPatch writes patch to a temporary file and applies it to dir (or
// with check only checks it). git apply applies all of a patch or none of
// it; a patch that does not apply is jam.ErrConflict.
func applyPatch(ctx context.Context, dir string, patch []byte, check bool) error {
	tmp, err := os.CreateTemp("", "jam-changeset-*.patch")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(patch)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := git.Apply(ctx, dir, tmp.Name(), check); err != nil {
		if e, ok := errors.AsType[*git.Error](err); ok && e.ExitCode > 0 {
			return fmt.Errorf("%w: %w", jam.ErrConflict, err)
		}
		return err
	}
	return nil
}

// verifyManifest checks the files under dir against the new side of the
// manifest: each path's kind (file or symbolic link), executable bit and
// SHA-256 (a link's target), and each deleted path and renamed old path
// gone unless another entry puts a file there. It reads inside dir only:
// a link on the way to a path does not lead out of it. The first mismatch
// is a jam.ErrConflict naming the path.
func verifyManifest(dir string, files []wire.ChangeSetFile) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	present := make(map[string]bool, len(files))
	for _, f := range files {
		if f.Kind != "deleted" {
			present[f.Path] = true
		}
	}
	for _, f := range files {
		gone := ""
		switch f.Kind {
		case "deleted":
			gone = f.Path
		case "renamed":
			gone = f.OldPath
		}
		if gone != "" && !present[gone] {
			if _, err := root.Lstat(filepath.FromSlash(gone)); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%q should be gone, but is still there: %w", gone, jam.ErrConflict)
			}
		}
		if f.Kind == "deleted" || f.NewMode == modeGitlink {
			continue
		}
		if err := verifyFile(root, f); err != nil {
			return fmt.Errorf("%q: %v: %w", f.Path, err, jam.ErrConflict)
		}
	}
	return nil
}

func verifyFile(root *os.Root, f wire.ChangeSetFile) error {
	name := filepath.FromSlash(f.Path)
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	h := sha256.New()
	if f.NewMode == modeSymlink {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return errors.New("should be a symbolic link")
		}
		target, err := root.Readlink(name)
		if err != nil {
			return err
		}
		io.WriteString(h, target)
	} else {
		if !fi.Mode().IsRegular() {
			return errors.New("should be a regular file")
		}
		if exec := fi.Mode()&0o100 != 0; exec != (f.NewMode == modeExec) {
			return fmt.Errorf("executable bit is %v, the manifest says mode %s", exec, f.NewMode)
		}
		file, err := root.Open(name)
		if err != nil {
			return err
		}
		_, err = io.Copy(h, file)
		file.Close()
		if err != nil {
			return err
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.NewSHA256 {
		return fmt.Errorf("content digest %s, the manifest says %s", got, f.NewSHA256)
	}
	return nil
}
