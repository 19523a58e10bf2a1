package band

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
)

// fakePhoenix is a scriptable Phoenix v2 server: each accepted connection
// is handed to the test, which reads the client's frames and writes
// replies and pushes itself.
type fakePhoenix struct {
	srv   *httptest.Server
	conns chan *fakeConn
	wg    sync.WaitGroup
}

type fakeConn struct {
	c      *websocket.Conn
	query  url.Values
	header http.Header
	frames chan phoenix.Frame
	done   chan struct{}
}

func newFakePhoenix(t *testing.T) *fakePhoenix {
	t.Helper()
	fp := &fakePhoenix{conns: make(chan *fakeConn, 8)}
	// stop ends handlers a test left blocked (a connection it never
	// accepted, frames it never read), so closing the server cannot hang.
	stop := make(chan struct{})
	fp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		fc := &fakeConn{c: c, query: r.URL.Query(), header: r.Header, frames: make(chan phoenix.Frame, 64), done: make(chan struct{})}
		select {
		case fp.conns <- fc:
		case <-stop:
			c.CloseNow()
			return
		}
		defer close(fc.done)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			f, err := phoenix.Decode(data)
			if err != nil {
				return
			}
			select {
			case fc.frames <- f:
			case <-stop:
				c.CloseNow()
				return
			}
		}
	}))
	t.Cleanup(func() {
		close(stop)
		fp.srv.Close()
	})
	return fp
}

func (fp *fakePhoenix) accept(t *testing.T) *fakeConn {
	t.Helper()
	select {
	case fc := <-fp.conns:
		return fc
	case <-time.After(30 * time.Second):
		t.Fatal("no connection")
		return nil
	}
}

func (fc *fakeConn) next(t *testing.T) phoenix.Frame {
	t.Helper()
	select {
	case f := <-fc.frames:
		return f
	case <-time.After(30 * time.Second):
		t.Fatal("no frame")
		return phoenix.Frame{}
	}
}

// nextNot skips heartbeats.
func (fc *fakeConn) nextNot(t *testing.T, event string) phoenix.Frame {
	t.Helper()
	for {
		f := fc.next(t)
		if f.Event != event {
			return f
		}
	}
}

func (fc *fakeConn) send(t *testing.T, f phoenix.Frame) {
	t.Helper()
	b, err := f.Encode()
	require.NoError(t, err)
	// The client may already be gone; the test asserts on what it saw.
	_ = fc.c.Write(context.Background(), websocket.MessageText, b)
}

func (fc *fakeConn) reply(t *testing.T, to phoenix.Frame, status string, resp any) {
	t.Helper()
	f, err := phoenix.ReplyFrame(to, status, resp)
	require.NoError(t, err)
	fc.send(t, f)
}

// recorder is a Handler that records what the socket reports.
type recorder struct {
	connected func(ctx context.Context, s *Session) error
	pushes    chan Push
	states    chan stateChange
}

type stateChange struct {
	st  ConnState
	err error
}

func newRecorder(connected func(ctx context.Context, s *Session) error) *recorder {
	return &recorder{connected: connected, pushes: make(chan Push, 64), states: make(chan stateChange, 64)}
}

func (r *recorder) Connected(ctx context.Context, s *Session) error { return r.connected(ctx, s) }
func (r *recorder) Push(_ context.Context, _ *Session, p Push)      { r.pushes <- p }
func (r *recorder) State(st ConnState, err error)                   { r.states <- stateChange{st, err} }

func (r *recorder) waitState(t *testing.T, want ConnState) stateChange {
	t.Helper()
	for {
		select {
		case sc := <-r.states:
			if sc.st == want {
				return sc
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s state", want)
		}
	}
}

func testSocketConfig(url string, cred Credential) SocketConfig {
	return SocketConfig{BaseURL: url, Credential: cred, Logger: slog.New(slog.DiscardHandler),
		BackoffMin: time.Millisecond, BackoffMax: 4 * time.Millisecond, Jitter: time.Nanosecond, ReplyTimeout: 5 * time.Second}
}

// runSocket runs s until the test ends and returns Run's result channel.
func runSocket(t *testing.T, s *Socket, h Handler) (context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- s.Run(ctx, h) })
	t.Cleanup(func() {
		cancel()
		// A test that failed early leaves the recorder unread: drain it so
		// the socket, blocked reporting to it, can end.
		r, ok := h.(*recorder)
		if !ok {
			wg.Wait()
			return
		}
		stop := make(chan struct{})
		var drain sync.WaitGroup
		drain.Go(func() {
			for {
				select {
				case <-r.states:
				case <-r.pushes:
				case <-stop:
					return
				}
			}
		})
		wg.Wait()
		close(stop)
		drain.Wait()
	})
	return cancel, done
}

