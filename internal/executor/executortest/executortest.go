// Package executortest is the conformance suite of executors: Exercise
// runs real processes through an executor and checks the invariants of
// package executor, and, for an executor whose Caps say it confines, that
// the process sees nothing beyond its Spec.
package executortest

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor"
)

// parentSecret is set in the test process's own environment: no process
// an executor starts may see it.
const parentSecret = "JAM_EXECUTORTEST_PARENT_SECRET"

// Exercise runs the suite against ex. It sets an environment variable of
// the test process, so the calling test must not be parallel.
func Exercise(t *testing.T, ex executor.Executor) {
	t.Setenv(parentSecret, "parent-secret-value")
	path := "/usr/local/bin:/usr/bin:/bin"

	// layout makes an area like the daemon's: worktree, home and temp side
	// by side, and a secret next to them.
	layout := func(t *testing.T) (spec executor.Spec, secret string) {
		area := t.TempDir()
		dir, home, tmp := filepath.Join(area, "worktree"), filepath.Join(area, "home"), filepath.Join(area, "tmp")
		for _, d := range []string{dir, home, tmp} {
			require.NoError(t, os.Mkdir(d, 0o700))
		}
		secret = filepath.Join(area, "daemon.key")
		require.NoError(t, os.WriteFile(secret, []byte("the key"), 0o600))
		return executor.Spec{Dir: dir, Env: []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + tmp, "JAM_EXECUTORTEST_GIVEN=given value"},
			Writable: []string{dir, home, tmp}}, secret
	}
	run := func(t *testing.T, spec executor.Spec) (string, error) {
		cmd, err := ex.Command(spec)
		require.NoError(t, err)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("SeesExactlyItsEnv", func(t *testing.T) {
		spec, _ := layout(t)
		spec.Argv = []string{"env"} // found in the Spec's PATH
		out, err := run(t, spec)
		require.NoError(t, err, out)
		var got []string
		for _, kv := range strings.Split(strings.TrimSpace(out), "\n") {
			// PWD naming the working directory may be added.
			if kv != "PWD="+spec.Dir {
				got = append(got, kv)
			}
		}
		require.ElementsMatch(t, spec.Env, got, "the environment is the Spec's, nothing of the parent's")
		require.NotContains(t, out, "parent-secret-value")
	})
	t.Run("NoEnvValueInArgv", func(t *testing.T) {
		spec, _ := layout(t)
		spec.Argv = []string{"true"}
		cmd, err := ex.Command(spec)
		require.NoError(t, err)
		require.NotContains(t, strings.Join(cmd.Args, " "), "given value")
		require.NotNil(t, cmd.Env, "a nil environment would be the parent's")
	})
	t.Run("RunsInDirAndWritesIt", func(t *testing.T) {
		spec, _ := layout(t)
		spec.Argv = []string{"/bin/sh", "-c", `pwd -P && echo written > note && echo home > "$HOME/h" && echo tmp > "$TMPDIR/t"`}
		out, err := run(t, spec)
		require.NoError(t, err, out)
		want, err := filepath.EvalSymlinks(spec.Dir)
		require.NoError(t, err)
		require.Equal(t, want, strings.TrimSpace(out))
		b, err := os.ReadFile(filepath.Join(spec.Dir, "note"))
		require.NoError(t, err)
		require.Equal(t, "written\n", string(b))
		_, err = os.Stat(filepath.Join(executor.EnvValue(spec.Env, "HOME"), "h"))
		require.NoError(t, err, "home is writable")
		_, err = os.Stat(filepath.Join(executor.EnvValue(spec.Env, "TMPDIR"), "t"))
		require.NoError(t, err, "temp is writable")
	})
	t.Run("GroupKillEndsEveryProcess", func(t *testing.T) {
		spec, _ := layout(t)
		// A child in the background holds stdout: the pipe ends only when
		// it is gone too.
		spec.Argv = []string{"/bin/sh", "-c", "sleep 600 & echo started; wait"}
		cmd, err := ex.Command(spec)
		require.NoError(t, err)
		require.True(t, cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid, "the command leads its own process group")
		require.NotZero(t, cmd.SysProcAttr.Pdeathsig, "and is signalled when the daemon dies")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		buf := make([]byte, len("started\n"))
		_, err = io.ReadFull(out, buf)
		require.NoError(t, err)
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, out)
			done <- err
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a process of the group still holds stdout 30 s after the group was killed")
		}
		_ = cmd.Wait()
	})
	t.Run("DetachedProcessEndsWithTheAgent", func(t *testing.T) {
		spec, _ := layout(t)
		// A process in a session of its own (setsid in a fork: its parent
		// gone at once, it left the group); the agent then exits at the end
		// of its stdin.
		arg := strconv.Itoa(100_000_000 + os.Getpid())
		spec.Argv = []string{"/bin/sh", "-c", "setsid -f sleep " + arg + " </dev/null >/dev/null 2>&1; read _"}
		cmd, err := ex.Command(spec)
		require.NoError(t, err)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		detached := 0
		require.Eventually(t, func() bool {
			detached = pidOfCmdline("sleep\x00" + arg + "\x00")
			return detached != 0
		}, 30*time.Second, 10*time.Millisecond, "the agent detached a process")
		require.NoError(t, in.Close())
		_ = cmd.Wait()
		require.Eventually(t, func() bool { return !alive(detached) }, 30*time.Second, 10*time.Millisecond,
			"the detached process (pid %d) ends with the agent", detached)
	})
	t.Run("MissingCommand", func(t *testing.T) {
		spec, _ := layout(t)
		spec.Argv = []string{"no-such-command-here"}
		_, err := ex.Command(spec)
		require.Error(t, err)
	})

	if !ex.Caps().Confines {
		t.Run("NoNetworkRefused", func(t *testing.T) {
			spec, _ := layout(t)
			spec.Argv, spec.NoNetwork = []string{"true"}, true
			_, err := ex.Command(spec)
			require.Error(t, err, "an executor that cannot cut the network says so")
		})
		return
	}

	t.Run("CannotReadNextToWorktree", func(t *testing.T) {
		spec, secret := layout(t)
		spec.Argv = []string{"/bin/sh", "-c", `cat "$1" 2>/dev/null || echo cannot-read; ls "$2"`, "sh", secret, filepath.Dir(secret)}
		out, err := run(t, spec)
		require.NoError(t, err, out)
		require.Contains(t, out, "cannot-read")
		require.NotContains(t, out, "the key")
		require.NotContains(t, out, "daemon.key", "the directory around the worktree is not listed")
	})
	t.Run("CannotSeeParentFiles", func(t *testing.T) {
		spec, _ := layout(t)
		exe, err := os.Executable()
		require.NoError(t, err)
		spec.Argv = []string{"/bin/sh", "-c", `test -e "$1" && echo visible; test -e /proc/1/environ && cat /proc/1/environ; true`, "sh", filepath.Dir(exe)}
		out, err := run(t, spec)
		require.NoError(t, err, out)
		require.NotContains(t, out, "visible", "the test binary's directory is not in the sandbox")
		require.NotContains(t, out, "parent-secret-value", "no process of the parent's shows")
	})
	t.Run("ReadOnlyPaths", func(t *testing.T) {
		spec, _ := layout(t)
		extra := filepath.Join(t.TempDir(), "tool.sh")
		require.NoError(t, os.WriteFile(extra, []byte("echo from-tool\n"), 0o755))
		spec.ReadOnly = []string{extra, filepath.Join(t.TempDir(), "missing")}
		spec.Argv = []string{"/bin/sh", "-c", `sh "$1" && echo x >> "$1"`, "sh", extra}
		out, err := run(t, spec)
		require.Error(t, err, out)
		require.Contains(t, out, "from-tool", "a read-only path can be read")
		b, _ := os.ReadFile(extra)
		require.Equal(t, "echo from-tool\n", string(b), "and not written")
	})
	t.Run("NetworkCut", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("hello from outside\n"))
				c.Close()
			}
		}()
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("needs bash for /dev/tcp")
		}
		port := ln.Addr().(*net.TCPAddr).Port
		probe := []string{bash, "-c", `exec 3<>/dev/tcp/127.0.0.1/$1 && head -n1 <&3`, "bash", strconv.Itoa(port)}
		spec, _ := layout(t)
		spec.Argv = probe
		out, err := run(t, spec)
		require.NoError(t, err, "with the network: %s", out)
		require.Contains(t, out, "hello from outside")

		spec.NoNetwork = true
		out, err = run(t, spec)
		require.Error(t, err, out)
		require.NotContains(t, out, "hello from outside", "cut off the network, the loopback listener outside is not reached")
	})
	t.Run("RefusesRoot", func(t *testing.T) {
		spec, _ := layout(t)
		spec.Argv = []string{"true"}
		spec.ReadOnly = append(slices.Clone(spec.ReadOnly), "/")
		_, err := ex.Command(spec)
		require.Error(t, err, "the whole file system is never given")
	})
}

// pidOfCmdline is a live process whose command line is exactly cmdline
// (0: none).
func pidOfCmdline(cmdline string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == cmdline && alive(pid) {
			return pid
		}
	}
	return 0
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}
