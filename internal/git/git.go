package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
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
// git finds the repository from dir as it always does, so dir must be one
// jam trusts (a repository the person named); a session's worktree goes
// through [Status], [CommitAll] and [WorktreeRemove], which pin it.
func Run(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := run(ctx, program, at(dir), args...)
	return strings.TrimSpace(out), err
}

// place is where a command runs: git -C dir, and for a session's
// worktree the repository pinned: gitDir and workTree are passed as
// --git-dir and --work-tree, so git reads neither the worktree's .git
// file nor core.worktree.
type place struct {
	dir, gitDir, workTree string
	// env is added to the environment after [environ] (a later value
	// wins): the temporary index and fixed identity of a snapshot.
	env []string
	// extra are open files the command (and the processes it starts)
	// inherits as descriptors 3, 4, ...: the pipe a push's credential
	// helper reads. Only the command itself gets them, not the listing
	// of its configuration.
	extra []*os.File
}

// at is the place of a directory jam trusts, found by git's discovery.
func at(dir string) place { return place{dir: dir} }

// args are git's options that put it at p.
func (p place) args() []string {
	if p.gitDir == "" {
		return []string{"-C", p.dir}
	}
	return []string{"-C", p.dir, "--git-dir=" + p.gitDir, "--work-tree=" + p.workTree}
}

// hardening is the command-line configuration every call carries. The
// command scope beats the system, global, repository and worktree files
// and whatever they include, so each setting that names a program is
// switched off or emptied here: hooks (all of them: git looks for
// /dev/null/<hook>), the file system monitor, the pager, editors, ssh,
// askpass, credential helpers, the external diff, the alternate refs
// command, the pack-objects hook, signing, automatic gc and maintenance
// (which start more git processes), every transport (so a partial clone's
// lazy fetch cannot reach a remote helper or ssh), and recursion into
// submodules, whose configuration lives in the worktree.
var hardening = []string{
	"core.fsmonitor=false",
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.editor=:",
	"sequence.editor=:",
	"core.sshCommand=",
	"core.askPass=",
	"credential.helper=",
	"diff.external=",
	"core.alternateRefsCommand=",
	"uploadpack.packObjectsHook=",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"protocol.allow=never",
	"submodule.recurse=false",
	"diff.ignoreSubmodules=dirty",
	"status.submoduleSummary=false",
}

// run is Run at a place, with the executable named (so tests can name one
// that does not exist) and the output untrimmed, held in memory.
func run(ctx context.Context, bin string, p place, args ...string) (string, error) {
	var stdout bytes.Buffer
	if err := stream(ctx, bin, p, nil, &stdout, args...); err != nil {
		return "", err
	}
	return stdout.String(), nil
}

// stream is the one way a command of the package runs: at p, with
// standard input from stdin (nil for none) and standard output written
// to stdout as git produces it. It first lists the names of the
// effective configuration (see [drivers]) and then runs the command with
// every driver found overridden.
func stream(ctx context.Context, bin string, p place, stdin io.Reader, stdout io.Writer, args ...string) error {
	lp := p
	lp.extra = nil
	names, err := exe(ctx, bin, lp, nil, "config", "--list", "--name-only", "--includes", "-z")
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Args = args // reading the configuration is part of running the command
		}
		return err
	}
	return execute(ctx, bin, p, drivers(names), stdin, stdout, args...)
}

// exe runs one git command at p without listing the configuration first
// (the listing itself, and init, which has no configuration yet to
// list), its output held in memory.
func exe(ctx context.Context, bin string, p place, overrides [][2]string, args ...string) (string, error) {
	var stdout bytes.Buffer
	if err := execute(ctx, bin, p, overrides, nil, &stdout, args...); err != nil {
		return "", err
	}
	return stdout.String(), nil
}

// command builds the hardened command of every call: git at p with the
// hardening, then args; the environment of [environ], then p's own, then
// the configuration overrides (name and value pairs, passed as
// GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n so a subsection's name is never
// parsed); standard input closed unless the caller sets it.
func command(ctx context.Context, bin string, p place, overrides [][2]string, args []string) *exec.Cmd {
	argv := append(p.args(), "--no-pager")
	for _, h := range hardening {
		argv = append(argv, "-c", h)
	}
	cmd := exec.CommandContext(ctx, bin, append(argv, args...)...)
	cmd.Env = append(environ(os.Environ()), p.env...)
	if len(overrides) > 0 {
		cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(overrides)))
		for i, o := range overrides {
			n := strconv.Itoa(i)
			cmd.Env = append(cmd.Env, "GIT_CONFIG_KEY_"+n+"="+o[0], "GIT_CONFIG_VALUE_"+n+"="+o[1])
		}
	}
	cmd.ExtraFiles = p.extra
	cmd.WaitDelay = waitDelay
	return cmd
}