func TestSocket_joinPushesAndRefs(t *testing.T) {
	t.Parallel()
	fp := newFakePhoenix(t)
	s, err := NewSocket(testSocketConfig(fp.srv.URL, APIKey("band_a_key")))
	require.NoError(t, err)
	joinErr := make(chan error, 2)
	rec := newRecorder(func(ctx context.Context, s *Session) error {
		joinErr <- s.Join(ctx, "chat_room:r1")
		joinErr <- s.Join(ctx, "chat_room:secret")
		return nil
	})
	runSocket(t, s, rec)

	fc := fp.accept(t)
	require.Equal(t, "2.0.0", fc.query.Get("vsn"))
	require.Equal(t, url.Values{"vsn": {"2.0.0"}}, fc.query, "the URL carries no credential")
	require.Equal(t, "band_a_key", fc.header.Get("X-Api-Key"))

	join := fc.nextNot(t, phoenix.EventHeartbeat)
	require.Equal(t, phoenix.EventJoin, join.Event)
	require.Equal(t, *join.JoinRef, *join.Ref, "a join uses a fresh ref as its join_ref")
	fc.reply(t, join, phoenix.StatusOK, nil)
	require.NoError(t, <-joinErr)
	refused := fc.nextNot(t, phoenix.EventHeartbeat)
	require.NotEqual(t, *join.JoinRef, *refused.JoinRef, "every join gets a fresh ref")
	fc.reply(t, refused, phoenix.StatusError, map[string]string{"reason": "unauthorized"})
	var je *JoinError
	require.ErrorAs(t, <-joinErr, &je)
	require.Equal(t, "unauthorized", je.Reason)
	rec.waitState(t, StateUp)

	push := func(joinRef *string, topic, id string) {
		fc.send(t, phoenix.Frame{JoinRef: joinRef, Topic: topic, Event: "message_created", Payload: json.RawMessage(`{"id":"` + id + `"}`)})
	}
	push(join.JoinRef, "chat_room:r1", "matching")
	push(phoenix.Ref("999"), "chat_room:r1", "stale-join")
	push(nil, "chat_room:r1", "null-join")
	push(refused.JoinRef, "chat_room:secret", "not-joined")
	push(nil, "chat_room:r1", "last")
	var got []string
	for len(got) < 3 {
		p := <-rec.pushes
		var body struct{ ID string }
		require.NoError(t, json.Unmarshal(p.Payload, &body))
		got = append(got, body.ID)
	}
	require.Equal(t, []string{"matching", "null-join", "last"}, got)
}

func TestSocket_unansweredHeartbeatReconnectsWithFreshCredential(t *testing.T) {
	t.Parallel()
	fp := newFakePhoenix(t)
	var reads atomic.Int32
	cred := credFunc(func() string { return "key-" + string(rune('a'+reads.Add(1)-1)) })
	cfg := testSocketConfig(fp.srv.URL, cred)
	// A heartbeat unanswered by the next tick ends the session, so the
	// tick is the test's reply window too: at 20 ms, a reply delayed by
	// a loaded CI machine ended the second session and the test waited
	// on a dead connection ("no frame").
	cfg.Heartbeat = 300 * time.Millisecond
	s, err := NewSocket(cfg)
	require.NoError(t, err)
	rec := newRecorder(func(context.Context, *Session) error { return nil })
	runSocket(t, s, rec)

	first := fp.accept(t)
	require.Equal(t, "key-a", first.header.Get("X-Api-Key"))
	hb := first.next(t)
	require.Equal(t, phoenix.EventHeartbeat, hb.Event)
	require.Equal(t, phoenix.TopicPhoenix, hb.Topic)
	require.Nil(t, hb.JoinRef)
	// No reply: the next tick ends the session.
	sc := rec.waitState(t, StateReconnecting)
	require.ErrorContains(t, sc.err, "heartbeat unanswered")

	second := fp.accept(t)
	require.Equal(t, "key-b", second.header.Get("X-Api-Key"), "every connection reads the credential afresh")
	// Answered heartbeats keep the session up.
	for range 3 {
		hb := second.next(t)
		second.reply(t, hb, phoenix.StatusOK, nil)
	}
	select {
	case sc := <-rec.states:
		require.NotEqual(t, StateReconnecting, sc.st, "answered heartbeats must not end the session: %v", sc.err)
	default:
	}
}

func TestSocket_supersedeIsTerminal(t *testing.T) {
	t.Parallel()
	fp := newFakePhoenix(t)
	s, err := NewSocket(testSocketConfig(fp.srv.URL, APIKey("k")))
	require.NoError(t, err)
	rec := newRecorder(func(ctx context.Context, s *Session) error { return s.Join(ctx, "agent_control:a1") })
	_, done := runSocket(t, s, rec)
	fc := fp.accept(t)
	join := fc.nextNot(t, phoenix.EventHeartbeat)
	fc.reply(t, join, phoenix.StatusOK, nil)
	rec.waitState(t, StateUp)
	fc.send(t, phoenix.Frame{JoinRef: join.JoinRef, Topic: "agent_control:a1", Event: "supersede", Payload: json.RawMessage(`{"reason":"replaced","message":"m","retryable":false}`)})
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrSuperseded)
	case <-time.After(30 * time.Second):
		t.Fatal("supersede did not end Run")
	}
	select {
	case <-fp.conns:
		t.Fatal("a superseded socket reconnected")
	default:
	}
}

