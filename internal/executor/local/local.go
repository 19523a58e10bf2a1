// Package local is the executor that runs an agent as the daemon's own
// child, with the daemon's view of the file system: only the environment
// of the Spec confines it (Caps.Confines is false, and a Spec asking for
// NoNetwork is refused). It is what jam did before sandboxes, kept for
// machines without bubblewrap and as an explicit opt-out.
//
// Every agent runs under a shim (ShimName: the daemon's own executable,
// started through /proc/self/exe), which leads the agent's process group
// and is its subreaper: when the agent exits, or the daemon dies, the shim
// kills every process below it, those that detached from the group
// (setsid, a double fork) included, then exits as the agent did. A binary
// that starts agents through this package runs the shim by importing it.
package local

import (
	"fmt"
	"os/exec"
	"syscall"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/jam"
)

// Executor is the local executor.
type Executor struct{}

// New returns the local executor.
func New() Executor { return Executor{} }

// Name implements executor.Executor.
func (Executor) Name() string { return executor.Local }

// Caps implements executor.Executor.
func (Executor) Caps() executor.Caps { return executor.Caps{} }

// Command implements executor.Executor.
func (Executor) Command(spec executor.Spec) (*exec.Cmd, error) {
	if err := executor.Check(spec); err != nil {
		return nil, err
	}
	if spec.NoNetwork {
		return nil, fmt.Errorf("%w: the local executor cannot cut an agent off the network (use sandbox=bwrap)", jam.ErrInvalid)
	}
	path, err := executor.LookPath(spec.Argv[0], executor.EnvValue(spec.Env, "PATH"))
	if err != nil {
		return nil, err
	}
	// The agent runs under the shim (the daemon's own executable), its
	// subreaper: see runShim.
	cmd := exec.Command("/proc/self/exe", append([]string{path}, spec.Argv...)...)
	cmd.Args[0] = ShimName
	cmd.Dir = spec.Dir
	// Never nil: nil would inherit the daemon's environment.
	cmd.Env = append([]string{}, spec.Env...)
	// Its own process group, so stopping the group reaches every child.
	// When the daemon dies (executor.Start forks it from a thread that
	// outlives it) the shim gets shimDeathSignal and kills the agent's
	// whole tree; the agent itself has SIGKILL as its parent-death signal,
	// so it dies with the shim, however the shim dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: shimDeathSignal}
	return cmd, nil
}
