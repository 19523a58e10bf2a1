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

// linkArg separates the bridge's further links: `SOCKET ADDR + SOCKET2
// ADDR2 … AGENT ARGS…`.
const linkArg = "+"

// Link is an address the bridge serves in the namespace, Addr (a TCP
// address on loopback), forwarded to Sock, a unix socket the server
// behind Addr also serves.
type Link struct{ Sock, Addr string }

// BridgeCommand is the argv that runs argv behind the bridge, in the
// network namespace the command is started in (by unshare, or by a sandbox
// that cuts the network): the bridge listens on addr there and forwards to
// sock. Only a test binary that calls RunBridgeIfAsked serves it.
func BridgeCommand(sock, addr string, argv ...string) []string {
	return BridgeLinksCommand([]Link{{sock, addr}}, argv...)
}

// BridgeLinksCommand is BridgeCommand for several links (at least one).
func BridgeLinksCommand(links []Link, argv ...string) []string {
	exe, _ := os.Executable()
	out := []string{exe, bridgeArg}
	for i, l := range links {
		if i > 0 {
			out = append(out, linkArg)
		}
		out = append(out, l.Sock, l.Addr)
	}
	return append(out, argv...)
}

// RunBridgeIfAsked runs the bridge and exits when the process was started
// as one; otherwise it returns at once.
func RunBridgeIfAsked() {
	if len(os.Args) < 5 || os.Args[1] != bridgeArg {
		return
	}
	args := os.Args[2:]
	links := []Link{{args[0], args[1]}}
	args = args[2:]
	for len(args) >= 3 && args[0] == linkArg {
		links = append(links, Link{args[1], args[2]})
		args = args[3:]
	}
	code := 1
	err := errors.New("no command")
	if len(args) > 0 {
		code, err = runBridge(links, args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "jam-netns-bridge: %v\n", err)
	}
	os.Exit(code)
}

// runBridge brings loopback up, forwards each link's address to its
// socket, and runs argv on the bridge's own stdio; it returns the agent's
// exit code.
func runBridge(links []Link, argv []string) (int, error) {
	if err := loopbackUp(); err != nil {
		return 1, fmt.Errorf("loopback: %w", err)
	}
	var wg sync.WaitGroup
	var lns []net.Listener
	for _, l := range links {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return 1, err
		}
		lns = append(lns, ln)
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Go(func() { forward(c, l.Sock) })
			}
		})
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	for _, ln := range lns {
		_ = ln.Close()
	}
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