func TestSocket_connectedErrorReconnects(t *testing.T) {
	t.Parallel()
	fp := newFakePhoenix(t)
	s, err := NewSocket(testSocketConfig(fp.srv.URL, APIKey("k")))
	require.NoError(t, err)
	var calls atomic.Int32
	rec := newRecorder(func(context.Context, *Session) error {
		if calls.Add(1) == 1 {
			return errors.New("list rooms: 500")
		}
		return nil
	})
	runSocket(t, s, rec)
	fp.accept(t)
	sc := rec.waitState(t, StateReconnecting)
	require.ErrorContains(t, sc.err, "list rooms: 500")
	fp.accept(t)
	rec.waitState(t, StateUp)
}

func TestSocket_backoff(t *testing.T) {
	t.Parallel()
	s, err := NewSocket(SocketConfig{BaseURL: "http://h", Credential: APIKey("k"), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	want := []time.Duration{2, 4, 8, 16, 32, 60, 60}
	for failures, w := range want {
		d := s.backoff(failures)
		require.GreaterOrEqual(t, d, w*time.Second, "failures=%d", failures)
		require.LessOrEqual(t, d, w*time.Second+time.Second, "failures=%d: jitter is at most 1s", failures)
	}
}

func TestSocketURL(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want, err string }{
		{in: "https://app.band.ai", want: "wss://app.band.ai/api/v1/socket/websocket"},
		{in: "http://127.0.0.1:4000/", want: "ws://127.0.0.1:4000/api/v1/socket/websocket"},
		{in: "ftp://x", err: "want http(s)://host"},
		{in: "not a url", err: "want http(s)://host"},
	}
	for _, tc := range cases {
		got, err := SocketURL(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

// credFunc is a Credential whose key comes from a function.
type credFunc func() string

func (f credFunc) Key(context.Context) (string, error) { return f(), nil }
func (credFunc) Refresh(context.Context) error         { return ErrNotRefreshable }
func (credFunc) Bearer() bool                          { return false }

// leavingHandler leaves chat_room:r1 when agent_rooms:a pushes
// room_removed, like the agent feed does.
type leavingHandler struct {
	*recorder
}

func (h leavingHandler) Push(ctx context.Context, s *Session, p Push) {
	if p.Event == "room_removed" {
		if err := s.Leave(ctx, "chat_room:r1"); err != nil {
			panic(err)
		}
	}
	h.recorder.Push(ctx, s, p)
}

// TestSocket_serverCloseOfAChannelJudgedInOrder: the server closing a
// channel the handler has just left, because of a push that came before
// the close, is expected and keeps the session; closing a channel still
// joined ends it.
func TestSocket_serverCloseOfAChannelJudgedInOrder(t *testing.T) {
	t.Parallel()
	fp := newFakePhoenix(t)
	s, err := NewSocket(testSocketConfig(fp.srv.URL, APIKey("k")))
	require.NoError(t, err)
	rec := newRecorder(func(ctx context.Context, s *Session) error {
		if err := s.Join(ctx, "agent_rooms:a"); err != nil {
			return err
		}
		return s.Join(ctx, "chat_room:r1")
	})
	runSocket(t, s, leavingHandler{rec})
	fc := fp.accept(t)
	rooms := fc.nextNot(t, phoenix.EventHeartbeat)
	fc.reply(t, rooms, phoenix.StatusOK, nil)
	r1 := fc.nextNot(t, phoenix.EventHeartbeat)
	fc.reply(t, r1, phoenix.StatusOK, nil)
	rec.waitState(t, StateUp)

	// The server removes the room: the push, then at once the close of
	// the room's channel, before the client's leave arrives.
	fc.send(t, phoenix.Frame{JoinRef: rooms.JoinRef, Topic: "agent_rooms:a", Event: "room_removed", Payload: json.RawMessage(`{"id":"r1"}`)})
	fc.send(t, phoenix.Frame{JoinRef: r1.JoinRef, Topic: "chat_room:r1", Event: phoenix.EventClose, Payload: json.RawMessage(`{}`)})
	leave := fc.nextNot(t, phoenix.EventHeartbeat)
	require.Equal(t, phoenix.EventLeave, leave.Event)
	fc.reply(t, leave, phoenix.StatusOK, nil)
	require.Equal(t, "room_removed", (<-rec.pushes).Event)

	// A marker push after the close proves the close was judged (it is
	// handled in order) and did not end the session.
	fc.send(t, phoenix.Frame{JoinRef: rooms.JoinRef, Topic: "agent_rooms:a", Event: "marker", Payload: json.RawMessage(`{}`)})
	require.Equal(t, "marker", (<-rec.pushes).Event)
	select {
	case sc := <-rec.states:
		t.Fatalf("the expected close changed the state: %v %v", sc.st, sc.err)
	default:
	}

	// Closing a channel still joined ends the session.
	fc.send(t, phoenix.Frame{JoinRef: rooms.JoinRef, Topic: "agent_rooms:a", Event: phoenix.EventClose, Payload: json.RawMessage(`{}`)})
	sc := rec.waitState(t, StateReconnecting)
	require.ErrorContains(t, sc.err, "server closed channel agent_rooms:a")
}
