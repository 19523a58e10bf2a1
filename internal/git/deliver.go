package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
)

// Deliveries. [BuildDeliveryCommit] makes the commit a delivery pushes:
// the change between two checkpoint commits applied onto a parent commit,
// in a temporary index of its own (GIT_INDEX_FILE in a directory of its
// own), with the git directory named by GIT_DIR (no discovery: a
// worktree's .git file is never read). No work tree is involved, so no
// live worktree, its index, HEAD or any ref changes; only objects are
// written. It runs hardened like every call, with the snapshot settings
// (see the note on snapshots) and apply's whitespace rules off, so the
// repository's configuration changes nothing of what is built: the same
// parameters give the same commit id.

// DeliveryCommitParams says what to build.
type DeliveryCommitParams struct {
	// GitDir is the git directory holding Parent, From and To.
	GitDir string
	// Parent is the commit the result sits on.
	Parent string
	// From and To are the change set's base and end checkpoint commits:
	// the change is diff(From, To).
	From, To string
	// Message is the subject and body; Trailers are appended as
	// "Key: value" lines after a blank line.
	Message  string
	Trailers [][2]string
	// Name and Email are the author and committer.
	Name, Email string
	// At is the author and committer date (recorded in UTC).
	At time.Time
}

// PatchConflictError is a change set that does not apply onto a parent:
// the paths git apply refused. It is jam.ErrConflict.
type PatchConflictError struct {
	Parent string
	// Paths are the paths git named, in its order, each once; none when
	// its message named none.
	Paths []string
	// Err is git apply's failure.
	Err error
}

func (e *PatchConflictError) Error() string {
	what := "the change set does not apply onto " + e.Parent
	if len(e.Paths) > 0 {
		what += " at " + strings.Join(e.Paths, ", ")
	}
	return what + ": " + e.Err.Error()
}

// Unwrap exposes jam.ErrConflict and git's error.
func (e *PatchConflictError) Unwrap() []error { return []error{jam.ErrConflict, e.Err} }

// trailerKey is what git interpret-trailers takes as a token.
var trailerKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// DeliveryMessage is the commit message of p: Message without trailing
// white space, a blank line, then one "Key: value" line per trailer,
// ending in a newline. A key that is not a token, a value holding a line
// break or a NUL, or an empty message is jam.ErrInvalid.
func DeliveryMessage(message string, trailers [][2]string) (string, error) {
	msg := strings.TrimRight(message, " \t\r\n")
	if strings.TrimSpace(msg) == "" {
		return "", fmt.Errorf("%w: a delivery commit needs a message", jam.ErrInvalid)
	}
	if strings.ContainsRune(msg, 0) || !utf8.ValidString(msg) {
		return "", fmt.Errorf("%w: a delivery commit's message must be UTF-8 without NUL", jam.ErrInvalid)
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString("\n")
	for i, t := range trailers {
		if !trailerKey.MatchString(t[0]) {
			return "", fmt.Errorf("%w: trailer key %q is not a token of letters, digits and '-'", jam.ErrInvalid, t[0])
		}
		v := strings.TrimSpace(t[1])
		if v == "" || strings.ContainsAny(v, "\r\n\x00") || !utf8.ValidString(v) {
			return "", fmt.Errorf("%w: trailer %s: its value must be one non-empty line", jam.ErrInvalid, t[0])
		}
		if i == 0 {
			b.WriteString("\n")
		}
		b.WriteString(t[0] + ": " + v + "\n")
	}
	return b.String(), nil
}

// validIdent checks an author's name or email as git would write it.
func validIdent(what, v string) error {
	if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "<>\r\n\x00") || !utf8.ValidString(v) {
		return fmt.Errorf("%w: delivery commit %s %q: empty, or holding <, >, a line break or NUL", jam.ErrInvalid, what, v)
	}
	return nil
}

