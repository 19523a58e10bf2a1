package hub

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
)

// socketWriteTimeout bounds one frame write; a peer that cannot take a
// frame in this long is cut off.
const socketWriteTimeout = 10 * time.Second

// socket is one WebSocket connection. The HTTP handler goroutine reads;
// one writer goroutine owns every write, fed by a bounded queue. Closing
// is a request to the writer: it sends what is already queued (so a
// supersede push arrives before the close frame), then the close frame.
type socket struct {
	conn       *websocket.Conn
	who        principal
	log        *slog.Logger
	out        chan []byte   // bounded outbound queue
	closeCh    chan struct{} // closed when closing starts
	writerDone chan struct{}

	mu      sync.Mutex
	joins   map[string]*string // guarded by mu; topic → join_ref
	closing bool               // guarded by mu
	code    websocket.StatusCode
	reason  string
}

func newSocket(conn *websocket.Conn, who principal, queue int, log *slog.Logger) *socket {
	return &socket{
		conn: conn, who: who, log: log,
		out:        make(chan []byte, queue),
		closeCh:    make(chan struct{}),
		writerDone: make(chan struct{}),
		joins:      map[string]*string{},
	}
}

// push queues a server push on topic if the socket joined it, stamped with
// the channel's join_ref and a null ref.
func (s *socket) push(topic, event string, payload json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.joins[topic]
	if !ok {
		return
	}
	s.enqueueLocked(phoenix.Frame{JoinRef: ref, Topic: topic, Event: event, Payload: payload})
}

// reply queues the phx_reply to a client frame.
func (s *socket) reply(to phoenix.Frame, status string, response any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replyLocked(to, status, response)
}

func (s *socket) replyLocked(to phoenix.Frame, status string, response any) {
	f, err := phoenix.ReplyFrame(to, status, response)
	if err != nil {
		s.log.Error("build reply", "err", err)
		return
	}
	s.enqueueLocked(f)
}

// enqueueLocked queues a frame; a full queue closes the socket (1013, try
// again later) rather than blocking the hub on a slow reader.
func (s *socket) enqueueLocked(f phoenix.Frame) {
	if s.closing {
		return
	}
	b, err := f.Encode()
	if err != nil {
		s.log.Error("encode frame", "topic", f.Topic, "event", f.Event, "err", err)
		return
	}
	select {
	case s.out <- b:
	default:
		s.log.Warn("socket queue overflow; closing", "queue", cap(s.out))
		s.closeLocked(websocket.StatusTryAgainLater, "outbound queue overflow")
	}
}

func (s *socket) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *socket) joined(topic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.joins[topic]
	return ok
}

// close asks the writer to flush and close with code; the first call wins.
func (s *socket) close(code websocket.StatusCode, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked(code, reason)
}

func (s *socket) closeLocked(code websocket.StatusCode, reason string) {
	if s.closing {
		return
	}
	s.closing, s.code, s.reason = true, code, reason
	close(s.closeCh)
}

// writeLoop writes queued frames until the socket closes.
func (s *socket) writeLoop() {
	defer close(s.writerDone)
	for {
		select {
		case b := <-s.out:
			if err := s.write(b); err != nil {
				s.conn.CloseNow() //nolint:errcheck // the connection is already broken
				return
			}
		case <-s.closeCh:
			if !s.drain() {
				return
			}
			s.mu.Lock()
			code, reason := s.code, s.reason
			s.mu.Unlock()
			s.conn.Close(code, reason) //nolint:errcheck // best effort; the peer may be gone
			return
		}
	}
}

// drain writes what is still queued; false if the connection broke.
func (s *socket) drain() bool {
	for {
		select {
		case b := <-s.out:
			if err := s.write(b); err != nil {
				s.conn.CloseNow() //nolint:errcheck // the connection is already broken
				return false
			}
		default:
			return true
		}
	}
}

func (s *socket) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), socketWriteTimeout)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageText, b)
}

