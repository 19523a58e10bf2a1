package local

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/jamhq/jam/internal/proc"
)

// ShimName is the argv[0] of the shim every local agent runs under: the
// daemon's own executable (/proc/self/exe) started with it runs the shim
// instead of its main. Any program that starts agents through this
// package gets the shim by importing it (see init).
const ShimName = "jam-agent-shim"

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// The shim's own parent-death signal: catchable, unlike the agent's
// SIGKILL, so that the shim can end the agent's whole tree first.
const shimDeathSignal = syscall.SIGTERM

// escalateAfter is how long after a SIGTERM of the agent's group the
// shim kills the processes that left the group: shorter than the grace
// the harnesses give between SIGTERM and SIGKILL (2 s and more).
const escalateAfter = time.Second

func init() {
	if len(os.Args) >= 3 && os.Args[0] == ShimName {
		os.Exit(runShim(os.Args[1], os.Args[2:]))
	}
}

// runShim runs the agent (path, with argv) as its child and stays its
// subreaper: every process the agent starts remains below the shim
// however it detaches (setsid, a double fork), so the shim can end them
// all. It does when the agent exits, and when the daemon dies (its
// parent-death signal, the parent then changed). Signals sent to the
// agent's process group reach the agent directly; the shim passes them
// on to the processes that left the group, and escalateAfter a SIGTERM
// kills those (a SIGKILL of the group would kill the shim before it could).
// It exits as the agent did.
func runShim(path string, argv []string) int {
	runtime.LockOSThread() // the agent's parent-death signal is this thread's
	parent := os.Getppid()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if os.Getppid() != parent {
		return 1 // the daemon died before the agent was started
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		os.Stderr.WriteString(ShimName + ": PR_SET_CHILD_SUBREAPER: " + e.Error() + "\n")
		return 1
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		os.Stderr.WriteString(ShimName + ": " + path + ": " + err.Error() + "\n")
		return 127
	}
	self := os.Getpid()
	// The signals' owner: it ends when the shim exits.
	go func() {
		escalating := false
		for s := range sigs {
			sig := s.(syscall.Signal)
			if sig == shimDeathSignal && os.Getppid() != parent {
				killTree(self, 0, syscall.SIGKILL) // the daemon died
				continue
			}
			killTree(self, self, sig) // pass it to those that left the group
			if sig == syscall.SIGTERM && !escalating {
				// The daemon is stopping the agent, and SIGKILL of the
				// group, the shim with it, follows a grace later: the
				// processes outside the group get theirs first.
				escalating = true
				time.AfterFunc(escalateAfter, func() { killTree(self, self, syscall.SIGKILL) })
			}
		}
	}()
	var status syscall.WaitStatus
	done := false
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break // ECHILD: nothing is left below the shim
		}
		if wpid == pid {
			status, done = ws, true
		}
		if done {
			// The agent is gone: so is everything it started, including
			// what was re-parented here since the last pass.
			killTree(self, 0, syscall.SIGKILL)
		}
	}
	if !done {
		return 1
	}
	if status.Signaled() {
		sig := status.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(self, sig)
		return 128 + int(sig)
	}
	return status.ExitStatus()
}

// killTree sends sig to every descendant of root, except those in group
// skip (0: none).
func killTree(root, skip int, sig syscall.Signal) {
	pids, err := proc.Pids()
	if err != nil {
		return
	}
	children := map[int][]proc.Stat{}
	for _, pid := range pids {
		if st, err := proc.ReadStat(pid); err == nil {
			children[st.Ppid] = append(children[st.Ppid], st)
		}
	}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if skip == 0 || c.Pgid != skip {
				_ = syscall.Kill(c.Pid, sig)
			}
			queue = append(queue, c.Pid)
		}
	}
}