// execute runs the [command] of args at p with stdin and stdout, and
// turns a failure into an [*Error] (or, once ctx is done, the context's
// cause).
func execute(ctx context.Context, bin string, p place, overrides [][2]string, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := command(ctx, bin, p, overrides, args)
	stderr := cappedBuffer{max: maxStderr}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("git %s: %w", subcommand(args), context.Cause(ctx))
	}
	e := &Error{Args: args, Dir: p.dir, ExitCode: -1, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		e.ExitCode = exit.ExitCode()
		e.Kind = classify(e.Stderr)
	case errors.Is(err, exec.ErrNotFound):
		e.Kind = jam.ErrUnavailable
		e.Stderr = "the git program is not installed (or not on PATH); jam needs it for worktrees"
	}
	return e
}

// maxStderr bounds what is kept of a command's standard error (a remote
// can send any amount of "remote:" lines): its first and last halves.
const maxStderr = 64 << 10

// cappedBuffer keeps the first and the last max/2 bytes written to it and
// counts what it dropped between them.
type cappedBuffer struct {
	max     int
	head    []byte
	tail    []byte
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max/2 - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - b.max/2; over > 0 {
		b.dropped += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

// String is what was kept, with a note of how much was dropped.
func (b *cappedBuffer) String() string {
	if b.dropped == 0 {
		return string(b.head) + string(b.tail)
	}
	return string(b.head) + "\n[... " + strconv.FormatInt(b.dropped, 10) + " bytes dropped ...]\n" + string(b.tail)
}

// driverKeys are the variables of a named driver (a subsection whose name
// attributes give, unknown in advance) that name a program, with the
// value that switches each off. An empty command makes git skip a filter
// and refuse (not run) a diff driver; a filter marked required would
// then fail, so required is turned off too.
var driverKeys = map[string]map[string]string{
	"filter":     {"clean": "", "smudge": "", "process": "", "required": "false"},
	"diff":       {"command": "", "textconv": ""},
	"merge":      {"driver": ""},
	"credential": {"helper": ""},
	"gpg":        {"program": ""},
	"hook":       {"command": ""},
}

// drivers returns the overrides for the driver variables among names (git
// config --list --name-only -z: NUL-terminated names, section and
// variable lower-cased, subsection as written), each once.
func drivers(names string) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, name := range strings.Split(names, "\x00") {
		section, rest, ok := strings.Cut(name, ".")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue // no subsection: the two-level names are in hardening
		}
		section, key := strings.ToLower(section), strings.ToLower(rest[i+1:])
		value, ok := driverKeys[section][key]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, [2]string{name, value})
	}
	return out
}

// isolated are the variables that would point git at another repository,
// index, object store or configuration than the ones it is given, or name
// a program for it to run.
var isolated = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_PREFIX",
	"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_SYSTEM",
	"GIT_CONFIG_NOSYSTEM", "GIT_ATTR_NOSYSTEM", "GIT_ATTR_SOURCE", "GIT_REPLACE_REF_BASE",
	"GIT_NO_REPLACE_OBJECTS", "GIT_SHALLOW_FILE", "GIT_QUARANTINE_PATH",
	"GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT",
	"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF",
	"GIT_PROXY_COMMAND", "GIT_ALLOW_PROTOCOL", "GIT_PROTOCOL_FROM_USER", "GIT_NO_LAZY_FETCH",
	"GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "LC_ALL", "LANGUAGE",
}

// environ returns the environment git runs with: base without the
// isolated variables, plus the settings the package doc lists.
func environ(base []string) []string {
	env := make([]string, 0, len(base)+len(settings))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if isIsolated(name) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, settings...)
}

// settings are the variables every git call gets.
var settings = []string{
	"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "LANGUAGE=",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1",
	"GIT_NO_LAZY_FETCH=1", "GIT_PROTOCOL_FROM_USER=0",
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
