package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// diffConfig pins the configuration that would change the bytes of a
// diff between two trees, so that the same two trees give the same
// output in any repository: prefixes, quoting, context, order, the
// submodule format and the big-file threshold.
var diffConfig = []string{
	"-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
	"-c", "diff.suppressBlankEmpty=false", "-c", "core.quotePath=true",
	"-c", "diff.relative=false", "-c", "diff.submodule=short",
	"-c", "color.ui=false", "-c", "color.diff=false",
	"-c", "core.bigFileThreshold=512m", "-c", "diff.indentHeuristic=true",
}

// diffOptions are the options every diff between two trees carries. The
// context options (-U, --inter-hunk-context) imply a patch, so only the
// patch carries them: with --raw or --numstat they would add one.
var diffOptions = []string{
	"-M", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
	"--src-prefix=a/", "--dst-prefix=b/",
	"--diff-algorithm=myers", "-O/dev/null", "--ignore-submodules=none",
}

// diffArgs builds git diff's arguments: config, "diff", the format
// options, the common options, then the two commits.
func diffArgs(base, end string, format ...string) []string {
	args := append(append([]string{}, diffConfig...), "diff")
	args = append(append(args, format...), diffOptions...)
	return append(args, "--end-of-options", base, end, "--")
}

// Resolve returns the full id of the commit rev names in the repository
// at dir. A rev that names no commit fails with jam.ErrNotFound, one that
// looks like an option with jam.ErrInvalid.
func Resolve(ctx context.Context, dir, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", failure([]string{"rev-parse"}, dir, jam.ErrInvalid, fmt.Sprintf("%q is not a commit id", rev))
	}
	out, err := Run(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	var e *Error
	if errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "" {
		e.Kind, e.Stderr = jam.ErrNotFound, fmt.Sprintf("%q names no commit", rev)
	}
	return out, err
}

// RawEntry is one entry of git diff --raw -z: a path changed between two
// trees.
type RawEntry struct {
	OldMode, NewMode uint32 // git's modes, 0 for an absent side
	OldID, NewID     string // object ids, all zeros for an absent side
	// Status is git's letter: A, M, D, R, T (type change), C, U or X.
	Status byte
	// Score is a rename's or copy's similarity, 0 otherwise.
	Score int
	Path  string
	// OldPath is a rename's or copy's source, "" otherwise.
	OldPath string
}

// DiffRaw lists what changed from the tree of commit base to that of
// commit end in the repository at dir, renames detected (git diff --raw
// -z -M --full-index).
func DiffRaw(ctx context.Context, dir, base, end string) ([]RawEntry, error) {
	out, err := run(ctx, program, at(dir), diffArgs(base, end, "--raw", "-z", "--full-index", "--no-abbrev")...)
	if err != nil {
		return nil, err
	}
	return ParseRaw(out)
}

// ParseRaw decodes git diff --raw -z output: for each entry
// ":OLDMODE NEWMODE OLDID NEWID STATUS" NUL PATH NUL, where a rename or
// copy (status R or C with a score) has two paths, source then
// destination.
func ParseRaw(out string) ([]RawEntry, error) {
	var entries []RawEntry
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" && i == len(fields)-1 {
			break
		}
		meta := strings.Fields(strings.TrimPrefix(f, ":"))
		if !strings.HasPrefix(f, ":") || len(meta) != 5 || meta[4] == "" {
			return nil, fmt.Errorf("git diff --raw: malformed entry %q", f)
		}
		var e RawEntry
		for k, m := range []*uint32{&e.OldMode, &e.NewMode} {
			v, err := strconv.ParseUint(meta[k], 8, 32)
			if err != nil {
				return nil, fmt.Errorf("git diff --raw: malformed mode %q", meta[k])
			}
			*m = uint32(v)
		}
		e.OldID, e.NewID = meta[2], meta[3]
		e.Status = meta[4][0]
		if len(meta[4]) > 1 {
			s, err := strconv.Atoi(meta[4][1:])
			if err != nil {
				return nil, fmt.Errorf("git diff --raw: malformed status %q", meta[4])
			}
			e.Score = s
		}
		paths := 1
		if e.Status == 'R' || e.Status == 'C' {
			paths = 2
		}
		if i+paths >= len(fields) {
			return nil, fmt.Errorf("git diff --raw: entry %q without its path", f)
		}
		if paths == 2 {
			e.OldPath = fields[i+1]
		}
		e.Path = fields[i+paths]
		if e.Path == "" || (paths == 2 && e.OldPath == "") {
			return nil, fmt.Errorf("git diff --raw: entry %q with an empty path", f)
		}
		i += paths
		entries = append(entries, e)
	}
	return entries, nil
}

