package band

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
)

// ConnState is the state of a socket, reported to handlers.
type ConnState string

// Connection states.
const (
	StateConnecting   ConnState = "connecting"
	StateUp           ConnState = "up"
	StateReconnecting ConnState = "reconnecting"
	StateSuperseded   ConnState = "superseded"
	StateStopped      ConnState = "stopped"
)

// ErrSuperseded ends a socket whose identity connected elsewhere. It is
// terminal: the socket does not reconnect.
var ErrSuperseded = errors.New("socket superseded by a newer connection")

// JoinError is a refused channel join.
type JoinError struct {
	Topic  string
	Reason string
}

func (e *JoinError) Error() string { return "join " + e.Topic + " refused: " + e.Reason }

// SocketConfig configures a Socket.
type SocketConfig struct {
	// BaseURL is the REST base URL; the socket URL is derived from it.
	BaseURL string
	// Credential is read afresh for every connection.
	Credential Credential
	// AgentID makes an owner's key act as that agent; optional.
	AgentID string
	// Heartbeat is the heartbeat interval. Default 25s.
	Heartbeat time.Duration
	// BackoffMin, BackoffMax: reconnect delay bounds. Defaults 2s and 60s.
	BackoffMin, BackoffMax time.Duration
	// BackoffReset: a session that lasted this long resets the backoff.
	// Default 60s.
	BackoffReset time.Duration
	// Jitter is the most random delay added to a reconnect. Default 1s.
	Jitter time.Duration
	// ReplyTimeout bounds a join or leave. Default 10s.
	ReplyTimeout time.Duration
	// Logger is required.
	Logger *slog.Logger
}

func (c SocketConfig) withDefaults() SocketConfig {
	if c.Heartbeat == 0 {
		c.Heartbeat = 25 * time.Second
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = 2 * time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 60 * time.Second
	}
	if c.BackoffReset == 0 {
		c.BackoffReset = 60 * time.Second
	}
	if c.Jitter == 0 {
		c.Jitter = time.Second
	}
	if c.ReplyTimeout == 0 {
		c.ReplyTimeout = 10 * time.Second
	}
	return c
}

func (c SocketConfig) validate() error {
	switch {
	case c.Credential == nil:
		return errors.New("band socket: credential is required")
	case c.Logger == nil:
		return errors.New("band socket: logger is required")
	case c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin:
		return errors.New("band socket: backoff bounds are inconsistent")
	}
	_, err := SocketURL(c.BaseURL)
	return err
}

// SocketURL derives the WebSocket URL from a REST base URL.
func SocketURL(baseURL string) (string, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("band url %q: want http(s)://host", safeURL(baseURL))
	}
	if err := plainBase(u); err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("band url %q: want http(s)://host", safeURL(baseURL))
	}
	u.Path += protocol.SocketPath
	return u.String(), nil
}

// Push is a server push accepted on a joined channel.
type Push struct {
	Topic   string
	Event   string
	Payload json.RawMessage

	// closedRef is set on a server close (phx_close or phx_error) of the
	// channel joined as closedRef; such a push never reaches the handler.
	closedRef string
}

// Handler receives what a Socket observes. Calls come from the socket's
// goroutines; Push calls arrive one at a time, in order.
type Handler interface {
	// Connected runs once per connection, after the handshake: it joins
	// channels and catches up. An error ends the session.
	Connected(ctx context.Context, s *Session) error
	// Push receives each accepted push.
	Push(ctx context.Context, s *Session, p Push)
	// State receives state changes; err says why the state changed.
	State(st ConnState, err error)
}

// Socket keeps one Phoenix session alive until its context ends.
type Socket struct {
	cfg SocketConfig
	log *slog.Logger
}

// NewSocket builds a Socket; Run connects it.
func NewSocket(cfg SocketConfig) (*Socket, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Socket{cfg: cfg, log: cfg.Logger.With("component", "band-socket")}, nil
}

