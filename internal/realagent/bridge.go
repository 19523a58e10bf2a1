package realagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"
)

// bridgeArg, as the first argument, makes a test binary run the bridge:
// `<test binary> jam-netns-bridge SOCKET ADDR AGENT ARGS…`.
const bridgeArg = "jam-netns-bridge"

// BridgeCommand is the argv that runs argv behind the bridge, in the
// network namespace the command is started in (by unshare, or by a sandbox
// that cuts the network): the bridge listens on addr there and forwards to
// sock. Only a test binary that calls RunBridgeIfAsked serves it.
func BridgeCommand(sock, addr string, argv ...string) []string {
	exe, _ := os.Executable()
	return append([]string{exe, bridgeArg, sock, addr}, argv...)
}

// RunBridgeIfAsked runs the bridge and exits when the process was started
// as one; otherwise it returns at once.
func RunBridgeIfAsked() {
	if len(os.Args) < 5 || os.Args[1] != bridgeArg {
		return
	}
	code, err := runBridge(os.Args[2], os.Args[3], os.Args[4:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "jam-netns-bridge: %v\n", err)
	}
	os.Exit(code)
}

// runBridge brings loopback up, forwards addr to sock, and runs argv on
// the bridge's own stdio; it returns the agent's exit code.
func runBridge(sock, addr string, argv []string) (int, error) {
	if err := loopbackUp(); err != nil {
		return 1, fmt.Errorf("loopback: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 1, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { forward(c, sock) })
		}
	})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	_ = ln.Close()
	// Open forwards end with the process: no wait for them.
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	}
	return 1, err
}

// forward copies between a connection and a new one to sock.
func forward(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { cp(u, c) })
	wg.Go(func() { cp(c, u) })
	wg.Wait()
}

// loopbackUp sets the IFF_UP flag of "lo" (a new network namespace starts
// with it down).
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [24 - 2]byte
	}
	copy(ifr.name[:], "lo")
	ioctl := func(req uintptr) error {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return e
		}
		return nil
	}
	if err := ioctl(syscall.SIOCGIFFLAGS); err != nil {
		return err
	}
	if ifr.flags&syscall.IFF_UP != 0 {
		// Up already: a sandbox that made the namespace (bubblewrap)
		// brought it up, and left no capability to change it.
		return nil
	}
	ifr.flags |= syscall.IFF_UP
	return ioctl(syscall.SIOCSIFFLAGS)
}