// serveSocket is GET /api/v1/socket/websocket. Authentication happens
// before the upgrade, so a bad key is an HTTP 401 with Band's envelope.
func (h *Hub) serveSocket(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	w.Header().Set("X-Request-ID", reqID)
	d := h.db.Load()
	q := r.URL.Query()
	key := strings.TrimSpace(r.Header.Get("X-Api-Key"))
	if key == "" {
		key = q.Get("api_key")
	}
	if key == "" {
		writeError(w, reqID, errUnauthorized())
		return
	}
	who, err := principalByKey(r.Context(), d.reader, key)
	if errors.Is(err, sql.ErrNoRows) {
		writeError(w, reqID, errUnauthorized())
		return
	}
	if err != nil {
		h.internal(w, r, reqID, err)
		return
	}
	if raw := q.Get("agent_id"); raw != "" {
		id, ok := parseUUID(raw)
		switch {
		case !ok:
			writeError(w, reqID, errForbidden("agent_id is not an agent this key may act as"))
			return
		case who.Agent && who.agent.ID != id:
			writeError(w, reqID, errForbidden("agent_id is not an agent this key may act as"))
			return
		case !who.Agent:
			as, err := agentPrincipal(r.Context(), d.reader, id)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && as.UserID != who.UserID) {
				writeError(w, reqID, errForbidden("agent_id is not an agent this key may act as"))
				return
			}
			if err != nil {
				h.internal(w, r, reqID, err)
				return
			}
			who = as
		}
	}
	switch q.Get("on_conflict") {
	case "", "supersede":
	case "reject":
		if who.Agent && h.broker.hasAgent(who.agent.ID) {
			writeError(w, reqID, &apiError{status: http.StatusConflict, code: codeConnectionConflict, message: "This agent already has a connection"})
			return
		}
	default:
		writeError(w, reqID, errBadRequest(codeInvalidOnConflict, "on_conflict must be supersede or reject"))
		return
	}
	// Keys, not cookies, authenticate: a cross-origin page gains nothing,
	// and jam's web UI is served from another port.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the request
	}
	conn.SetReadLimit(phoenix.MaxFrameBytes)
	if q.Get("vsn") != "2.0.0" {
		conn.Close(websocket.StatusInternalError, "vsn=2.0.0 is required") //nolint:errcheck // refusing anyway
		return
	}
	log := h.log.With("socket", reqID, "identity", who.id(), "agent", who.Agent)
	s := newSocket(conn, who, h.cfg.SocketQueue, log)
	if !h.broker.add(s) {
		conn.Close(websocket.StatusServiceRestart, "hub stopping") //nolint:errcheck // refusing anyway
		return
	}
	h.wg.Go(s.writeLoop) // the handler's own tracking keeps the count above zero
	log.Debug("socket open")
	h.readLoop(r.Context(), s)
	s.close(websocket.StatusNormalClosure, "")
	<-s.writerDone
	s.conn.CloseNow() //nolint:errcheck // may already be closed
	h.broker.remove(s)
	log.Debug("socket closed")
}

// readLoop reads frames until the connection ends. A read waits at most
// HeartbeatTimeout: a socket silent that long is dropped (the library
// closes the connection when the read's context expires).
func (h *Hub) readLoop(ctx context.Context, s *socket) {
	for {
		rctx, cancel := context.WithTimeout(ctx, h.cfg.HeartbeatTimeout)
		typ, b, err := s.conn.Read(rctx)
		timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			if timedOut {
				s.log.Info("socket heartbeat timeout", "timeout", h.cfg.HeartbeatTimeout)
			}
			return
		}
		if s.isClosing() {
			continue // draining until the close handshake ends
		}
		if typ != websocket.MessageText {
			s.close(websocket.StatusUnsupportedData, "binary frames are not supported")
			continue
		}
		f, err := phoenix.Decode(b)
		if err != nil {
			s.log.Info("malformed frame; closing", "err", err)
			s.close(websocket.StatusPolicyViolation, "malformed phoenix frame")
			continue
		}
		h.handleFrame(ctx, s, f)
	}
}

// joinError is the response of a refused join.
type joinError struct {
	Reason string `json:"reason"`
}

// handleFrame answers one client frame: heartbeat, join or leave.
func (h *Hub) handleFrame(ctx context.Context, s *socket, f phoenix.Frame) {
	switch {
	case f.Topic == phoenix.TopicPhoenix && f.Event == phoenix.EventHeartbeat:
		s.reply(f, phoenix.StatusOK, nil)
	case f.Event == phoenix.EventJoin:
		if reason := h.mayJoin(ctx, s.who, f.Topic); reason != "" {
			s.reply(f, phoenix.StatusError, joinError{Reason: reason})
			return
		}
		prefix, room, _ := protocol.SplitTopic(f.Topic)
		if prefix != protocol.TopicRoomActivity {
			h.broker.join(s, f)
			return
		}
		// Joined and snapshotted under the activity lock, which reports
		// also hold while they broadcast: each change reaches the new
		// socket once, in the snapshot or as a push, never both.
		h.act.joinWithSnapshot(room, func() { h.broker.join(s, f) }, func(agent string, until time.Time) {
			s.push(f.Topic, protocol.EventActivity, mustJSON(protocol.Activity{ParticipantID: agent, Working: true, ExpiresAt: protocol.FormatTime(until)}))
		})
	case f.Event == phoenix.EventLeave:
		h.broker.leave(s, f.Topic)
		s.reply(f, phoenix.StatusOK, nil)
	case !s.joined(f.Topic):
		s.reply(f, phoenix.StatusError, joinError{Reason: "unmatched topic"})
	default:
		// Band's channels are server→client only.
		s.reply(f, phoenix.StatusError, joinError{Reason: "unhandled event"})
	}
}

// mayJoin applies band-protocol.md §4.3; "" allows the join, anything
// else is the refusal reason.
func (h *Hub) mayJoin(ctx context.Context, who principal, topic string) string {
	prefix, id, ok := protocol.SplitTopic(topic)
	if !ok {
		return "unmatched topic"
	}
	switch prefix {
	case protocol.TopicChatRoom, protocol.TopicRoomParticipants, protocol.TopicRoomActivity:
		room, ok := parseUUID(id)
		d := h.db.Load()
		if !ok || d == nil || room != id {
			return "unauthorized"
		}
		if _, err := participantOf(ctx, d.reader, room, who.id()); err != nil {
			return "unauthorized"
		}
		return ""
	case protocol.TopicUserRooms, protocol.TopicUserContacts, protocol.TopicTasks:
		if who.Agent || id != who.UserID {
			return "unauthorized"
		}
		return ""
	case protocol.TopicAgentRooms, protocol.TopicAgentContacts, protocol.TopicAgentControl:
		if !who.Agent || id != who.agent.ID {
			return "unauthorized"
		}
		return ""
	}
	return "unmatched topic"
}
