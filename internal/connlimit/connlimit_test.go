package connlimit_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/connlimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs an http.Server on a loopback listener capped at max, and
// reports every connection state change on states.
func serve(t *testing.T, max int, h http.Handler) (*connlimit.Listener, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := connlimit.New(inner, max, "test", nil)
	srv := &http.Server{Handler: h, ConnState: l.ConnState, ReadHeaderTimeout: time.Minute}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return l, inner.Addr().String()
}

func waitHeld(t *testing.T, l *connlimit.Listener, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return l.Held() == n }, 10*time.Second, time.Millisecond, "held %d, want %d", l.Held(), n)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one GET on c and returns the status line.
func get(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return line
}

// closedByServer reports whether the server closes c within 5 s: reading
// whatever answer comes ends with EOF or a reset, not a timeout.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }

func TestListener_atTheCapTheLongestIdleConnectionMakesRoom(t *testing.T) {
	t.Parallel()
	l, addr := serve(t, 3, http.HandlerFunc(ok))
	var idle []net.Conn
	for range 3 {
		idle = append(idle, dial(t, addr))
		waitHeld(t, l, len(idle))
	}
	// A fourth client is served at once, and the first idle one is gone.
	c := dial(t, addr)
	require.Contains(t, get(t, c), "200")
	require.True(t, closedByServer(idle[0]), "the connection idle longest was closed")
	require.Equal(t, 3, l.Held())
	// The others still work.
	require.Contains(t, get(t, idle[1]), "200")
}

func TestListener_atTheCapWithEveryConnectionBusyAcceptWaits(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	})
	l, addr := serve(t, 2, h)
	var held []net.Conn
	for range 2 {
		c := dial(t, addr)
		_, err := io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		<-entered
		held = append(held, c)
	}
	waitHeld(t, l, 2)

	// A third client connects (the kernel queues it) but is not served
	// while both requests are in progress.
	third := dial(t, addr)
	_, err := io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = third.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "not served while the cap is held by requests: %v", err)
	require.Equal(t, 2, l.Held())

	close(release)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := bufio.NewReader(third).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "200")
	for _, c := range held {
		c.Close()
	}
}

func TestListener_aHijackedConnectionKeepsItsSlotUntilClosed(t *testing.T) {
	t.Parallel()
	hijacked := make(chan net.Conn, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hijack" {
			io.WriteString(w, "ok")
			return
		}
		nc, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			hijacked <- nc
		}
	})
	l, addr := serve(t, 1, h)
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	nc := <-hijacked
	waitHeld(t, l, 1)

	// The hijacked connection is never taken for an idle one.
	other := dial(t, addr)
	_, err = io.WriteString(other, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, other.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = other.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "not served while the hijacked connection holds the slot: %v", err)

	require.NoError(t, nc.Close())
	require.NoError(t, other.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := bufio.NewReader(other).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "200")
}

func TestListener_closeEndsAWaitingAccept(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := connlimit.New(inner, 1, "test", nil)
	dial(t, inner.Addr().String())
	first, err := l.Accept()
	require.NoError(t, err)
	defer first.Close()
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept() // at the cap, and first is not known to be idle
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Accept returned at the cap: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, l.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
}