// BuildDeliveryCommit applies diff(From, To) (binary, full index,
// renames) onto Parent's tree in a temporary index (read-tree Parent;
// apply --cached --binary; write-tree; commit-tree) and returns the new
// commit and its tree. Deterministic: the same params give the same
// commit id, so a resumed job rebuilds the same commit. A patch that does
// not apply is a [*PatchConflictError] (jam.ErrConflict) naming the
// paths. It stores nothing but objects: no ref, no index, no work tree.
// Equal trees of From and To give a commit of Parent's tree.
func BuildDeliveryCommit(ctx context.Context, p DeliveryCommitParams) (commit, tree string, err error) {
	msg, err := DeliveryMessage(p.Message, p.Trailers)
	if err != nil {
		return "", "", err
	}
	if err := validIdent("name", p.Name); err != nil {
		return "", "", err
	}
	if err := validIdent("email", p.Email); err != nil {
		return "", "", err
	}
	if p.At.IsZero() {
		return "", "", fmt.Errorf("%w: a delivery commit needs its date", jam.ErrInvalid)
	}
	pl, err := gitDirPlace(p.GitDir)
	if err != nil {
		return "", "", err
	}
	var ids [3]string
	for i, rev := range []string{p.Parent, p.From, p.To} {
		if ids[i], err = resolveAt(ctx, pl, rev); err != nil {
			return "", "", fmt.Errorf("delivery commit: %s: %w", [3]string{"parent", "from", "to"}[i], err)
		}
	}
	parent, from, to := ids[0], ids[1], ids[2]

	tmp, err := os.MkdirTemp("", "jam-deliver-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	ip := pl
	ip.env = append(append(append([]string{}, pl.env...), snapshotEnv...), "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
	git := func(stdin []byte, args ...string) (string, error) {
		var out bytes.Buffer
		var in io.Reader // nil, not a nil *bytes.Reader: no input
		if stdin != nil {
			in = bytes.NewReader(stdin)
		}
		err := stream(ctx, program, ip, in, &out, append(append([]string{}, snapshotConfig...), args...)...)
		return strings.TrimSpace(out.String()), err
	}
	if _, err := git(nil, "read-tree", parent+"^{tree}"); err != nil {
		return "", "", err
	}
	patchFile := filepath.Join(tmp, "change.patch")
	f, err := os.OpenFile(patchFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", "", err
	}
	err = stream(ctx, program, pl, nil, f, diffArgs(from, to, "--binary", "--full-index", "-U3", "--inter-hunk-context=0")...)
	size := int64(0)
	if fi, serr := f.Stat(); serr == nil {
		size = fi.Size()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", fmt.Errorf("delivery commit: diff: %w", err)
	}
	if size > 0 {
		_, err := git(nil, "-c", "apply.whitespace=nowarn", "-c", "apply.ignoreWhitespace=no", "-c", "core.safecrlf=false",
			"apply", "--cached", "--binary", "-p1", "--whitespace=nowarn", "--", patchFile)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.ExitCode > 0 {
				return "", "", &PatchConflictError{Parent: parent, Paths: ApplyConflictPaths(e.Stderr), Err: err}
			}
			return "", "", err
		}
	}
	if tree, err = git(nil, "write-tree"); err != nil {
		return "", "", err
	}
	date := strconv.FormatInt(p.At.Unix(), 10) + " +0000"
	ip.env = append(ip.env,
		"GIT_AUTHOR_NAME="+p.Name, "GIT_AUTHOR_EMAIL="+p.Email, "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME="+p.Name, "GIT_COMMITTER_EMAIL="+p.Email, "GIT_COMMITTER_DATE="+date)
	// The message goes on standard input: commit-tree keeps it byte for
	// byte (no clean-up, no comment stripping).
	if commit, err = git([]byte(msg), "commit-tree", tree, "-p", parent); err != nil {
		return "", "", err
	}
	return commit, tree, nil
}

// gitDirPlace is the place of a git directory named as such: GIT_DIR set,
// so git neither discovers another repository nor reads a worktree's
// .git file.
func gitDirPlace(gitDir string) (place, error) {
	if gitDir == "" || !filepath.IsAbs(gitDir) {
		return place{}, fmt.Errorf("%w: git directory %q is not an absolute path", jam.ErrInvalid, gitDir)
	}
	fi, err := os.Stat(gitDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return place{}, failure([]string{"rev-parse"}, gitDir, jam.ErrNotFound, "the git directory '"+gitDir+"' does not exist")
		}
		return place{}, err
	}
	if !fi.IsDir() {
		return place{}, failure([]string{"rev-parse"}, gitDir, jam.ErrInvalid, "'"+gitDir+"' is not a git directory")
	}
	return place{dir: gitDir, env: []string{"GIT_DIR=" + gitDir}}, nil
}

// resolveAt returns the full id of the commit rev names at pl; one that
// names none is jam.ErrNotFound, one that looks like an option
// jam.ErrInvalid.
func resolveAt(ctx context.Context, pl place, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", failure([]string{"rev-parse"}, pl.dir, jam.ErrInvalid, fmt.Sprintf("%q is not a commit id", rev))
	}
	out, err := run(ctx, program, pl, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	var e *Error
	if errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "" {
		e.Kind, e.Stderr = jam.ErrNotFound, fmt.Sprintf("%q names no commit", rev)
	}
	return strings.TrimSpace(out), err
}

