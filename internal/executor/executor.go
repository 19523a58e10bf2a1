// Package executor is the seam through which an owned agent's process is
// started: an Executor turns a Spec (argv, working directory, environment,
// the directories the process may write, the ones it may read, whether it
// may reach the network) into an *exec.Cmd the caller wires and starts.
//
// Invariants every implementation keeps, and executortest.Exercise checks:
//   - the process runs in Spec.Dir and sees exactly Spec.Env: nothing of
//     the starting process's own environment is added;
//   - the returned command leads its own process group, so signalling the
//     group reaches every process the agent starts;
//   - values of the environment never appear in the command's argv (they
//     are credentials; argv is world-readable in /proc).
//
// An agent process never outlives the daemon. What guarantees what:
//   - Start forks every process from one OS thread that lives as long as
//     any process it started, and both executors set a parent-death
//     signal on it (bwrap SIGKILL, local's shim SIGTERM, which it
//     catches): when the daemon dies, however it dies (SIGKILL included),
//     the kernel signals the process it started, the group's leader, and
//     that ends the group. (The signal fires
//     when the forking thread ends, and Go ends a thread whose locked
//     goroutine returns: golang/go#27505; hence the one thread.)
//   - Under bwrap the leader is bwrap, whose sandbox is a pid namespace:
//     when bwrap dies the kernel ends every process inside, the agent's
//     tools included (bwrap's own --die-with-parent ties it too).
//   - Under local, the leader is the agent's shim (executor/local): the
//     daemon's own executable, the agent's subreaper, so every process
//     the agent starts stays below it however it detaches (setsid, a
//     double fork). Its parent-death signal is a catchable one: when the
//     daemon dies it kills the agent's whole tree, and it does the same
//     when the agent exits. The agent is tied to the shim (SIGKILL).
//   - A group a shim could not clean (the shim itself killed: SIGKILL of
//     the group, the OOM killer) is killed with the group whenever the
//     daemon stops the agent, when the leader exits (Reaped), or, the
//     daemon having died, by the next daemon at its start: a tracked
//     executor (Track) records each group in a Ledger before the agent
//     gets work, and the daemon ends every recorded group that still runs
//     before it starts any agent (package proc).
//   - A daemon stopping an agent sends its group SIGTERM before SIGKILL:
//     the shim passes it on to the processes that left the group and kills
//     them a second later, before the group's SIGKILL kills the shim.
//   - A daemon exiting without stopping its agents (a second signal)
//     kills every member of their groups but the leader, which its
//     parent-death signal ends as the daemon exits: the shim then kills
//     the processes that left the group too (proc.Ledger.KillAll).
//   - Left uncovered under local: a process that detached (setsid) from
//     an agent whose shim was SIGKILLed before it could act (the OOM
//     killer); under bwrap it stays in the namespace and dies with it.
//
// Implementations: executor/local runs the process as the daemon does,
// with the daemon's view of the file system (only the environment is
// confined); executor/bwrap runs it under bubblewrap, where it sees only
// the system directories, the paths of its Spec and nothing else.
package executor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// Names of the executors, as the sandbox configuration key spells them.
const (
	Local = "local"
	Bwrap = "bwrap"
)

// Names lists the executors, for validation.
var Names = []string{Bwrap, Local}

// ParseName validates an executor's name.
func ParseName(s string) (string, error) {
	switch s {
	case Local, Bwrap:
		return s, nil
	}
	return "", fmt.Errorf("%w: sandbox %q (want %s)", jam.ErrInvalid, s, strings.Join(Names, " or "))
}

// Spec is what a process is started with.
type Spec struct {
	// Argv is the command; Argv[0] is looked up in the PATH of Env when it
	// has no slash. Required.
	Argv []string
	// Dir is the working directory. Required.
	Dir string
	// Env is the whole environment, NAME=VALUE.
	Env []string
	// Writable are directories the process may read and write (its
	// worktrees, home and temporary directory, the git directories its
	// worktrees need). Each must exist.
	Writable []string
	// ReadOnly are further paths the process may read (a script its
	// command names, a tool outside the system directories); a path that
	// does not exist is left out.
	ReadOnly []string
	// NoNetwork cuts the process off the network: it gets a network of
	// its own with only loopback. Executors that cannot (Caps.Confines
	// false) refuse a Spec asking for it.
	NoNetwork bool
}

// Caps says what an executor enforces.
type Caps struct {
	// Confines: the process sees only the system directories and the
	// paths of its Spec, and NoNetwork is honoured.
	Confines bool
}

// Executor starts processes.
type Executor interface {
	// Name is the executor's name (Local, Bwrap).
	Name() string
	// Caps says what it enforces.
	Caps() Caps
	// Command returns the command that runs spec, not yet started, in a
	// process group of its own. The caller sets its stdio and starts it.
	Command(spec Spec) (*exec.Cmd, error)
}

// Check validates the parts of a spec every executor needs.
func Check(spec Spec) error {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return fmt.Errorf("%w: executor: no command", jam.ErrInvalid)
	}
	if spec.Dir == "" {
		return fmt.Errorf("%w: executor: no working directory", jam.ErrInvalid)
	}
	return nil
}

// EnvValue returns the value of name in env ("" when unset; the last
// entry wins, as exec does).
func EnvValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}

// LookPath finds file in path (the PATH of the agent's environment, not
// the daemon's own) the way a shell does; a name with a slash is returned
// as it is.
func LookPath(file, path string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: executor: %q: executable file not found in the agent's PATH", jam.ErrNotFound, file)
}
