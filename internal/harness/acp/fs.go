package acp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jamhq/jam/internal/harness/jsonrpc"
	"github.com/jamhq/jam/internal/jam"
)

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

// errOutside refuses a path outside the session's directory.
func errOutside(path string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("path %q is outside the session's working directory", path)}
}

// confine maps a path the agent sent to a real path inside its session's
// directory: it must be absolute, and neither ".." nor a symlink may lead
// out. A file that does not exist yet is judged by its deepest existing
// ancestor.
func (a *Agent) confine(sessionID, path string) (string, error) {
	a.mu.Lock()
	s, ok := a.sessions[sessionID]
	a.mu.Unlock()
	if !ok {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown session"}
	}
	return confineTo(s.root, path)
}

func confineTo(root, path string) (string, error) {
	if !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("path %q is not absolute", path)}
	}
	clean := filepath.Clean(path)
	if !within(root, clean) {
		return "", errOutside(path)
	}
	// Resolve the deepest part that exists; what is below it cannot be a
	// symlink yet.
	existing, rest := clean, ""
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			full := filepath.Join(real, rest)
			if !within(root, full) {
				return "", errOutside(path)
			}
			return full, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("path %q: %v", path, err)}
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", errOutside(path)
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// writeFile replaces path's content atomically, creating its directories;
// an existing file keeps its mode.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".jam-write-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