// NumStat is one entry of git diff --numstat -z.
type NumStat struct {
	Additions, Deletions int
	Binary               bool // git counted no lines: "-" for both
	Path                 string
	OldPath              string // a rename's source, "" otherwise
}

// DiffNumstat counts the lines added and deleted per path from the tree
// of commit base to that of commit end (git diff --numstat -z -M).
func DiffNumstat(ctx context.Context, dir, base, end string) ([]NumStat, error) {
	out, err := run(ctx, program, at(dir), diffArgs(base, end, "--numstat", "-z")...)
	if err != nil {
		return nil, err
	}
	return ParseNumstat(out)
}

// ParseNumstat decodes git diff --numstat -z output: "ADDED TAB DELETED
// TAB PATH NUL", or for a rename "ADDED TAB DELETED TAB NUL SOURCE NUL
// DESTINATION NUL"; a binary file has "-" for both counts.
func ParseNumstat(out string) ([]NumStat, error) {
	var stats []NumStat
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" && i == len(fields)-1 {
			break
		}
		parts := strings.SplitN(f, "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("git diff --numstat: malformed entry %q", f)
		}
		var s NumStat
		if parts[0] == "-" && parts[1] == "-" {
			s.Binary = true
		} else {
			a, err1 := strconv.Atoi(parts[0])
			d, err2 := strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil || a < 0 || d < 0 {
				return nil, fmt.Errorf("git diff --numstat: malformed counts in %q", f)
			}
			s.Additions, s.Deletions = a, d
		}
		if parts[2] != "" {
			s.Path = parts[2]
		} else {
			if i+2 >= len(fields) || fields[i+1] == "" || fields[i+2] == "" {
				return nil, fmt.Errorf("git diff --numstat: rename %q without its paths", f)
			}
			s.OldPath, s.Path = fields[i+1], fields[i+2]
			i += 2
		}
		stats = append(stats, s)
	}
	return stats, nil
}

// DiffPatch writes git diff --binary --full-index -M from the tree of
// commit base to that of commit end to w, as git writes it (not held in
// memory here).
func DiffPatch(ctx context.Context, dir, base, end string, w io.Writer) error {
	return stream(ctx, program, at(dir), nil, w, diffArgs(base, end, "--binary", "--full-index", "-U3", "--inter-hunk-context=0")...)
}

// Diff is one pass of git diff from the tree of commit base to that of
// commit end in the repository at dir, renames detected: it returns what
// [DiffRaw] and [DiffNumstat] return and writes to w what [DiffPatch]
// writes, byte for byte, as git produces it. git diff --raw --numstat -z
// -p writes the raw entries, the counts, one NUL and then the patch; the
// entries and counts (a few dozen bytes a path) are held here, the patch
// is not. One pass reads each changed blob and detects the renames once,
// where three calls would do both three times.
func Diff(ctx context.Context, dir, base, end string, w io.Writer) ([]RawEntry, []NumStat, error) {
	sw := &headSplitter{w: w}
	args := diffArgs(base, end, "--raw", "--numstat", "-z", "--full-index", "--no-abbrev", "--binary", "-U3", "--inter-hunk-context=0")
	if err := stream(ctx, program, at(dir), nil, sw, args...); err != nil {
		return nil, nil, err
	}
	if !sw.done && sw.head.Len() > 0 {
		return nil, nil, fmt.Errorf("git diff: %d bytes of entries and no patch after them", sw.head.Len())
	}
	return ParseRawNumstat(sw.head.String())
}

// headSplitter holds what is written up to the first empty NUL-terminated
// field (two NULs in a row, which no entry of --raw -z or --numstat -z
// has: no path is empty) and passes what follows that NUL on to w.
type headSplitter struct {
	w    io.Writer
	head bytes.Buffer
	// prevNUL says the last byte held was a NUL.
	prevNUL bool
	done    bool
}

func (s *headSplitter) Write(p []byte) (int, error) {
	if s.done {
		return s.w.Write(p)
	}
	for i, c := range p {
		if c == 0 && s.prevNUL {
			s.head.Write(p[:i])
			s.done = true
			n, err := s.w.Write(p[i+1:])
			return i + 1 + n, err
		}
		s.prevNUL = c == 0
	}
	s.head.Write(p)
	return len(p), nil
}

