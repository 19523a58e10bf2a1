// Package changeset captures, digests, applies and presents the change set
// between two commits of a session's git directory: the manifest of the
// paths that changed, and the binary patch that turns the first tree into
// the second.
//
// Invariants: a change set's Files are sorted by Path, one entry per path;
// its Patch is git diff --binary --full-index -M from the base commit's tree
// to the end commit's, kept whole or (over the bound) not at all; its
// SubjectDigest covers the whole manifest and the whole patch, so two
// captures of the same two trees give the same digest, whichever commits
// hold them. Equal trees give the empty change set: no files, empty patch.
// Every git call goes through internal/git's hardened runner: nothing the
// repository names runs. A capture costs a fixed number of git processes
// whatever the size of the change: the commits resolved, one pass of git
// diff for the entries, the line counts and the patch, and one cat-file
// --batch stream for the blobs' digests.
//
// # Subject digest, version 1
//
// SubjectDigest is "sha256:" and the lower-case hex SHA-256 of this byte
// string, where field(b) is the 8-byte big-endian length of b followed by
// b, and integers are written in decimal ASCII inside a field:
//
//	field("jam.changeset.v1")
//	field(number of files)
//	for each file, in manifest order:
//	    field(Path) field(OldPath) field(OldMode) field(NewMode)
//	    field(OldSHA256) field(NewSHA256) field(Size) field(Kind)
//	    field(Binary: "1" or "0") field(Symlink: "1" or "0")
//	    field(Additions) field(Deletions)
//	field(PatchBytes)
//	field(hex SHA-256 of the patch bytes)
//
// The commits are not part of it: the digest names what changed, not
// where it was found. A blob's digest is SHA-256 over its raw bytes (a
// symlink's target); a submodule's side has none ("").
package changeset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// DefaultMaxPatchBytes bounds the stored patch when Options leave it 0.
const DefaultMaxPatchBytes = 32 << 20

// Options tune a capture.
type Options struct {
	// MaxPatchBytes is the largest patch kept; a larger one is omitted
	// (its size and digest are still recorded). 0 means
	// DefaultMaxPatchBytes.
	MaxPatchBytes int64
}

const (
	modeSymlink = 0o120000
	modeGitlink = 0o160000
	modeExec    = 0o100755
)

// nullID reports whether id is git's all-zeros id of an absent side.
func nullID(id string) bool { return strings.Trim(id, "0") == "" }

