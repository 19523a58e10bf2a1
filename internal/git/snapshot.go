package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Snapshots. [TakeSnapshot] records a worktree's files as a commit on a
// ref of its git directory without touching the worktree's index, HEAD or
// any branch: it stages into a temporary index (GIT_INDEX_FILE in a
// directory of its own, seeded with a copy of the worktree's index so
// that git's stat information spares rehashing unchanged files), writes
// the tree, and makes a commit whose parent is HEAD. [RestoreSnapshot]
// checks such a commit out into a new directory. Both run hardened like
// every other call, with these settings too, so that the repository's
// configuration does not change what is recorded: core.fileMode and
// core.symlinks true (the exec bit and links are recorded and come back),
// core.autocrlf false, core.ignoreCase false, core.splitIndex false (the
// temporary index is whole; no shared index is written into the git
// directory), and no literal, glob or case-insensitive pathspec mode from
// the environment (the exclusions are pathspec magic). GIT_ATTR_SOURCE is
// set to the empty tree, so where git supports it (2.40 and later) the
// worktree's .gitattributes convert nothing; older git still applies their
// text and eol attributes on both the way in and the way out.

// emptyTree is the id of git's empty tree (SHA-1 repositories).
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// snapshotConfig are the settings of the package note on snapshots.
var snapshotConfig = []string{
	"-c", "core.fileMode=true", "-c", "core.symlinks=true", "-c", "core.autocrlf=false",
	"-c", "core.ignoreCase=false", "-c", "core.splitIndex=false", "-c", "i18n.commitEncoding=UTF-8",
}

// snapshotEnv is the environment of a snapshot's commands.
var snapshotEnv = []string{
	"GIT_LITERAL_PATHSPECS=0", "GIT_GLOB_PATHSPECS=0", "GIT_NOGLOB_PATHSPECS=0", "GIT_ICASE_PATHSPECS=0",
	"GIT_ATTR_SOURCE=" + emptyTree,
}

// SnapshotParams says what to snapshot and where.
type SnapshotParams struct {
	// Repo is the repository Path is a linked worktree (or the main
	// working tree) of; "" for a directory without one, recorded in the
	// private git directory GitDir instead (created on first use).
	Repo   string
	GitDir string
	Path   string
	// Ref is the ref to create (refs/...); one that exists is
	// jam.ErrAlreadyExists and is left as it was.
	Ref     string
	Message string
	// Exclude are globs of paths kept out of the snapshot (see
	// [ExcludePathspecs]).
	Exclude []string
	// At is the commit's author and committer date.
	At time.Time
}

// Snapshot is what [TakeSnapshot] made.
type Snapshot struct {
	// GitDir is the git directory holding the commit: the repository's
	// common directory, or the private one.
	GitDir string
	Ref    string
	Commit string
	Tree   string
	// Base is the commit HEAD pointed at, the snapshot's parent; "" when
	// HEAD has no commit yet.
	Base string
}

// PrivateBranch is the branch of a private git directory: it points at
// the latest snapshot taken or restored, and is the next one's parent.
const PrivateBranch = "refs/heads/jam"