// ParseRawNumstat decodes the entries of git diff --raw --numstat -z: the
// raw entries (see [ParseRaw]), then the counts (see [ParseNumstat]), one
// for each entry, of the same paths in the same order. The counts begin
// at the first field, at an entry's start, that does not begin with ":"
// (a count or "-" does not).
func ParseRawNumstat(out string) ([]RawEntry, []NumStat, error) {
	fields := strings.Split(out, "\x00")
	i := 0
	for i < len(fields) && strings.HasPrefix(fields[i], ":") {
		i++
		if meta := strings.Fields(strings.TrimPrefix(fields[i-1], ":")); len(meta) == 5 && meta[4] != "" && (meta[4][0] == 'R' || meta[4][0] == 'C') {
			i += 2
		} else {
			i++
		}
	}
	if i > len(fields) {
		i = len(fields)
	}
	rawPart := strings.Join(fields[:i], "\x00")
	if i > 0 && i < len(fields) {
		rawPart += "\x00"
	}
	raw, err := ParseRaw(rawPart)
	if err != nil {
		return nil, nil, err
	}
	stats, err := ParseNumstat(strings.Join(fields[i:], "\x00"))
	if err != nil {
		return nil, nil, err
	}
	// Both list the same pairs in the same order.
	if len(stats) != len(raw) {
		return nil, nil, fmt.Errorf("git diff --raw --numstat: %d entries and %d counts", len(raw), len(stats))
	}
	for k := range raw {
		if raw[k].Path != stats[k].Path || raw[k].OldPath != stats[k].OldPath {
			return nil, nil, fmt.Errorf("git diff --raw --numstat: entry %d is %q, its counts are of %q", k, raw[k].Path, stats[k].Path)
		}
	}
	return raw, stats, nil
}

// Blob is one object read by [CatBlobs].
type Blob struct {
	ID   string
	Type string // "blob", or what git says the id names
	Size int64
}

// CatBlobs reads the objects ids names, in order, through one git
// cat-file --batch process, calling fn with each object's header and a
// reader of exactly its bytes (fn need not read them all). A missing
// object fails with jam.ErrNotFound. Objects are read raw: no filter
// runs.
func CatBlobs(ctx context.Context, dir string, ids []string, fn func(Blob, io.Reader) error) error {
	if len(ids) == 0 {
		return nil
	}
	var in strings.Builder
	for _, id := range ids {
		if id == "" || strings.ContainsAny(id, " \t\n\x00") {
			return failure([]string{"cat-file"}, dir, jam.ErrInvalid, fmt.Sprintf("%q is not an object id", id))
		}
		in.WriteString(id + "\n")
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := stream(ctx, program, at(dir), strings.NewReader(in.String()), pw, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	err := readBatch(bufio.NewReaderSize(pr, 64<<10), ids, fn)
	// Unblock git (and so the goroutine) whatever the reader did.
	pr.CloseWithError(errors.New("cat-file reader closed"))
	runErr := <-done
	if err != nil {
		return err
	}
	return runErr
}

func readBatch(r *bufio.Reader, ids []string, fn func(Blob, io.Reader) error) error {
	for _, id := range ids {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: reading the header of %s: %w", id, err)
		}
		line = strings.TrimSuffix(line, "\n")
		if strings.HasSuffix(line, " missing") {
			return failure([]string{"cat-file"}, "", jam.ErrNotFound, "object "+id+" not found")
		}
		parts := strings.Fields(line)
		if len(parts) != 3 {
			return fmt.Errorf("git cat-file: malformed header %q", line)
		}
		size, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("git cat-file: malformed size in %q", line)
		}
		body := io.LimitReader(r, size)
		if err := fn(Blob{ID: parts[0], Type: parts[1], Size: size}, body); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return fmt.Errorf("git cat-file: reading %s: %w", id, err)
		}
		if b, err := r.ReadByte(); err != nil || b != '\n' {
			return fmt.Errorf("git cat-file: object %s not terminated", id)
		}
	}
	return nil
}

// Apply applies the patch in the file patchFile (git diff --binary
// output, paths with a/ and b/ prefixes) to the files under dir with git
// apply --binary, or only checks that it applies with check. dir is a
// working tree or a plain directory; the index is neither read nor
// written. Whitespace is not judged: the patch is applied as it is.
func Apply(ctx context.Context, dir, patchFile string, check bool) error {
	args := []string{"-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "apply", "--binary", "-p1", "--whitespace=nowarn", "--unidiff-zero"}
	if check {
		args = append(args, "--check")
	}
	args = append(args, "--", patchFile)
	_, err := run(ctx, program, at(dir), args...)
	return err
}
