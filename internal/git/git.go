package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// program is the git executable, looked up on PATH.
const program = "git"

// waitDelay bounds how long a cancelled or finished command may keep its
// output pipes open (a hook's grandchild can hold them).
const waitDelay = 5 * time.Second

// Error is a git command that failed: it ran and exited non-zero, or it
// could not be started. It wraps Kind (one of jam's sentinel errors, or
// nil when git's message matched none) and Err (the *exec.ExitError or the
// start error).
type Error struct {
	// Args are the arguments after "git -C Dir".
	Args []string
	// Dir is the directory git ran in.
	Dir string
	// ExitCode is git's exit status, or -1 when it did not run to the end.
	ExitCode int
	// Stderr is what git wrote to its standard error, trimmed.
	Stderr string
	// Kind classifies the failure for callers and the control API.
	Kind error
	// Err is the underlying error.
	Err error
}

// Error reads "git SUBCOMMAND: GIT'S MESSAGE", or the underlying error when
// git wrote nothing.
func (e *Error) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return "git " + subcommand(e.Args) + ": " + msg
}

// Unwrap exposes both the kind and the underlying error to errors.Is.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// subcommand names the command for messages: "commit", "worktree add".
func subcommand(args []string) string {
	for len(args) >= 2 && args[0] == "-c" {
		args = args[2:]
	}
	switch {
	case len(args) == 0:
		return ""
	case len(args) >= 2 && args[0] == "worktree" && !strings.HasPrefix(args[1], "-"):
		return args[0] + " " + args[1]
	default:
		return args[0]
	}
}

// Run runs git with args in dir (as git -C dir) and returns its standard
// output with surrounding white space trimmed. A failure is an [*Error].
func Run(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := run(ctx, program, dir, args...)
	return strings.TrimSpace(out), err
}

// run is Run with the executable named (so tests can name one that does
// not exist) and the output untrimmed.
func run(ctx context.Context, bin, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"-C", dir}, args...)...)
	cmd.Env = environ(os.Environ())
	cmd.WaitDelay = waitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("git %s: %w", subcommand(args), context.Cause(ctx))
	}
	e := &Error{Args: args, Dir: dir, ExitCode: -1, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		e.ExitCode = exit.ExitCode()
		e.Kind = classify(e.Stderr)
	case errors.Is(err, exec.ErrNotFound):
		e.Kind = jam.ErrUnavailable
		e.Stderr = "the git program is not installed (or not on PATH); jam needs it for worktrees"
	}
	return "", e
}

// isolated are the variables that would point git at another repository,
// index or object store than the directory it is given.
var isolated = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_PREFIX",
	"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
	"GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "LC_ALL", "LANGUAGE",
}

// environ returns the environment git runs with: base without the
// isolated variables, plus the settings the package doc lists.
func environ(base []string) []string {
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if isIsolated(name) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "LANGUAGE=")
}

func isIsolated(name string) bool {
	for _, v := range isolated {
		if name == v {
			return true
		}
	}
	// GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n go with GIT_CONFIG_COUNT.
	return strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_")
}

// kinds maps fragments of git's messages (in the C locale, lower-cased) to
// jam's sentinels. The first match wins, so the more specific come first.
var kinds = []struct {
	fragment string
	kind     error
}{
	{"not a git repository", jam.ErrInvalid},
	{"cannot change to", jam.ErrNotFound},
	{"index.lock", jam.ErrConflict},
	{"is locked", jam.ErrConflict},
	{"locked working tree", jam.ErrConflict},
	{"contains modified or untracked files", jam.ErrConflict},
	{"already exists", jam.ErrAlreadyExists},
	{"already checked out", jam.ErrConflict},
	{"already used by worktree", jam.ErrConflict},
	{"not a valid object name", jam.ErrNotFound},
	{"invalid object name", jam.ErrNotFound},
	{"invalid reference", jam.ErrNotFound},
	{"unknown revision", jam.ErrNotFound},
	{"bad revision", jam.ErrNotFound},
	{"needed a single revision", jam.ErrNotFound},
	{"is not a working tree", jam.ErrNotFound},
	{"not found", jam.ErrNotFound},
	{"does not exist", jam.ErrNotFound},
	{"is not a valid branch name", jam.ErrInvalid},
	{"not a valid branch name", jam.ErrInvalid},
}

// classify picks the sentinel for git's standard error, or nil.
func classify(stderr string) error {
	s := strings.ToLower(stderr)
	for _, k := range kinds {
		if strings.Contains(s, k.fragment) {
			return k.kind
		}
	}
	return nil
}