// Run connects and reconnects until ctx ends (returning nil) or the socket
// is superseded (returning ErrSuperseded). Every goroutine it starts has
// exited when it returns.
func (s *Socket) Run(ctx context.Context, h Handler) error {
	failures := 0
	for {
		h.State(StateConnecting, nil)
		begun := time.Now()
		err := s.session(ctx, h)
		if ctx.Err() != nil {
			h.State(StateStopped, nil)
			return nil
		}
		if errors.Is(err, ErrSuperseded) {
			h.State(StateSuperseded, err)
			return err
		}
		if time.Since(begun) >= s.cfg.BackoffReset {
			failures = 0
		}
		delay := s.backoff(failures)
		failures++
		s.log.Warn("socket session ended; reconnecting", "err", err, "in", delay)
		h.State(StateReconnecting, err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			h.State(StateStopped, nil)
			return nil
		case <-t.C:
		}
	}
}

// newClientSocket builds a socket that, unless configured otherwise, talks
// to the same Band as client, with its credential and logger.
func newClientSocket(sc SocketConfig, client *Client, log *slog.Logger) (*Socket, error) {
	if sc.BaseURL == "" {
		sc.BaseURL = client.BaseURL()
	}
	if sc.Credential == nil {
		sc.Credential = client.Credential()
	}
	if sc.Logger == nil {
		sc.Logger = log
	}
	return NewSocket(sc)
}

// backoff is BackoffMin doubled per consecutive failure, capped at
// BackoffMax, plus up to Jitter.
func (s *Socket) backoff(failures int) time.Duration {
	d := s.cfg.BackoffMin
	for i := 0; i < failures && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.BackoffMax)
	return d + time.Duration(rand.Int64N(int64(s.cfg.Jitter)+1))
}

// dial opens one WebSocket with a fresh credential. The credential goes
// in a header only, never in the URL, which errors quote and proxies log:
// an API key as X-Api-Key (Band reads it on the handshake), a token as
// Authorization: Bearer. The URL carries only vsn and agent_id.
func (s *Socket) dial(ctx context.Context) (*websocket.Conn, error) {
	key, err := s.cfg.Credential.Key(ctx)
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	base, _ := SocketURL(s.cfg.BaseURL)
	q := url.Values{"vsn": {"2.0.0"}}
	h := http.Header{}
	if s.cfg.Credential.Bearer() {
		h.Set("Authorization", "Bearer "+key)
	} else {
		h.Set("X-Api-Key", key)
	}
	if s.cfg.AgentID != "" {
		q.Set("agent_id", s.cfg.AgentID)
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, base+"?"+q.Encode(), &websocket.DialOptions{HTTPClient: dialClient, HTTPHeader: h})
	if err != nil {
		err = redactURL(err)
		if resp != nil {
			return nil, fmt.Errorf("dial: %w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial: %w", err)
	}
	conn.SetReadLimit(phoenix.MaxFrameBytes)
	return conn, nil
}

// dialClient makes the WebSocket handshakes. It refuses redirects, as the
// REST client does: Go forwards a custom header such as X-Api-Key to
// whatever host a redirect names. It shares http.DefaultTransport, whose
// idle connections the daemon closes before its embedded hub stops.
var dialClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// session runs one connection to its end.
func (s *Socket) session(ctx context.Context, h Handler) error {
	conn, err := s.dial(ctx)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancelCause(ctx)
	sess := &Session{conn: conn, ctx: sctx, end: cancel, replies: map[string]chan phoenix.Reply{}, joins: map[string]string{}, timeout: s.cfg.ReplyTimeout}
	pushes := &pushQueue{signal: make(chan struct{}, 1)}
	ready := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { sess.read(pushes) })
	wg.Go(func() {
		// Pushes wait until Connected has joined and caught up every room,
		// so a live push can never overtake an older message the catch-up
		// replays: per-room order holds across reconnects.
		select {
		case <-sctx.Done():
			return
		case <-ready:
		}
		for {
			for _, p := range pushes.take() {
				if sctx.Err() != nil {
					return
				}
				if p.closedRef != "" {
					// In order with the pushes before it: a room_removed
					// that made the handler leave the channel comes first,
					// and the close of a channel it left is expected.
					if sess.joinRef(p.Topic) == p.closedRef {
						// A channel the server closed cannot be trusted to
						// carry pushes: end the session so the next one
						// rejoins all.
						sess.end(fmt.Errorf("server closed channel %s (%s)", p.Topic, p.Event))
						return
					}
					continue
				}
				h.Push(sctx, sess, p)
			}
			select {
			case <-sctx.Done():
				return
			case <-pushes.signal:
			}
		}
	})
	wg.Go(func() { sess.heartbeat(s.cfg.Heartbeat) })

	if err := h.Connected(sctx, sess); err != nil {
		cancel(fmt.Errorf("connected: %w", err))
	} else {
		h.State(StateUp, nil)
		close(ready)
	}
	<-sctx.Done()
	cause := context.Cause(sctx)
	conn.Close(websocket.StatusNormalClosure, "")
	wg.Wait()
	return cause
}