// applyRefusals are git apply's messages that name a path that does not
// take the patch.
var applyRefusals = []*regexp.Regexp{
	regexp.MustCompile(`^error: patch failed: (.+):[0-9]+$`),
	regexp.MustCompile(`^error: (.+): (?:patch does not apply|does not exist in index|already exists in index|does not match index|wrong type|No such file or directory)$`),
	regexp.MustCompile(`^error: cannot apply binary patch to '(.+)' without full index line$`),
	regexp.MustCompile(`^error: the patch applies to '(.+)' \([0-9a-f]+\), which does not match the current contents\.$`),
	regexp.MustCompile(`^error: binary patch to '(.+)' creates incorrect result`),
}

// ApplyConflictPaths returns the paths git apply's standard error names
// as not taking the patch, in order, each once.
func ApplyConflictPaths(stderr string) []string {
	var paths []string
	seen := map[string]bool{}
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, re := range applyRefusals {
			m := re.FindStringSubmatch(line)
			if m == nil || m[1] == "" || seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			paths = append(paths, m[1])
			break
		}
	}
	return paths
}

// TreeEntry is one entry of git ls-tree -r -z: a file (blob) or a
// submodule (commit) of a tree, with its full path.
type TreeEntry struct {
	Mode uint32
	Type string // "blob" or "commit"
	ID   string
	Path string
}

// ListTree calls fn with every file and submodule of commit's tree (git
// ls-tree -r -z --full-tree), in git's order, as git writes them: the
// listing is not held in memory. fn's error stops the listing and is
// returned. A rev that names no commit is jam.ErrNotFound.
func ListTree(ctx context.Context, dir, commit string, fn func(TreeEntry) error) error {
	if commit == "" || strings.HasPrefix(commit, "-") {
		return failure([]string{"ls-tree"}, dir, jam.ErrInvalid, fmt.Sprintf("%q is not a commit id", commit))
	}
	w := &treeWriter{fn: fn}
	err := stream(ctx, program, at(dir), nil, w, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit+"^{commit}")
	if w.err != nil {
		return w.err
	}
	if err != nil {
		return err
	}
	if len(w.partial) > 0 {
		return fmt.Errorf("git ls-tree: %d bytes after the last entry", len(w.partial))
	}
	return nil
}

// maxTreeEntry bounds one entry of ls-tree (mode, type, id and a path).
const maxTreeEntry = 64 << 10

// treeWriter decodes NUL-terminated ls-tree entries as git writes them.
type treeWriter struct {
	fn      func(TreeEntry) error
	partial []byte
	err     error
}

func (w *treeWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) > maxTreeEntry {
				w.err = fmt.Errorf("git ls-tree: an entry over %d bytes", maxTreeEntry)
				return 0, w.err
			}
			break
		}
		rec := p[:i]
		if len(w.partial) > 0 {
			rec = append(w.partial, rec...)
			w.partial = nil
		}
		p = p[i+1:]
		e, err := ParseTreeEntry(string(rec))
		if err == nil {
			err = w.fn(e)
		}
		if err != nil {
			w.err = err
			return 0, err
		}
	}
	return n, nil
}

// ParseTreeEntry decodes one entry of git ls-tree -z (without its NUL):
// "MODE SP TYPE SP ID TAB PATH".
func ParseTreeEntry(rec string) (TreeEntry, error) {
	meta, path, ok := strings.Cut(rec, "\t")
	parts := strings.Split(meta, " ")
	if !ok || path == "" || len(parts) != 3 {
		return TreeEntry{}, fmt.Errorf("git ls-tree: malformed entry %q", rec)
	}
	mode, err := strconv.ParseUint(parts[0], 8, 32)
	if err != nil || len(parts[0]) != 6 {
		return TreeEntry{}, fmt.Errorf("git ls-tree: malformed mode %q", parts[0])
	}
	id := parts[2]
	if (len(id) != 40 && len(id) != 64) || strings.Trim(id, "0123456789abcdef") != "" {
		return TreeEntry{}, fmt.Errorf("git ls-tree: malformed object id %q", id)
	}
	switch parts[1] {
	case "blob", "commit", "tree":
	default:
		return TreeEntry{}, fmt.Errorf("git ls-tree: unknown object type %q", parts[1])
	}
	return TreeEntry{Mode: uint32(mode), Type: parts[1], ID: id, Path: path}, nil
}