// Capture records the change set from the tree of baseCommit to that of
// endCommit in the repository at gitDir. The caller fills its IDs, session,
// turn, origin, checkpoints and time. An unknown commit is jam.ErrNotFound.
func Capture(ctx context.Context, gitDir, baseCommit, endCommit string, opt Options) (store.ChangeSet, error) {
	max := opt.MaxPatchBytes
	if max == 0 {
		max = DefaultMaxPatchBytes
	}
	if max < 0 {
		return store.ChangeSet{}, fmt.Errorf("change set: MaxPatchBytes %d is negative: %w", max, jam.ErrInvalid)
	}
	base, err := git.Resolve(ctx, gitDir, baseCommit)
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set: base commit: %w", err)
	}
	end, err := git.Resolve(ctx, gitDir, endCommit)
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set: end commit: %w", err)
	}
	cs := store.ChangeSet{BaseCommit: base, EndCommit: end}
	// The manifest's entries and counts, and the patch, from one pass of
	// git diff: the patch hashed and counted as it streams, kept up to
	// the bound.
	w := &boundedWriter{h: sha256.New(), max: max}
	raw, stats, err := git.Diff(ctx, gitDir, base, end, w)
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set: %w", err)
	}
	if len(raw) == 0 {
		cs.Patch = []byte{}
		cs.SubjectDigest = digest(nil, 0, sha256.Sum256(nil))
		return cs, nil
	}
	byPath := make(map[string]git.NumStat, len(stats))
	for _, s := range stats {
		byPath[s.Path] = s
	}
	// Digests of every changed blob, read in one stream.
	var ids []string
	seen := map[string]bool{}
	for _, e := range raw {
		for _, side := range [][2]any{{e.OldID, e.OldMode}, {e.NewID, e.NewMode}} {
			id, mode := side[0].(string), side[1].(uint32)
			if !nullID(id) && mode != modeGitlink && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	type sum struct {
		hex  string
		size int64
	}
	sums := make(map[string]sum, len(ids))
	// One hash and one buffer for every blob: io.Copy would allocate a
	// buffer a blob (sha256's digest has no ReadFrom).
	h, buf := sha256.New(), make([]byte, 64<<10)
	var sumBuf [sha256.Size]byte
	err = git.CatBlobs(ctx, gitDir, ids, func(b git.Blob, r io.Reader) error {
		h.Reset()
		if _, err := io.CopyBuffer(h, r, buf); err != nil {
			return err
		}
		sums[b.ID] = sum{hex.EncodeToString(h.Sum(sumBuf[:0])), b.Size}
		return nil
	})
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set: reading blobs: %w", err)
	}
	for _, e := range raw {
		f := store.ChangeSetFile{Path: e.Path, OldPath: e.OldPath, OldMode: e.OldMode, NewMode: e.NewMode}
		switch e.Status {
		case 'A':
			f.Kind = store.ChangeAdded
		case 'D':
			f.Kind = store.ChangeDeleted
		case 'R':
			f.Kind = store.ChangeRenamed
		case 'M', 'T':
			f.Kind = store.ChangeModified
		default:
			return store.ChangeSet{}, fmt.Errorf("change set: path %q has git status %q, which a diff of two trees does not give", e.Path, e.Status)
		}
		if !nullID(e.OldID) && e.OldMode != modeGitlink {
			f.OldSHA256 = sums[e.OldID].hex
			f.Size = sums[e.OldID].size
		}
		if !nullID(e.NewID) && e.NewMode != modeGitlink {
			f.NewSHA256 = sums[e.NewID].hex
			f.Size = sums[e.NewID].size
		} else if f.Kind != store.ChangeDeleted {
			f.Size = 0
		}
		f.Symlink = e.OldMode == modeSymlink || e.NewMode == modeSymlink
		if s, ok := byPath[e.Path]; ok {
			f.Binary, f.Additions, f.Deletions = s.Binary, s.Additions, s.Deletions
		}
		cs.Additions += f.Additions
		cs.Deletions += f.Deletions
		cs.Files = append(cs.Files, f)
	}
	sort.Slice(cs.Files, func(i, j int) bool { return cs.Files[i].Path < cs.Files[j].Path })
	cs.PatchBytes = w.n
	if w.over {
		cs.PatchOmitted = true
	} else {
		cs.Patch = w.buf.Bytes()
	}
	var ps [32]byte
	copy(ps[:], w.h.Sum(nil))
	cs.SubjectDigest = digest(cs.Files, cs.PatchBytes, ps)
	return cs, nil
}

// boundedWriter hashes and counts everything written, keeping it while
// it stays within max bytes.
type boundedWriter struct {
	h    hash.Hash
	buf  bytes.Buffer
	n    int64
	max  int64
	over bool
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.n += int64(len(p))
	if !w.over {
		if w.n > w.max {
			w.over = true
			w.buf = bytes.Buffer{}
		} else {
			w.buf.Write(p)
		}
	}
	return len(p), nil
}

// Digest recomputes the subject digest of cs from its manifest and its
// patch. A change set whose patch was omitted, or whose patch does not
// have PatchBytes bytes, is jam.ErrInvalid.
func Digest(cs store.ChangeSet) (string, error) {
	if cs.PatchOmitted {
		return "", fmt.Errorf("change set: the patch was omitted (over the bound), so its digest cannot be recomputed; regenerate it from the checkpoints: %w", jam.ErrInvalid)
	}
	if int64(len(cs.Patch)) != cs.PatchBytes {
		return "", fmt.Errorf("change set: the patch has %d bytes, the record says %d: %w", len(cs.Patch), cs.PatchBytes, jam.ErrInvalid)
	}
	return digest(cs.Files, cs.PatchBytes, sha256.Sum256(cs.Patch)), nil
}