// Session is one live connection: joins, leaves and heartbeats.
type Session struct {
	conn    *websocket.Conn
	ctx     context.Context
	end     context.CancelCauseFunc
	timeout time.Duration
	ref     atomic.Uint64

	mu      sync.Mutex
	replies map[string]chan phoenix.Reply // guarded by mu: ref → waiter
	joins   map[string]string             // guarded by mu: topic → join_ref
}

func (s *Session) nextRef() string { return strconv.FormatUint(s.ref.Add(1), 10) }

// Joined reports whether topic is joined in this session.
func (s *Session) Joined(topic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.joins[topic]
	return ok
}

// Join joins topic with a fresh join_ref and waits for the reply.
func (s *Session) Join(ctx context.Context, topic string) error {
	ref := s.nextRef()
	rep, err := s.request(ctx, phoenix.Frame{JoinRef: phoenix.Ref(ref), Ref: phoenix.Ref(ref), Topic: topic, Event: phoenix.EventJoin}, func() {
		s.joins[topic] = ref
	})
	if err != nil {
		return fmt.Errorf("join %s: %w", topic, err)
	}
	if rep.Status != phoenix.StatusOK {
		s.mu.Lock()
		delete(s.joins, topic)
		s.mu.Unlock()
		var reason struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(rep.Response, &reason)
		return &JoinError{Topic: topic, Reason: reason.Reason}
	}
	return nil
}

// Leave leaves topic and waits for the reply.
func (s *Session) Leave(ctx context.Context, topic string) error {
	s.mu.Lock()
	joinRef, ok := s.joins[topic]
	delete(s.joins, topic)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	_, err := s.request(ctx, phoenix.Frame{JoinRef: phoenix.Ref(joinRef), Ref: phoenix.Ref(s.nextRef()), Topic: topic, Event: phoenix.EventLeave}, nil)
	if err != nil {
		return fmt.Errorf("leave %s: %w", topic, err)
	}
	return nil
}

// request sends f and waits for the reply with f's ref. register runs
// under the session lock before the frame is sent.
func (s *Session) request(ctx context.Context, f phoenix.Frame, register func()) (phoenix.Reply, error) {
	ch := make(chan phoenix.Reply, 1)
	ref := *f.Ref
	s.mu.Lock()
	s.replies[ref] = ch
	if register != nil {
		register()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.replies, ref)
		s.mu.Unlock()
	}()
	if err := s.write(ctx, f); err != nil {
		return phoenix.Reply{}, err
	}
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case rep := <-ch:
		return rep, nil
	case <-t.C:
		return phoenix.Reply{}, fmt.Errorf("no reply within %s", s.timeout)
	case <-ctx.Done():
		return phoenix.Reply{}, ctx.Err()
	case <-s.ctx.Done():
		return phoenix.Reply{}, context.Cause(s.ctx)
	}
}

