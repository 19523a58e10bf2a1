// Package connlimit caps the connections an HTTP server holds open, so that
// a local process opening thousands of idle connections can neither use up
// the daemon's file descriptors nor keep out the clients that come after it.
//
// A [Listener] wraps a net.Listener and holds at most Max connections, each
// counted from Accept until it is closed (a hijacked connection, a
// WebSocket, keeps its slot until its new owner closes it). At the cap,
// Accept closes the connection that has been idle longest (one that the
// server reports as new, never having sent a byte, or idle between
// requests) and takes the new one in its place; when every held
// connection is in the middle of a request, Accept waits for one to end.
// Slow requests are bounded by the server's own timeouts, which is what
// makes the wait finite. Reaching the cap is logged at Warn, at most once
// a minute.
//
// Install the Listener's ConnState as the http.Server's ConnState hook:
// it is how the Listener learns which connections are idle.
package connlimit

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// warnEvery bounds how often reaching the cap is logged.
const warnEvery = time.Minute

// Listener is a net.Listener holding at most Max connections; see the
// package doc.
type Listener struct {
	net.Listener
	max  int
	log  *slog.Logger
	name string

	mu       sync.Mutex
	cond     *sync.Cond // on mu: a slot freed, a connection became idle, or Close
	n        int        // connections held
	idle     list.List  // of *conn, idle longest first
	closed   bool
	warnedAt time.Time
	evicted  int // connections closed at the cap since the last warning
}

// New wraps l so that it holds at most max connections (at least 1). name
// says in the log which listener reached its cap.
func New(l net.Listener, max int, name string, log *slog.Logger) *Listener {
	if max < 1 {
		max = 1
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ll := &Listener{Listener: l, max: max, name: name, log: log}
	ll.cond = sync.NewCond(&ll.mu)
	return ll
}

// conn is one held connection.
type conn struct {
	net.Conn
	l *Listener

	// Guarded by l.mu.
	elem     *list.Element // in l.idle while idle
	released bool
}

// Close closes the connection and frees its slot (once).
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.release(c)
	return err
}

// Accept waits until a slot is free or some held connection is idle,
// accepts, and then takes a free slot or closes the connection idle
// longest to make one. Connections that arrive while every slot is busy
// wait in the kernel's queue, holding no descriptor of this process.
func (l *Listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	for !l.closed && l.n >= l.max && l.idle.Len() == 0 {
		l.warnLocked()
		l.cond.Wait()
	}
	l.mu.Unlock()
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, l: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.closed:
			c.released = true
			nc.Close() //nolint:errcheck // refused
			return nil, net.ErrClosed
		case l.n < l.max:
			l.n++
			return c, nil
		case l.idle.Len() > 0:
			victim := l.idle.Remove(l.idle.Front()).(*conn)
			victim.elem = nil
			l.evicted++
			l.warnLocked()
			// Close frees the victim's slot; it takes mu, so not here.
			l.mu.Unlock()
			victim.Close() //nolint:errcheck // it is being dropped
			l.mu.Lock()
		default:
			// Every slot became busy since the wait above.
			l.warnLocked()
			l.cond.Wait()
		}
	}
}

// warnLocked logs that the cap was reached, at most once per warnEvery.
func (l *Listener) warnLocked() {
	now := time.Now()
	if now.Sub(l.warnedAt) < warnEvery {
		return
	}
	l.warnedAt = now
	l.log.Warn("connection limit reached: closing idle connections, or waiting for a request to end",
		"listener", l.name, "addr", l.Addr().String(), "max", l.max, "idle_closed", l.evicted)
	l.evicted = 0
}

func (l *Listener) release(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	c.released = true
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	l.n--
	l.cond.Broadcast()
}

// ConnState is the http.Server ConnState hook that tells the Listener which
// of its connections are idle.
func (l *Listener) ConnState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle:
		if c.elem == nil {
			c.elem = l.idle.PushBack(c)
			l.cond.Broadcast()
		}
	default: // active, hijacked or closed: not for eviction
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
	}
}

// Held returns the number of connections held now.
func (l *Listener) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Close stops accepting; an Accept waiting for a slot returns
// net.ErrClosed. Held connections stay open (http.Server closes them).
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}
