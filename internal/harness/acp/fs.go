package acp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/harness/jsonrpc"
	"github.com/jamhq/jam/internal/jam"
)

// MaxReadBytes bounds a file fs/read_text_file reads: a larger one is
// refused before any of it is read.
const MaxReadBytes = 8 << 20

// maxReadEncoded bounds a read's answer as JSON text: control bytes and
// invalid UTF-8 take six bytes each there, so a file within MaxReadBytes
// could still become an answer of 48 MiB.
const maxReadEncoded = 2 * MaxReadBytes

// maxLinks bounds the symbolic links followed while resolving one path.
const maxLinks = 40

// CodeResourceNotFound is ACP's error code for a file that does not exist.
const CodeResourceNotFound = -32002

// Reasons of a refused file request, in its error's data ({"reason": …}).
// They are stable: an agent may act on them.
const (
	// ReasonOutside: the path is not inside the session's directory, or a
	// symbolic link on it leads out.
	ReasonOutside = "outside_session"
	// ReasonGit: the path, or a symbolic link on it, names a .git entry.
	ReasonGit = "git_path"
	// ReasonNotRegular: the file is a directory, a FIFO, a device or a
	// socket.
	ReasonNotRegular = "not_regular"
	// ReasonTooLarge: the file is over MaxReadBytes, or its content would
	// be over twice that as JSON.
	ReasonTooLarge = "too_large"
	// ReasonNotFound: the file does not exist (code CodeResourceNotFound).
	ReasonNotFound = "not_found"
)

// refusal is the JSON-RPC error of a refused file request.
func refusal(code int, reason, format string, args ...any) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]string{"reason": reason})
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...), Data: data}
}

func errOutside(path string) error {
	return refusal(jsonrpc.CodeInvalidParams, ReasonOutside, "path %q is outside the session's working directory", path)
}

func errGit(path string) error {
	return refusal(jsonrpc.CodeInvalidParams, ReasonGit, "path %q is in a .git entry, which the file service does not serve", path)
}

func errNotRegular(path string) error {
	return refusal(jsonrpc.CodeInvalidParams, ReasonNotRegular, "path %q is not a regular file", path)
}

// sessionRoot returns dir absolute with its symlinks resolved.
func sessionRoot(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: session directory %q is not absolute", jam.ErrInvalid, dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%w: session directory: %v", jam.ErrInvalid, err)
	}
	return root, nil
}

// sessionFS serves one session's file requests. Every read and write goes
// through root, an os.Root opened on the session's directory when the
// session opened: the kernel resolves each path beneath that directory, so
// a directory swapped for a symbolic link while a request runs cannot
// lead it out. Before that, resolve follows the links of a path itself, to
// refuse any that lead to a .git entry (or out) and to allow absolute
// links that stay inside, which os.Root alone refuses. A link swapped in
// between the two can still redirect a request inside the directory
// (never out of it), .git included: only a process that writes the
// directory itself can do that, and it could as well write .git directly;
// what stops an agent's .git from running code is how jam runs git.
//
// A directory removed and made again at the same path (a worktree archived
// and restored) is followed: a request first checks that the path still
// names the directory open, and otherwise opens the one there now, if it
// is a directory and not a link.
type sessionFS struct {
	dir string // the directory, absolute, symlinks resolved

	mu       sync.Mutex
	root     *os.Root   // guarded by mu: opened on dir
	replaced []*os.Root // guarded by mu: roots of earlier directories, which requests may still use
	closed   bool       // guarded by mu
}

func openSessionFS(dir string) (*sessionFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: session directory: %v", jam.ErrInvalid, err)
	}
	return &sessionFS{dir: dir, root: root}, nil
}

func (s *sessionFS) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, r := range s.replaced {
		_ = r.Close()
	}
	return s.root.Close()
}

// current returns the root of the directory the session's path names now.
func (s *sessionFS) current() *os.Root {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.root // closed: its operations fail
	}
	now, err := os.Lstat(s.dir)
	if err != nil || !now.IsDir() {
		return s.root // gone, or a link: requests fail on the old one
	}
	if open, err := s.root.Stat("."); err == nil && os.SameFile(open, now) {
		return s.root
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return s.root
	}
	// The directory opened must be the one judged: not a link swapped in
	// between.
	if opened, err := r.Stat("."); err != nil || !os.SameFile(opened, now) {
		_ = r.Close()
		return s.root
	}
	s.replaced = append(s.replaced, s.root)
	s.root = r
	return r
}

// isGitName reports whether a path component names a .git entry, as git
// itself judges names on the file systems it protects: case-insensitively,
// with trailing dots and spaces (NTFS) and the code points HFS+ ignores
// dropped, and the short name git~1.
func isGitName(name string) bool {
	if len(name) < 4 {
		return false
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			continue // ignored by HFS+
		}
		b.WriteRune(r)
	}
	n := strings.ToLower(strings.TrimRight(b.String(), ". "))
	return n == ".git" || n == "git~1"
}