func (s *Session) write(ctx context.Context, f phoenix.Frame) error {
	b, err := f.Encode()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.conn.Write(wctx, websocket.MessageText, b)
}

// read decodes frames until the connection ends, routing replies to their
// waiters and accepted pushes to out.
func (s *Session) read(out *pushQueue) {
	for {
		typ, data, err := s.conn.Read(s.ctx)
		if err != nil {
			s.end(fmt.Errorf("read: %w", err))
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		f, err := phoenix.Decode(data)
		if err != nil {
			s.end(fmt.Errorf("server sent a bad frame: %w", err))
			return
		}
		switch f.Event {
		case phoenix.EventReply:
			var rep phoenix.Reply
			if json.Unmarshal(f.Payload, &rep) != nil {
				continue
			}
			s.mu.Lock()
			ch := s.replies[phoenix.RefString(f.Ref)]
			s.mu.Unlock()
			if ch != nil {
				// The waiter takes one reply; a server that answers a
				// ref again must not block the reader.
				select {
				case ch <- rep:
				default:
				}
			}
		case phoenix.EventError, phoenix.EventClose:
			if ref := s.joinRef(f.Topic); ref != "" && s.accepts(f) {
				// Judged in order with the pushes before it (see Run).
				if !out.add(Push{Topic: f.Topic, Event: f.Event, closedRef: ref}) {
					s.end(fmt.Errorf("server closed channel %s (%s)", f.Topic, f.Event))
					return
				}
			}
		default:
			if !s.accepts(f) {
				continue
			}
			if f.Event == protocol.EventSupersede {
				// Terminal on any channel: a newer connection owns this
				// identity. Decided here, before the server's close frame
				// is read, so the close cannot be mistaken for a drop.
				s.end(ErrSuperseded)
				return
			}
			if !out.add(Push{Topic: f.Topic, Event: f.Event, Payload: f.Payload}) {
				// The handler is far behind: rather than grow without bound
				// or drop a push, end the session; the next one catches up
				// over REST.
				s.end(fmt.Errorf("more than %d pushes waiting", maxPendingPushes))
				return
			}
		}
	}
}

// maxPendingPushes bounds pushes read but not yet handled.
const maxPendingPushes = 10000

// pushQueue holds pushes between the reader, which must never block (join
// and heartbeat replies arrive on the same connection), and the handler.
type pushQueue struct {
	mu     sync.Mutex
	items  []Push // guarded by mu
	signal chan struct{}
}

// add appends p; false when the queue is full.
func (q *pushQueue) add(p Push) bool {
	q.mu.Lock()
	if len(q.items) >= maxPendingPushes {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, p)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns every queued push.
func (q *pushQueue) take() []Push {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// accepts reports whether f belongs to a current join: its join_ref is
// null or matches the channel's join.
// joinRef returns the join ref of a joined topic, or "".
func (s *Session) joinRef(topic string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joins[topic]
}

func (s *Session) accepts(f phoenix.Frame) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	joinRef, ok := s.joins[f.Topic]
	return ok && (f.JoinRef == nil || *f.JoinRef == joinRef)
}

// heartbeat sends a heartbeat every interval; one still unanswered at the
// next tick ends the session.
func (s *Session) heartbeat(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var pending chan phoenix.Reply
	var pendingRef string
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if pending != nil {
			select {
			case <-pending:
			default:
				s.end(errors.New("heartbeat unanswered"))
				return
			}
			s.mu.Lock()
			delete(s.replies, pendingRef)
			s.mu.Unlock()
		}
		pendingRef = s.nextRef()
		pending = make(chan phoenix.Reply, 1)
		s.mu.Lock()
		s.replies[pendingRef] = pending
		s.mu.Unlock()
		if err := s.write(s.ctx, phoenix.Frame{Ref: phoenix.Ref(pendingRef), Topic: phoenix.TopicPhoenix, Event: phoenix.EventHeartbeat}); err != nil {
			s.end(fmt.Errorf("heartbeat: %w", err))
			return
		}
	}
}