// digest is the version 1 encoding of the package doc, hashed.
func digest(files []store.ChangeSetFile, patchBytes int64, patchSum [32]byte) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	num := func(v int64) { field(strconv.FormatInt(v, 10)) }
	flag := func(b bool) {
		if b {
			field("1")
		} else {
			field("0")
		}
	}
	field("jam.changeset.v1")
	num(int64(len(files)))
	for _, f := range files {
		field(f.Path)
		field(f.OldPath)
		num(int64(f.OldMode))
		num(int64(f.NewMode))
		field(f.OldSHA256)
		field(f.NewSHA256)
		num(f.Size)
		field(string(f.Kind))
		flag(f.Binary)
		flag(f.Symlink)
		num(int64(f.Additions))
		num(int64(f.Deletions))
	}
	num(patchBytes)
	field(hex.EncodeToString(patchSum[:]))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Apply applies the patch of cs to the files under dir (a checkout of the
// base commit, or a plain directory holding its files) with git apply
// --binary, or with check only checks that it applies and changes
// nothing. After applying it verifies the manifest against the disk: every
// new side's bytes (a symlink's target) and executable bit, and every path
// that no longer exists gone; a mismatch is an error naming the path. A
// change set whose patch was omitted is jam.ErrInvalid.
func Apply(ctx context.Context, cs store.ChangeSet, dir string, check bool) error {
	if cs.PatchOmitted {
		return fmt.Errorf("change set: its patch was omitted (%d bytes, over the bound); regenerate it from the checkpoints' commits: %w", cs.PatchBytes, jam.ErrInvalid)
	}
	if len(cs.Patch) > 0 {
		tmp, err := os.CreateTemp("", "jam-changeset-*.patch")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		_, err = tmp.Write(cs.Patch)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := git.Apply(ctx, dir, tmp.Name(), check); err != nil {
			return fmt.Errorf("change set: applying the patch in %s: %w", dir, err)
		}
	}
	if check {
		return nil
	}
	return Verify(cs, dir)
}

// Verify checks the files under dir against the new side of the manifest
// of cs: each path's bytes, kind and executable bit, and each removed
// path absent. The first mismatch is a jam.ErrConflict naming the path.
func Verify(cs store.ChangeSet, dir string) error {
	present := make(map[string]bool, len(cs.Files))
	for _, f := range cs.Files {
		if f.Kind != store.ChangeDeleted {
			present[f.Path] = true
		}
	}
	for _, f := range cs.Files {
		gone := removedPath(f)
		if gone != "" && !present[gone] {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(gone))); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("change set: %q should be gone after applying, but is still there: %w", gone, jam.ErrConflict)
			}
		}
		if f.Kind == store.ChangeDeleted || f.NewMode == modeGitlink {
			continue
		}
		if err := verifyFile(dir, f); err != nil {
			return fmt.Errorf("change set: %q: %v: %w", f.Path, err, jam.ErrConflict)
		}
	}
	return nil
}

func verifyFile(dir string, f store.ChangeSetFile) error {
	p := filepath.Join(dir, filepath.FromSlash(f.Path))
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	var data []byte
	if f.NewMode == modeSymlink {
		if fi.Mode()&os.ModeSymlink == 0 {
			return errors.New("should be a symbolic link")
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		data = []byte(target)
	} else {
		if !fi.Mode().IsRegular() {
			return errors.New("should be a regular file")
		}
		if exec := fi.Mode()&0o100 != 0; exec != (f.NewMode == modeExec) {
			return fmt.Errorf("executable bit is %v, the manifest says mode %o", exec, f.NewMode)
		}
		if data, err = os.ReadFile(p); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != f.NewSHA256 {
		return fmt.Errorf("content digest %s, the manifest says %s", got, f.NewSHA256)
	}
	return nil
}

// removedPath is the path a change takes away from the tree: a deleted
// file's, a renamed file's old one; "" for none.
func removedPath(f store.ChangeSetFile) string {
	switch f.Kind {
	case store.ChangeDeleted:
		return f.Path
	case store.ChangeRenamed:
		return f.OldPath
	}
	return ""
}
