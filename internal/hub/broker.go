package hub

import (
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/coder/websocket"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
)

// broker knows every open socket and which topics each has joined, and
// fans pushes out to them. Lock order: activity.mu, then broker.mu, then
// socket.mu. Pushing never blocks: a socket whose queue is full is closed.
type broker struct {
	log *slog.Logger

	mu      sync.Mutex
	closed  bool                            // guarded by mu; set by closeAll
	sockets map[*socket]struct{}            // guarded by mu
	agents  map[string]*socket              // guarded by mu; the one socket per agent id
	topics  map[string]map[*socket]struct{} // guarded by mu; subscribers per topic
}

func newBroker(log *slog.Logger) *broker {
	return &broker{
		log:     log,
		sockets: map[*socket]struct{}{},
		agents:  map[string]*socket{},
		topics:  map[string]map[*socket]struct{}{},
	}
}

// supersedeMessage is what a superseded agent socket is told.
var supersedeMessage = protocol.Supersede{
	Reason:    "superseded",
	Message:   "A newer connection for this agent replaced this one",
	Retryable: false,
}

// add registers s; false once the hub is stopping. An agent socket
// replaces the agent's previous one, which is sent supersede on its
// agent_control channel (if joined) and then closed.
func (b *broker) add(s *socket) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.sockets[s] = struct{}{}
	if s.who.Agent {
		id := s.who.agent.ID
		if old := b.agents[id]; old != nil {
			old.push(protocol.Topic(protocol.TopicAgentControl, id), protocol.EventSupersede, mustJSON(supersedeMessage))
			old.close(websocket.StatusPolicyViolation, "superseded by a newer connection")
		}
		b.agents[id] = s
	}
	return true
}

// hasAgent reports whether an agent has a socket.
func (b *broker) hasAgent(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.agents[id] != nil
}

// remove forgets s and its subscriptions.
func (b *broker) remove(s *socket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.sockets, s)
	if s.who.Agent && b.agents[s.who.agent.ID] == s {
		delete(b.agents, s.who.agent.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic := range s.joins {
		b.unsubscribeLocked(topic, s)
	}
	s.joins = map[string]*string{}
}

// join subscribes s to topic under the frame's join_ref and queues the ok
// reply in the same critical section, so no push can overtake the reply.
func (b *broker) join(s *socket, f phoenix.Frame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.joins[f.Topic] = f.JoinRef
	subs := b.topics[f.Topic]
	if subs == nil {
		subs = map[*socket]struct{}{}
		b.topics[f.Topic] = subs
	}
	subs[s] = struct{}{}
	s.replyLocked(f, phoenix.StatusOK, nil)
}

// leave unsubscribes s from topic.
func (b *broker) leave(s *socket, topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.joins, topic)
	b.unsubscribeLocked(topic, s)
}

func (b *broker) unsubscribeLocked(topic string, s *socket) {
	if subs := b.topics[topic]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(b.topics, topic)
		}
	}
}

// publish pushes event on topic to every subscriber that to accepts (nil
// accepts all). The payload is marshalled once.
func (b *broker) publish(topic, event string, payload any, to func(*socket) bool) {
	raw, err := json.Marshal(payload)
	if err != nil {
		b.log.Error("marshal push", "topic", topic, "event", event, "err", err)
		return
	}
	b.mu.Lock()
	subs := make([]*socket, 0, len(b.topics[topic]))
	for s := range b.topics[topic] {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, s := range subs {
		if to == nil || to(s) {
			s.push(topic, event, raw)
		}
	}
}

// evict takes id's sockets off the room's channels, sending phx_close on
// each, after the participant was removed from the room.
func (b *broker) evict(roomID, id string) {
	topics := []string{
		protocol.Topic(protocol.TopicChatRoom, roomID),
		protocol.Topic(protocol.TopicRoomParticipants, roomID),
		protocol.Topic(protocol.TopicRoomActivity, roomID),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.sockets {
		if s.who.id() != id {
			continue
		}
		s.mu.Lock()
		for _, t := range topics {
			if ref, ok := s.joins[t]; ok {
				s.enqueueLocked(phoenix.Frame{JoinRef: ref, Topic: t, Event: phoenix.EventClose, Payload: json.RawMessage("{}")})
				delete(s.joins, t)
				b.unsubscribeLocked(t, s)
			}
		}
		s.mu.Unlock()
	}
}

// closeIdentity closes every socket acting as id.
func (b *broker) closeIdentity(id string, code websocket.StatusCode, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.sockets {
		if s.who.id() == id {
			s.close(code, reason)
		}
	}
}

// closeAll closes every socket and refuses new ones.
// closeAll starts the close handshake of every socket and refuses new
// ones; it returns the sockets so the caller can wait for their writers.
func (b *broker) closeAll(code websocket.StatusCode, reason string) []*socket {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	out := make([]*socket, 0, len(b.sockets))
	for s := range b.sockets {
		s.close(code, reason)
		out = append(out, s)
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with fixed, marshalable values
	}
	return b
}