// TakeSnapshot records every file of the worktree at p.Path that git
// would add (untracked ones too; ignored ones not) except those p.Exclude
// matches, as a commit on p.Ref whose parent is HEAD. An excluded path
// that HEAD tracks keeps HEAD's version (neither the worktree's edit nor
// a staged one is recorded); one HEAD lacks is left out. The worktree's
// index, HEAD and branches are untouched; in a private git directory its
// own index and [PrivateBranch] move to the snapshot.
func TakeSnapshot(ctx context.Context, p SnapshotParams) (Snapshot, error) {
	excludes, includes, err := ExcludePathspecs(p.Exclude)
	if err != nil {
		return Snapshot{}, err
	}
	if !strings.HasPrefix(p.Ref, "refs/") {
		return Snapshot{}, fmt.Errorf("%w: snapshot ref %q is not under refs/", jam.ErrInvalid, p.Ref)
	}
	pl, index, err := snapshotPlace(ctx, p.Repo, p.GitDir, p.Path, true)
	if err != nil {
		return Snapshot{}, err
	}
	tmp, err := os.MkdirTemp("", "jam-snapshot-")
	if err != nil {
		return Snapshot{}, err
	}
	defer os.RemoveAll(tmp)
	tmpIndex := filepath.Join(tmp, "index")
	if err := copyFile(index, tmpIndex); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Snapshot{}, err
	}
	common, err := commonDir(ctx, pl.place)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{GitDir: common, Ref: p.Ref}
	base, err := run(ctx, program, pl.place, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	var e *Error
	switch {
	case errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "":
		// No commit yet: no parent, and nothing tracked to keep. (err is
		// read again below, after the exclusions, which may not set it.)
		err = nil
	case err != nil:
		return Snapshot{}, err
	default:
		s.Base = strings.TrimSpace(base)
	}

	ip := pl.place
	ip.env = append(append([]string{}, snapshotEnv...), "GIT_INDEX_FILE="+tmpIndex)
	git := func(args ...string) (string, error) {
		out, err := run(ctx, program, ip, append(append([]string{}, snapshotConfig...), args...)...)
		return strings.TrimSpace(out), err
	}
	if _, err := os.Stat(tmpIndex); errors.Is(err, fs.ErrNotExist) && s.Base != "" {
		if _, err := git("read-tree", s.Base); err != nil {
			return Snapshot{}, err
		}
	}
	if _, err := git(append([]string{"add", "--all", "--", "."}, excludes...)...); err != nil {
		return Snapshot{}, err
	}
	// What the exclusions match is HEAD's, or absent.
	// (Without a pathspec, reset would reset every path: never run bare.)
	switch {
	case len(includes) == 0:
	case s.Base != "":
		_, err = git(append([]string{"reset", "--quiet", s.Base, "--"}, includes...)...)
	default:
		_, err = git(append([]string{"rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--"}, includes...)...)
	}
	if err != nil {
		return Snapshot{}, err
	}
	if s.Tree, err = git("write-tree"); err != nil {
		return Snapshot{}, err
	}
	date := strconv.FormatInt(p.At.Unix(), 10) + " +0000"
	ip.env = append(ip.env,
		"GIT_AUTHOR_NAME=jam", "GIT_AUTHOR_EMAIL=jam@localhost", "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME=jam", "GIT_COMMITTER_EMAIL=jam@localhost", "GIT_COMMITTER_DATE="+date)
	args := []string{"commit-tree", s.Tree, "-m", p.Message}
	if s.Base != "" {
		args = append(args, "-p", s.Base)
	}
	if s.Commit, err = git(args...); err != nil {
		return Snapshot{}, err
	}
	if _, err := git("update-ref", "-m", "jam: snapshot", p.Ref, s.Commit, ""); err != nil {
		return Snapshot{}, err
	}
	if p.Repo == "" {
		if _, err := git("update-ref", "-m", "jam: snapshot", PrivateBranch, s.Commit); err != nil {
			return s, err
		}
		// The private directory's index follows its branch, so the next
		// snapshot starts from this one's stat information.
		if err := os.Rename(tmpIndex, index); err != nil {
			return s, err
		}
	}
	return s, nil
}

// RestoreParams says which snapshot to check out where.
type RestoreParams struct {
	// Repo, GitDir and Path are as in [SnapshotParams]. Path must not
	// exist (jam.ErrAlreadyExists).
	Repo, GitDir, Path string
	// Branch is the worktree's branch (a linked worktree only): created at
	// Base when missing; one that points elsewhere is jam.ErrConflict
	// unless MoveBranch, which moves it to Base.
	Branch     string
	MoveBranch bool
	// Commit is the snapshot's commit, Base its parent.
	Commit, Base string
}

