package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
)

// floodSize is how many connections one local process opens.
const floodSize = 20_000

// floodDaemonFiles is the descriptor limit the flooded jamd runs with:
// fewer than the flood, as a daemon's limit may well be, so that a daemon
// holding every connection it is offered runs out of descriptors.
const floodDaemonFiles = 8192

// raiseFileLimit raises this process's descriptor limit towards want, as
// far as the hard limit allows (further when privileged), and returns it.
func raiseFileLimit(t *testing.T, want uint64) uint64 {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur >= want {
		return lim.Cur
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: max(want, lim.Max)}); err == nil {
		return want
	}
	lim.Cur = min(want, lim.Max)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	return lim.Cur
}

// limitFiles sets the descriptor limit (soft and hard) of process pid.
func limitFiles(t *testing.T, pid int, n uint64) {
	t.Helper()
	lim := syscall.Rlimit{Cur: n, Max: n}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		t.Fatalf("prlimit jamd: %v", errno)
	}
}

// flood opens up to n connections to addr from many goroutines at once,
// each sending stall (or nothing), and returns those that connected. A
// connection the server does not take in time is given up after a second:
// what matters is what the server holds.
func flood(t *testing.T, addr string, n int, stall func(i int) string) []net.Conn {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range 512 {
		wg.Go(func() {
			d := net.Dialer{Timeout: time.Second}
			for i := range next {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue
				}
				if s := stall(i); s != "" {
					_, _ = io.WriteString(c, s)
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// stillOpenAt returns how many of conns are still open at deadline: a read
// of whatever answer came ends with EOF or a reset when the server closed
// the connection, with a timeout when it did not.
func stillOpenAt(conns []net.Conn, deadline time.Time) int {
	var open int
	for _, c := range conns {
		_ = c.SetReadDeadline(deadline)
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	return open
}

// TestFlood_idleConnectionsCannotHangStatus: one local process opens
// 20,000 idle or stalled connections to a running jamd's HTTP API port,
// then to its embedded hub (in jamd's process). Through both floods `jam
// status` (the API client on the unix socket) answers, the hub answers its
// owner, and the first connections of each flood are closed by the server
// within its timeouts. jamd runs in its own process with fewer
// descriptors than the flood, so a server that holds every connection it
// is offered runs out of them.
func TestFlood_idleConnectionsCannotHangStatus(t *testing.T) {
	// Not parallel: it needs most of this process's descriptors.
	if testing.Short() {
		t.Skip("opens 20,000 connections")
	}
	files := raiseFileLimit(t, floodSize+256)
	n := min(floodSize, int(files)-256)
	t.Logf("descriptor limit %d: %d connections per flood; jamd's limit %d", files, n, floodDaemonFiles)
	if n <= floodDaemonFiles {
		// Below that the flood could not exhaust even an unbounded daemon.
		t.Skipf("needs a descriptor limit over %d (hard limit %d)", floodDaemonFiles+256, files)
	}

	cfg := testConfig(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "jamd.log"))
	require.NoError(t, err)
	defer logf.Close()
	jamd := &child{t: t, log: logf, store: cfg.Store, args: []string{"--data-dir", cfg.DataDir, "--band", "embedded",
		"--http-addr", "127.0.0.1:0", "--hub-addr", "127.0.0.1:0", "--log-level", "warn"}}
	jamd.start()
	defer func() {
		if jamd.cmd.ProcessState == nil {
			jamd.kill()
		}
	}()
	limitFiles(t, jamd.cmd.Process.Pid, floodDaemonFiles)
	client := apiclient.NewWrapped(filepath.Join(cfg.DataDir, "jamd.sock"), controlAPI.Transport)
	defer client.Close()
	readyCtx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	st, err := client.WaitReady(readyCtx, 20*time.Millisecond)
	cancel()
	require.NoError(t, err)
	require.NotEmpty(t, st.HTTPAddr)
	client.Close()
	ownerKey, err := os.ReadFile(st.Band.OwnerKeyFile)
	require.NoError(t, err)

	// Like `jam status`, each call opens a new connection.
	status := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		fresh := apiclient.NewWrapped(filepath.Join(cfg.DataDir, "jamd.sock"), controlAPI.Transport)
		defer fresh.Close()
		begun := time.Now()
		_, err := fresh.Status(ctx)
		require.NoError(t, err, "jam status %s (log: %s)", what, readLog(logf))
		t.Logf("jam status %s: answered in %s", what, time.Since(begun).Round(time.Millisecond))
	}
	status("before the floods")

	// The API flood: half are unauthenticated POSTs whose body never
	// comes, half idle keep-alive connections after one (refused) request.
	stalledPost := "POST /v1/rooms HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	keepAlive := "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	begun := time.Now()
	apiConns := flood(t, st.HTTPAddr, n, func(i int) string {
		if i%2 == 0 {
			return stalledPost
		}
		return keepAlive
	})
	t.Logf("api flood: %d of %d connected in %s", len(apiConns), n, time.Since(begun).Round(time.Millisecond))
	status("during the api flood")

	// Keep the first connections open from now on; the server must close
	// them within its timeouts (30 s for a request, or at once to make
	// room for later ones).
	sample := apiConns[:min(200, len(apiConns))]
	closeAll(apiConns[len(sample):])
	sampleDeadline := time.Now().Add(30*time.Second + 15*time.Second)

	// The hub flood: idle keep-alive connections after one (refused)
	// request.
	begun = time.Now()
	hubAddr := strings.TrimPrefix(st.Band.URL, "http://")
	hubConns := flood(t, hubAddr, n, func(int) string {
		return "GET /api/v1/me/profile HTTP/1.1\r\nHost: " + hubAddr + "\r\n\r\n"
	})
	t.Logf("hub flood: %d of %d connected in %s", len(hubConns), n, time.Since(begun).Round(time.Millisecond))
	status("during the hub flood")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.Band.URL+"/api/v1/me/profile", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", strings.TrimSpace(string(ownerKey)))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err, "the hub answers during its flood (log: %s)", readLog(logf))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	hubSample := hubConns[:min(200, len(hubConns))]
	closeAll(hubConns[len(hubSample):])

	require.Zero(t, stillOpenAt(sample, sampleDeadline), "api connections the server left open")
	require.Zero(t, stillOpenAt(hubSample, time.Now().Add(15*time.Second)), "hub connections the server left open")
	closeAll(sample)
	closeAll(hubSample)
	status("after the floods")
	jamd.stop()
}

// readLog returns the end of the daemon's log file.
func readLog(f *os.File) string {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Sprintf("%q", b)
}
