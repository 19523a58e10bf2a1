package band

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
)

// AgentEventKind says what an AgentEvent reports.
type AgentEventKind string

// Agent feed events.
const (
	// AgentMessage: a message addressed to the agent, pushed live or
	// replayed from the room's unprocessed queue (CatchUp). The same
	// message may arrive more than once; consumers deduplicate by id.
	AgentMessage AgentEventKind = "message"
	// AgentRoomAdded / AgentRoomRemoved: the agent's membership changed.
	AgentRoomAdded   AgentEventKind = "room_added"
	AgentRoomRemoved AgentEventKind = "room_removed"
	// AgentRoomsListed: the complete list of the agent's rooms (Rooms),
	// read at every connect before any room is caught up.
	AgentRoomsListed AgentEventKind = "rooms_listed"
	// AgentParticipants: a room's roster changed; re-read it over REST.
	AgentParticipants AgentEventKind = "participants_changed"
	// AgentState: the connection state changed.
	AgentState AgentEventKind = "state"
)

// AgentEvent is one observation of an agent's feed.
type AgentEvent struct {
	Kind  AgentEventKind
	Room  string
	Rooms []string
	// ListedAt is when the listing of Rooms began (rooms_listed).
	ListedAt time.Time
	Message  *protocol.Message
	CatchUp  bool
	State    ConnState
	Err      error
}

// AgentFeedConfig configures an AgentFeed.
type AgentFeedConfig struct {
	// Client is the agent's REST client.
	Client *Client
	// Socket configures the socket; BaseURL and Credential default to the
	// client's.
	Socket SocketConfig
	// ListTimeout bounds the room listing at connect. Default 20s.
	ListTimeout time.Duration
	Logger      *slog.Logger
}

// AgentFeed drives one agent's socket and reports what it sees.
type AgentFeed struct {
	cfg     AgentFeedConfig
	agentID string
	onEvent func(AgentEvent)
	socket  *Socket
	log     *slog.Logger
}

// NewAgentFeed builds a feed for the agent whose id is agentID. onEvent
// receives every event, one at a time, from the feed's goroutines; it must
// return quickly (hand work off to a queue).
func NewAgentFeed(cfg AgentFeedConfig, agentID string, onEvent func(AgentEvent)) (*AgentFeed, error) {
	if cfg.Client == nil || onEvent == nil || cfg.Logger == nil || agentID == "" {
		return nil, errors.New("agent feed: client, agent id, event function and logger are required")
	}
	if cfg.ListTimeout == 0 {
		cfg.ListTimeout = 20 * time.Second
	}
	s, err := newClientSocket(cfg.Socket, cfg.Client, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &AgentFeed{cfg: cfg, agentID: agentID, onEvent: onEvent, socket: s, log: cfg.Logger.With("component", "agent-feed", "agent", agentID)}, nil
}

// Run runs the feed until ctx ends or the agent is superseded.
func (f *AgentFeed) Run(ctx context.Context) error {
	return f.socket.Run(ctx, (*agentHandler)(f))
}

type agentHandler AgentFeed

func (h *agentHandler) State(st ConnState, err error) {
	h.onEvent(AgentEvent{Kind: AgentState, State: st, Err: err})
}

// Connected joins the agent's channels, lists its rooms, joins and catches
// up each one. Any failure ends the session, so the feed is never Up with
// rooms it does not hear.
func (h *agentHandler) Connected(ctx context.Context, s *Session) error {
	for _, prefix := range []string{protocol.TopicAgentControl, protocol.TopicAgentRooms, protocol.TopicAgentContacts} {
		if err := s.Join(ctx, protocol.Topic(prefix, h.agentID)); err != nil {
			var je *JoinError
			if prefix == protocol.TopicAgentControl && errors.As(err, &je) {
				continue // an older platform without the control channel
			}
			return err
		}
	}
	listedAt := time.Now()
	lctx, cancel := context.WithTimeout(ctx, h.cfg.ListTimeout)
	rooms, err := h.cfg.Client.AgentChats(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("list rooms: %w", err)
	}
	ids := make([]string, len(rooms))
	for i, r := range rooms {
		ids[i] = r.ID
	}
	h.onEvent(AgentEvent{Kind: AgentRoomsListed, Rooms: ids, ListedAt: listedAt})
	for _, r := range rooms {
		if err := h.enterRoom(ctx, s, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// enterRoom joins a room's channels and replays its unprocessed messages.
func (h *agentHandler) enterRoom(ctx context.Context, s *Session, room string) error {
	for _, prefix := range []string{protocol.TopicChatRoom, protocol.TopicRoomParticipants} {
		if err := s.Join(ctx, protocol.Topic(prefix, room)); err != nil {
			return err
		}
	}
	pending, err := h.cfg.Client.AgentPending(ctx, room)
	if err != nil {
		return fmt.Errorf("catch up room %s: %w", room, err)
	}
	for i := range pending {
		m := pending[i]
		if m.ChatRoomID == "" {
			m.ChatRoomID = room
		}
		h.onEvent(AgentEvent{Kind: AgentMessage, Room: room, Message: &m, CatchUp: true})
	}
	return nil
}

func (h *agentHandler) Push(ctx context.Context, s *Session, p Push) {
	prefix, id, ok := protocol.SplitTopic(p.Topic)
	if !ok {
		return
	}
	switch {
	case prefix == protocol.TopicChatRoom && p.Event == protocol.EventMessageCreated:
		var m protocol.Message
		if err := json.Unmarshal(p.Payload, &m); err != nil || m.ID == "" {
			h.log.Warn("undecodable message push", "room", id, "err", err)
			return
		}
		if m.ChatRoomID == "" {
			m.ChatRoomID = id
		}
		h.onEvent(AgentEvent{Kind: AgentMessage, Room: id, Message: &m})
	case prefix == protocol.TopicAgentRooms && p.Event == protocol.EventRoomAdded:
		var r protocol.RoomEvent
		if json.Unmarshal(p.Payload, &r) != nil || r.ID == "" {
			return
		}
		h.onEvent(AgentEvent{Kind: AgentRoomAdded, Room: r.ID})
		if err := h.enterRoom(ctx, s, r.ID); err != nil && ctx.Err() == nil {
			// The session cannot be trusted to hear this room: reconnect,
			// which lists and joins every room again.
			s.end(fmt.Errorf("enter added room %s: %w", r.ID, err))
		}
	case prefix == protocol.TopicAgentRooms && p.Event == protocol.EventRoomRemoved:
		var r protocol.RoomEvent
		if json.Unmarshal(p.Payload, &r) != nil || r.ID == "" {
			return
		}
		h.leaveRoom(ctx, s, r.ID)
	case prefix == protocol.TopicRoomParticipants && p.Event == protocol.EventRoomDeleted:
		h.leaveRoom(ctx, s, id)
	case prefix == protocol.TopicRoomParticipants:
		h.onEvent(AgentEvent{Kind: AgentParticipants, Room: id})
	}
}

// leaveRoom leaves a room's channels and reports the removal.
func (h *agentHandler) leaveRoom(ctx context.Context, s *Session, room string) {
	for _, pf := range []string{protocol.TopicChatRoom, protocol.TopicRoomParticipants} {
		_ = s.Leave(ctx, protocol.Topic(pf, room))
	}
	h.onEvent(AgentEvent{Kind: AgentRoomRemoved, Room: room})
}