// RestoreSnapshot makes a new worktree at p.Path whose files are those of
// the snapshot p.Commit. For a repository it adds a linked worktree on
// p.Branch, which points at p.Base, with the index equal to p.Base's tree,
// so that the files the snapshot holds beyond Base show as changes and
// untracked files as untracked. For a private git directory it fills a
// new directory and moves [PrivateBranch] and the index to the snapshot.
// It never looks at the repository's own HEAD.
func RestoreSnapshot(ctx context.Context, p RestoreParams) error {
	if _, err := os.Lstat(p.Path); err == nil {
		return failure([]string{"checkout-index"}, p.Path, jam.ErrAlreadyExists, "'"+p.Path+"' already exists; a snapshot is restored only into a new directory")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if p.Repo == "" {
		return restorePrivate(ctx, p)
	}
	if p.Base == "" || p.Branch == "" {
		return fmt.Errorf("%w: restoring a linked worktree needs its branch and the snapshot's base commit", jam.ErrInvalid)
	}
	if err := WorktreePrune(ctx, p.Repo); err != nil {
		return err
	}
	exists, err := BranchExists(ctx, p.Repo, p.Branch)
	if err != nil {
		return err
	}
	if !exists {
		if _, err := Run(ctx, p.Repo, "branch", "--no-track", "--", p.Branch, p.Base); err != nil {
			return err
		}
	} else {
		tip, err := Run(ctx, p.Repo, "rev-parse", "--verify", "refs/heads/"+p.Branch+"^{commit}")
		if err != nil {
			return err
		}
		if tip != p.Base {
			if !p.MoveBranch {
				return failure([]string{"branch"}, p.Repo, jam.ErrConflict, "branch "+p.Branch+" points at "+tip+", not at the snapshot's base "+p.Base+"; moving it would drop its commits since")
			}
			if _, err := Run(ctx, p.Repo, "update-ref", "-m", "jam: restore", "refs/heads/"+p.Branch, p.Base, tip); err != nil {
				return err
			}
		}
	}
	if _, err := Run(ctx, p.Repo, "worktree", "add", "--quiet", "--no-checkout", "--", p.Path, p.Branch); err != nil {
		return err
	}
	err = restoreLinked(ctx, p)
	if err != nil {
		ctx := context.WithoutCancel(ctx)
		if rmErr := WorktreeRemove(ctx, p.Repo, p.Path, true); rmErr != nil {
			return errors.Join(err, rmErr)
		}
	}
	return err
}

// restoreLinked checks the snapshot's files out into the new worktree
// through a temporary index, then sets the worktree's index to Base.
func restoreLinked(ctx context.Context, p RestoreParams) error {
	pl, _, err := snapshotPlace(ctx, p.Repo, "", p.Path, false)
	if err != nil {
		return err
	}
	if err := checkoutSnapshot(ctx, pl.place, p.Commit, ""); err != nil {
		return err
	}
	ip := pl.place
	ip.env = snapshotEnv
	for _, args := range [][]string{{"read-tree", p.Base}, {"update-index", "-q", "--refresh"}} {
		if _, err := run(ctx, program, ip, append(append([]string{}, snapshotConfig...), args...)...); err != nil {
			return err
		}
	}
	return nil
}

// restorePrivate fills a new directory from a private git directory.
func restorePrivate(ctx context.Context, p RestoreParams) error {
	if err := os.MkdirAll(p.Path, 0o755); err != nil {
		return err
	}
	pl, index, err := snapshotPlace(ctx, "", p.GitDir, p.Path, false)
	if err == nil {
		err = checkoutSnapshot(ctx, pl.place, p.Commit, index)
	}
	if err == nil {
		_, err = run(ctx, program, pl.place, "update-ref", "-m", "jam: restore", PrivateBranch, p.Commit)
	}
	if err != nil {
		return errors.Join(err, os.RemoveAll(p.Path))
	}
	return nil
}

// checkoutSnapshot writes commit's files into pl's work tree through a
// temporary index, which then replaces keep when it is named.
func checkoutSnapshot(ctx context.Context, pl place, commit, keep string) error {
	tmp, err := os.MkdirTemp("", "jam-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tmpIndex := filepath.Join(tmp, "index")
	pl.env = append(append([]string{}, snapshotEnv...), "GIT_INDEX_FILE="+tmpIndex)
	for _, args := range [][]string{{"read-tree", commit + "^{tree}"}, {"checkout-index", "--all", "--force", "--quiet"}} {
		if _, err := run(ctx, program, pl, append(append([]string{}, snapshotConfig...), args...)...); err != nil {
			return err
		}
	}
	if keep != "" {
		return os.Rename(tmpIndex, keep)
	}
	return nil
}

// snapshotPlace pins the worktree of repo at path, or for a private git
// directory makes the place (creating it when create), and returns the
// worktree's index file too.
func snapshotPlace(ctx context.Context, repo, gitDir, path string, create bool) (pinned, string, error) {
	if repo != "" {
		pl, err := pin(ctx, repo, path)
		if err != nil {
			return pinned{}, "", err
		}
		return pl, filepath.Join(pl.gitDir, "index"), nil
	}
	if gitDir == "" || !filepath.IsAbs(gitDir) {
		return pinned{}, "", fmt.Errorf("%w: a snapshot without a repository needs an absolute private git directory, not %q", jam.ErrInvalid, gitDir)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return pinned{}, "", failure([]string{"snapshot"}, path, jam.ErrNotFound, "'"+path+"' does not exist")
		}
		return pinned{}, "", err
	}
	pl := place{dir: real, gitDir: gitDir, workTree: real}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if !create {
			return pinned{}, "", failure([]string{"snapshot"}, gitDir, jam.ErrNotFound, "the private git directory '"+gitDir+"' does not exist")
		}
		if err := os.MkdirAll(filepath.Dir(gitDir), 0o700); err != nil {
			return pinned{}, "", err
		}
		// init runs nothing of the (new, empty) directory's: no template.
		if _, err := exe(ctx, program, place{dir: filepath.Dir(gitDir)}, nil, "init", "--quiet", "--bare", "--template=", "--initial-branch="+strings.TrimPrefix(PrivateBranch, "refs/heads/"), "--", gitDir); err != nil {
			return pinned{}, "", err
		}
	} else if err != nil {
		return pinned{}, "", err
	}
	return pinned{place: pl}, filepath.Join(gitDir, "index"), nil
}