// resolve maps a path the agent sent to a path relative to the session's
// directory with no symbolic link in it (as the directory stands now):
// the path must be absolute and inside the directory, no component of it
// or of a link it passes may name a .git entry, and no link may lead out.
// What does not exist yet is kept as written.
func (s *sessionFS) resolve(root *os.Root, path string) (string, error) {
	if !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", refusal(jsonrpc.CodeInvalidParams, ReasonOutside, "path %q is not absolute", path)
	}
	rel, ok := s.local(path)
	if !ok {
		return "", errOutside(path)
	}
	todo := split(rel)
	var done []string // resolved components: each exists and is no link, or does not exist
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errOutside(path)
			}
			done = done[:len(done)-1]
			continue
		}
		if isGitName(c) {
			return "", errGit(path)
		}
		cur := filepath.Join(append(done, c)...)
		fi, err := root.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			done = append(done, c)
			continue
		case err != nil:
			return "", s.fail(path, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", refusal(jsonrpc.CodeInvalidParams, ReasonOutside, "path %q: too many levels of symbolic links", path)
		}
		target, err := root.Readlink(cur)
		if err != nil {
			return "", s.fail(path, err)
		}
		if filepath.IsAbs(target) {
			t, ok := s.local(target)
			if !ok {
				return "", errOutside(path)
			}
			done, target = nil, t
		}
		todo = append(split(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}

// local returns an absolute path relative to the session's directory, if
// it is inside.
func (s *sessionFS) local(path string) (string, bool) {
	rel, err := filepath.Rel(s.dir, filepath.Clean(path))
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}

func split(p string) []string { return strings.Split(filepath.ToSlash(p), "/") }

// fail turns the error of an operation on the root into the agent's.
func (s *sessionFS) fail(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refusal(CodeResourceNotFound, ReasonNotFound, "path %q does not exist", path)
	case strings.Contains(err.Error(), "path escapes"):
		// os.Root refused: a link changed under the request.
		return errOutside(path)
	case errors.Is(err, syscall.ELOOP):
		return refusal(jsonrpc.CodeInvalidParams, ReasonOutside, "path %q: too many levels of symbolic links", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the op and the relative name add nothing for the agent
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("path %q: %v", path, err)}
}

// read returns the content of a regular file of at most MaxReadBytes.
// Opening does not block (O_NONBLOCK, so a FIFO is refused, not waited
// on), the type and size are judged on the opened file, and the read is
// bounded whatever the file does meanwhile.
func (s *sessionFS) read(path string) (string, error) {
	root := s.current()
	rel, err := s.resolve(root, path)
	if err != nil {
		return "", err
	}
	// Judged before opening too: opening a device may act on it.
	if fi, err := root.Lstat(rel); err != nil {
		return "", s.fail(path, err)
	} else if !fi.Mode().IsRegular() {
		return "", errNotRegular(path)
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return "", s.fail(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", s.fail(path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", errNotRegular(path)
	}
	if fi.Size() > MaxReadBytes {
		return "", refusal(jsonrpc.CodeInvalidParams, ReasonTooLarge, "path %q is %d bytes, over the %d the file service reads", path, fi.Size(), MaxReadBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", s.fail(path, err)
	}
	if len(b) > MaxReadBytes {
		return "", refusal(jsonrpc.CodeInvalidParams, ReasonTooLarge, "path %q is over the %d bytes the file service reads", path, MaxReadBytes)
	}
	return string(b), nil
}

// write replaces a regular file's content atomically (a temporary file
// renamed over it, in the same directory, held open as its own root),
// creating its directories; an existing file keeps its mode.
func (s *sessionFS) write(path, content string) error {
	root := s.current()
	rel, err := s.resolve(root, path)
	if err != nil {
		return err
	}
	if rel == "." {
		return errNotRegular(path)
	}
	dir, base := filepath.Split(rel)
	if dir = filepath.Clean(dir); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return s.fail(path, err)
		}
	}
	parent, err := root.OpenRoot(dir)
	if err != nil {
		return s.fail(path, err)
	}
	defer parent.Close()
	mode := os.FileMode(0o644)
	if fi, err := parent.Lstat(base); err == nil {
		if !fi.Mode().IsRegular() {
			return errNotRegular(path)
		}
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return s.fail(path, err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".jam-write-" + hex.EncodeToString(rnd[:])
	f, err := parent.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return s.fail(path, err)
	}
	defer parent.Remove(tmp) //nolint:errcheck // gone after the rename
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Chmod(mode) // on the descriptor: no path to race
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = parent.Rename(tmp, base)
	}
	if err != nil {
		return s.fail(path, err)
	}
	return nil
}

// jsonLen is the length of s as a JSON string (as encoding/json writes
// it, HTML characters escaped), without building it.
func jsonLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// sliceLines returns limit lines of s from 1-based line (all when nil).
func sliceLines(s string, line, limit *int) string {
	if line == nil && limit == nil {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	start := 0
	if line != nil && *line > 1 {
		start = min(*line-1, len(lines))
	}
	end := len(lines)
	if limit != nil && *limit >= 0 {
		end = min(start+*limit, len(lines))
	}
	return strings.Join(lines[start:end], "")
}
