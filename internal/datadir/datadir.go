package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/jamhq/jam/internal/jam"
)

// File names inside the data directory.
const (
	LockFile   = "jamd.lock"
	SocketFile = "jamd.sock"
	TokenFile  = "api.token"
	StoreFile  = "jam.db"
)

// ErrLocked is returned by Lock when another process holds the directory.
var ErrLocked = errors.New("data directory is in use")

// Prepare creates dir (mode 0700) if needed, makes an existing one open
// to group or others mode 0700, and checks that it is a directory this
// process can write. Errors name the directory and the cause
// and wrap jam.ErrInvalid.
func Prepare(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return invalid(dir, "is not a directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return invalid(dir, "cannot be created: %v", pathCause(err))
	}
	st, err := os.Stat(dir)
	if err != nil {
		return invalid(dir, "cannot be read: %v", pathCause(err))
	}
	if !st.IsDir() {
		return invalid(dir, "is not a directory")
	}
	// A directory made beforehand (mkdir -p under a 022 umask) would let
	// other users list it and reach the socket's name: tighten it.
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, st.Mode().Perm()&0o700|0o700); err != nil {
			return invalid(dir, "is open to other users (mode %04o) and cannot be made private: %v", st.Mode().Perm(), pathCause(err))
		}
	}
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return invalid(dir, "is not writable: %v", pathCause(err))
	}
	name := probe.Name()
	probe.Close()
	if err := os.Remove(name); err != nil {
		return invalid(dir, "is not writable: %v", pathCause(err))
	}
	return nil
}

// Error is a data directory that cannot be used. It wraps jam.ErrInvalid:
// the user has to pick another directory or fix this one.
type Error struct {
	Dir     string
	Problem string
}

func (e *Error) Error() string { return "data directory " + e.Dir + " " + e.Problem }

// Unwrap classifies the error as invalid input.
func (e *Error) Unwrap() error { return jam.ErrInvalid }

func invalid(dir, format string, args ...any) error {
	return &Error{Dir: dir, Problem: fmt.Sprintf(format, args...)}
}

// pathCause strips the path from an *fs.PathError: the message already
// names the directory.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lockedError says who holds the lock; it matches ErrLocked.
type lockedError struct{ msg string }

func (e *lockedError) Error() string        { return e.msg }
func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held data-directory lock.
type Lock struct {
	f *os.File
}

// Acquire takes the data-directory lock without waiting. When another
// process holds it, the error wraps ErrLocked and names that process.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					holder = "another jamd (pid " + strconv.Itoa(pid) + ")"
				}
			}
			return nil, &lockedError{msg: holder + " is already running on " + dir}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock. The file stays, so that a waiting daemon never
// locks a file that is about to be unlinked. Release is safe to call twice.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the descriptor drops the flock
	l.f = nil
	return err
}

// umaskMu serialises ListenUnix's umask changes. The umask belongs to the
// whole process: while it is 077 (a single bind call), a file another
// goroutine creates is made no more open than 0600/0700, never more open
// than asked; this only guards ListenUnix callers against each other.
var umaskMu sync.Mutex

// ListenUnix listens on the unix socket path, binding it under a umask of
// 077 so the socket file is open to its owner only from the moment it
// exists (there is no window in which another user could connect before a
// chmod), then sets its mode to 0600.
func ListenUnix(path string) (net.Listener, error) {
	umaskMu.Lock()
	old := syscall.Umask(0o077)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, err
	}
	afterBind(path)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("restrict socket %s: %w", path, err)
	}
	return l, nil
}

// afterBind lets a test look at the socket between bind and chmod.
var afterBind = func(string) {}

// HolderPID returns the PID recorded in dir's lock file, or 0 when none is
// recorded. The PID is informational: only the flock decides ownership.
func HolderPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}