// commonDir is the git directory that holds refs and objects.
func commonDir(ctx context.Context, pl place) (string, error) {
	out, err := run(ctx, program, pl, "rev-parse", "--path-format=absolute", "--git-common-dir")
	return strings.TrimSpace(out), err
}

// ExcludePathspecs turns globs into git pathspecs: excludes (for git add,
// beside ".") and includes (the same paths, positively, for git reset).
// Each glob (git's wildmatch: * and ? within a name, ** across
// directories) matches at any depth, and everything under a directory it
// matches; a leading "/" anchors it at the top of the worktree instead. An
// empty glob, one that is only "/", or one holding a NUL or a newline is
// jam.ErrInvalid.
func ExcludePathspecs(globs []string) (excludes, includes []string, err error) {
	for _, g := range globs {
		pattern := strings.TrimPrefix(g, "/")
		if pattern == "" || strings.ContainsAny(g, "\x00\n") {
			return nil, nil, fmt.Errorf("%w: exclusion glob %q: empty or holding a NUL or newline", jam.ErrInvalid, g)
		}
		pattern = strings.TrimSuffix(pattern, "/")
		if !strings.HasPrefix(g, "/") {
			pattern = "**/" + pattern
		}
		for _, p := range []string{pattern, pattern + "/**"} {
			excludes = append(excludes, ":(exclude,glob)"+p)
			includes = append(includes, ":(glob)"+p)
		}
	}
	return excludes, includes, nil
}

// copyFile copies src to dst (a new file).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
