package bandtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
)

// waitTimeout bounds every wait for a frame, a reply or a close.
const waitTimeout = 15 * time.Second

// heartbeatEvery keeps long scenarios (real Band, restarts) under Band's
// 45 s inactivity limit. Band's own clients beat every 30 s.
const heartbeatEvery = 20 * time.Second

// socket is a raw Phoenix v2 client connection. One goroutine (the test's)
// uses it at a time; a reader goroutine feeds it frames and a heartbeat
// goroutine keeps it alive, and Close waits for both.
type socket struct {
	name string
	conn *websocket.Conn
	oas  *openAPI

	items chan item     // closed by the reader when the connection ends
	stop  chan struct{} // closed by close to release the goroutines
	wg    sync.WaitGroup
	once  sync.Once

	readErr error // set by the reader before it closes items

	ref     atomic.Int64
	joins   map[string]string // topic → join_ref of the current join; test goroutine only
	pending []phoenix.Frame   // frames read but not yet consumed; test goroutine only
}

// item is one frame from the reader, or the reason a frame was unusable.
type item struct {
	frame phoenix.Frame
	raw   []byte
	err   error
}

// dialSocket opens a socket. It returns the handshake response when the
// server refused the upgrade. The socket is closed when t ends.
func dialSocket(t *testing.T, name, rawURL string, oas *openAPI) (*socket, *http.Response, error) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true // a refused upgrade must not leave a pooled connection behind
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, rawURL, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return nil, res, err
	}
	conn.SetReadLimit(phoenix.MaxFrameBytes)
	s := &socket{
		name:  name,
		conn:  conn,
		oas:   oas,
		items: make(chan item, 256),
		stop:  make(chan struct{}),
		joins: map[string]string{},
	}
	s.wg.Go(s.readLoop)
	s.wg.Go(s.heartbeatLoop)
	t.Cleanup(s.close)
	return s, res, nil
}

func (s *socket) readLoop() {
	defer close(s.items)
	for {
		_, b, err := s.conn.Read(context.Background())
		if err != nil {
			s.readErr = err
			return
		}
		f, err := phoenix.Decode(b)
		select {
		case s.items <- item{frame: f, raw: b, err: err}:
		case <-s.stop:
			s.readErr = errors.New("socket closed by the test")
			return
		}
	}
}

func (s *socket) heartbeatLoop() {
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			b, _ := phoenix.Frame{Ref: phoenix.Ref(s.nextRef()), Topic: phoenix.TopicPhoenix, Event: phoenix.EventHeartbeat}.Encode()
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			err := s.conn.Write(ctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				return // the connection is gone; the reader reports why
			}
		}
	}
}

// close closes the connection and waits for the socket's goroutines.
func (s *socket) close() {
	s.once.Do(func() {
		close(s.stop)
		_ = s.conn.Close(websocket.StatusNormalClosure, "")
		_ = s.conn.CloseNow()
		s.wg.Wait()
	})
}

func (s *socket) nextRef() string { return strconv.FormatInt(s.ref.Add(1), 10) }

// sendRaw writes one text message as is.
func (s *socket) sendRaw(t *testing.T, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	require.NoError(t, s.conn.Write(ctx, websocket.MessageText, b), "%s: write", s.name)
}

func (s *socket) send(t *testing.T, f phoenix.Frame) {
	t.Helper()
	b, err := f.Encode()
	require.NoError(t, err)
	s.sendRaw(t, b)
}

// next returns the next frame, from the frames set aside first. ok is false
// when the connection has ended; the test fails on timeout or when the
// server sends something that is not a v2 frame.
func (s *socket) next(t *testing.T, deadline <-chan time.Time, what string) (phoenix.Frame, bool) {
	t.Helper()
	if len(s.pending) > 0 {
		f := s.pending[0]
		s.pending = s.pending[1:]
		return f, true
	}
	select {
	case it, ok := <-s.items:
		if !ok {
			return phoenix.Frame{}, false
		}
		require.NoError(t, it.err, "%s: the server sent a frame that is not Phoenix v2: %q", s.name, it.raw)
		return it.frame, true
	case <-deadline:
		require.FailNow(t, "timed out", "%s: no %s within %s", s.name, what, waitTimeout)
		return phoenix.Frame{}, false
	}
}

// await returns the first frame that matches, setting the others aside in
// arrival order for later waits. It fails if the connection ends first.
func (s *socket) await(t *testing.T, what string, match func(phoenix.Frame) bool) phoenix.Frame {
	t.Helper()
	deadline := time.After(waitTimeout)
	var skipped []phoenix.Frame
	defer func() { s.pending = append(skipped, s.pending...) }()
	for {
		f, ok := s.next(t, deadline, what)
		if !ok {
			require.FailNow(t, "socket closed", "%s: connection ended (%v) while waiting for %s; frames seen: %s", s.name, s.readErr, what, describe(skipped))
		}
		if match(f) {
			return f
		}
		skipped = append(skipped, f)
	}
}

// nextPush returns the first server push (any frame that is not a reply),
// dropping replies on the way.
func (s *socket) nextPush(t *testing.T) phoenix.Frame {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		f, ok := s.next(t, deadline, "push")
		if !ok {
			require.FailNow(t, "socket closed", "%s: connection ended (%v) while waiting for a push", s.name, s.readErr)
		}
		if f.Event != phoenix.EventReply {
			return f
		}
	}
}

