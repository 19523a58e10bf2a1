// Package bwrap is the executor that runs an agent under bubblewrap
// (Debian's bubblewrap package): in namespaces of its own (mount, pid, ipc,
// uts, cgroup, user where allowed, and network when the Spec cuts it), with
// every capability dropped, killed when the daemon dies.
//
// What the process sees of the file system is built, not inherited: the
// system directories read-only (/usr, /bin, /sbin, /lib*, /etc, /opt,
// where present; never "/" as a whole, which would show the daemon's data
// directory), a fresh /proc, /dev and an empty /tmp, its command's
// executable, the Spec's read-only paths, and the Spec's writable ones.
// Paths keep their names, so a worktree is at the same path inside as
// outside. Paths are mounted parents first; a path both read-only and
// writable is writable.
//
// The environment is the Spec's and reaches the process through bwrap's
// own environment (bwrap passes it on), never through --setenv, whose
// values would be in bwrap's argv. The bwrap process leads the command's
// process group and the agent stays in that group (no --new-session: the
// agent's stdio are pipes, not a terminal), so signalling the group reaches
// every process of the sandbox. The sandbox's processes are in a pid
// namespace of bwrap's, whose first process the kernel ends, with every
// process of the namespace, when bwrap dies; and bwrap dies with the
// daemon (Pdeathsig, and --die-with-parent).
package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/jam"
)

// systemDirs are mounted read-only where they exist (a symlink, as /bin is
// on merged-/usr systems, is recreated as the same symlink).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// Executor runs processes under bubblewrap.
type Executor struct {
	bin string // the bwrap executable
}

// New finds bwrap in the daemon's PATH; it does not check that it works
// (Probe does).
func New() (*Executor, error) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed", jam.ErrUnavailable)
	}
	return &Executor{bin: bin}, nil
}

// Name implements executor.Executor.
func (*Executor) Name() string { return executor.Bwrap }

// Caps implements executor.Executor.
func (*Executor) Caps() executor.Caps { return executor.Caps{Confines: true} }

// Command implements executor.Executor.
func (e *Executor) Command(spec executor.Spec) (*exec.Cmd, error) {
	args, err := e.args(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.bin, args...)
	// bwrap passes its environment to the command: this is the whole of
	// what the agent gets (never nil, which would be the daemon's).
	cmd.Env = append([]string{}, spec.Env...)
	cmd.Dir = "/"
	// bwrap is killed when the daemon dies (executor.Start forks it from
	// a thread that outlives it); --die-with-parent does the same from
	// inside bwrap, and its pid namespace ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// args is bwrap's argument list for spec.
func (e *Executor) args(spec executor.Spec) ([]string, error) {
	if err := executor.Check(spec); err != nil {
		return nil, err
	}
	exe, err := executor.LookPath(spec.Argv[0], executor.EnvValue(spec.Env, "PATH"))
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("%w: executor: the command %q must be an absolute path or found in the agent's PATH", jam.ErrInvalid, spec.Argv[0])
	}
	args := []string{"--unshare-all"}
	if !spec.NoNetwork {
		args = append(args, "--share-net")
	}
	args = append(args, "--die-with-parent")
	if os.Geteuid() == 0 {
		args = append(args, "--cap-drop", "ALL")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, err
			}
			args = append(args, "--symlink", target, d)
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")

	mounts := map[string]bool{} // path → writable
	add := func(p string, writable bool) error {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%w: executor: path %q is not absolute", jam.ErrInvalid, p)
		}
		p = filepath.Clean(p)
		if p == "/" {
			return fmt.Errorf("%w: executor: the whole file system cannot be given to a sandbox", jam.ErrInvalid)
		}
		mounts[p] = mounts[p] || writable
		return nil
	}
	for _, p := range spec.Writable {
		if err := add(p, true); err != nil {
			return nil, err
		}
	}
	ro := append([]string{exe}, spec.ReadOnly...)
	if real, err := filepath.EvalSymlinks(exe); err == nil && real != exe {
		ro = append(ro, real)
	}
	for _, p := range ro {
		if underSystem(p) {
			continue
		}
		if err := add(p, false); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(mounts))
	for p := range mounts {
		paths = append(paths, p)
	}
	// Parents before children: a later mount covers an earlier one.
	sort.Slice(paths, func(i, j int) bool {
		di, dj := strings.Count(paths[i], "/"), strings.Count(paths[j], "/")
		if di != dj {
			return di < dj
		}
		return paths[i] < paths[j]
	})
	for _, p := range paths {
		if mounts[p] {
			args = append(args, "--bind", p, p)
		} else {
			args = append(args, "--ro-bind-try", p, p)
		}
	}
	args = append(args, "--chdir", spec.Dir, "--", exe)
	return append(args, spec.Argv[1:]...), nil
}

// underSystem reports whether p is inside a system directory, which is
// mounted already.
func underSystem(p string) bool {
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// Probe says whether bubblewrap is installed and can build a sandbox here
// (a container may forbid the namespaces it needs); it runs bwrap once per
// process and keeps the answer.
func Probe() error { return probe() }

var probe = sync.OnceValue(func() error {
	e, err := New()
	if err != nil {
		return err
	}
	cmd, err := e.Command(executor.Spec{Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		return err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%w: bubblewrap cannot make a sandbox here: %s", jam.ErrUnavailable, msg)
	}
	return nil
})