// awaitClosed waits for the server to end the connection and returns the
// reader's error. Frames that arrive first are set aside.
func (s *socket) awaitClosed(t *testing.T) error {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case it, ok := <-s.items:
			if !ok {
				return s.readErr
			}
			if it.err == nil {
				s.pending = append(s.pending, it.frame)
			}
		case <-deadline:
			require.FailNow(t, "timed out", "%s: the server did not close the connection within %s", s.name, waitTimeout)
		}
	}
}

// reply is the decoded payload of a phx_reply.
type reply struct {
	Status   string          `json:"status"`
	Response json.RawMessage `json:"response"`
}

// reason returns response.reason of an error reply, or "".
func (r reply) reason() string {
	var v struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(r.Response, &v)
	return v.Reason
}

// request sends a frame with a fresh ref and waits for its reply, which
// must echo the topic, ref and join_ref.
func (s *socket) request(t *testing.T, joinRef *string, topic, event string) (reply, phoenix.Frame) {
	t.Helper()
	ref := s.nextRef()
	if event == phoenix.EventJoin {
		joinRef = phoenix.Ref(ref)
	}
	s.send(t, phoenix.Frame{JoinRef: joinRef, Ref: phoenix.Ref(ref), Topic: topic, Event: event, Payload: json.RawMessage(`{}`)})
	f := s.await(t, fmt.Sprintf("phx_reply to %s %s (ref %s)", event, topic, ref), func(f phoenix.Frame) bool {
		return f.Event == phoenix.EventReply && f.Topic == topic && phoenix.RefString(f.Ref) == ref
	})
	require.Equal(t, joinRef, f.JoinRef, "%s: the reply to %s %s must echo join_ref", s.name, event, topic)
	var r reply
	require.NoError(t, json.Unmarshal(f.Payload, &r), "%s: reply payload %s", s.name, f.Payload)
	require.Contains(t, []string{phoenix.StatusOK, phoenix.StatusError}, r.Status, "%s: reply status in %s", s.name, f.Payload)
	return r, f
}

// join sends phx_join and returns the reply; on ok it records the join_ref.
func (s *socket) join(t *testing.T, topic string) reply {
	t.Helper()
	r, f := s.request(t, nil, topic, phoenix.EventJoin)
	if r.Status == phoenix.StatusOK {
		s.joins[topic] = phoenix.RefString(f.JoinRef)
	}
	return r
}

// mustJoin joins and requires an ok reply.
func (s *socket) mustJoin(t *testing.T, topic string) {
	t.Helper()
	r := s.join(t, topic)
	require.Equal(t, phoenix.StatusOK, r.Status, "%s: join %s refused: %s", s.name, topic, r.Response)
}

// leave sends phx_leave for a joined topic and returns the reply.
func (s *socket) leave(t *testing.T, topic string) reply {
	t.Helper()
	jr, ok := s.joins[topic]
	require.True(t, ok, "%s: leave of %s, which is not joined", s.name, topic)
	r, _ := s.request(t, phoenix.Ref(jr), topic, phoenix.EventLeave)
	delete(s.joins, topic)
	return r
}

// awaitMessage waits for message_created of message id on topic and checks
// the frame: ref null and the channel's join_ref (Band's Python client drops
// pushes whose join_ref differs from its join), and a ChatMessage payload.
func (s *socket) awaitMessage(t *testing.T, topic, id string) message {
	t.Helper()
	f := s.await(t, "message_created "+id+" on "+topic, func(f phoenix.Frame) bool {
		return f.Topic == topic && f.Event == "message_created" && pushID(f) == id
	})
	return s.checkMessagePush(t, f, topic)
}

func (s *socket) checkMessagePush(t *testing.T, f phoenix.Frame, topic string) message {
	t.Helper()
	require.Equal(t, topic, f.Topic, "%s: push topic", s.name)
	require.Equal(t, "message_created", f.Event, "%s: push event (payload %s)", s.name, f.Payload)
	require.Nil(t, f.Ref, "%s: a push must carry ref null", s.name)
	require.NotNil(t, f.JoinRef, "%s: a push must carry the channel's join_ref, got null", s.name)
	require.Equal(t, s.joins[topic], *f.JoinRef, "%s: a push must carry the join_ref of the current join", s.name)
	if s.oas != nil {
		s.oas.checkSchema(t, "ws:message_created", "ChatMessage", f.Payload)
	}
	var m message
	require.NoError(t, json.Unmarshal(f.Payload, &m), "%s: message_created payload", s.name)
	require.Equal(t, "text", m.MessageType, "%s: message_created is for text messages only", s.name)
	return m
}

func pushID(f phoenix.Frame) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(f.Payload, &v)
	return v.ID
}

func describe(fs []phoenix.Frame) string {
	if len(fs) == 0 {
		return "none"
	}
	out := ""
	for _, f := range fs {
		b, _ := f.Encode()
		out += string(b) + " "
	}
	return out
}

// socketFor opens a socket for an API key (and extra query parameters),
// failing the test if the upgrade is refused.
func (e *env) socketFor(t *testing.T, name, key string, extra url.Values) *socket {
	t.Helper()
	s, res, err := dialSocket(t, name, e.SocketURL(key, extra), e.oas)
	require.NoError(t, err, "%s: dial (response %s)", name, describeResponse(res))
	return s
}

func describeResponse(res *http.Response) string {
	if res == nil {
		return "none"
	}
	var body []byte
	if res.Body != nil {
		body = make([]byte, 1024)
		n, _ := res.Body.Read(body)
		body = body[:n]
	}
	return fmt.Sprintf("%d %s", res.StatusCode, body)
}
