package band

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
)

// HumanEventKind says what a HumanEvent reports.
type HumanEventKind string

// Human feed events.
const (
	// HumanUpsert: a message was created or updated (text, events, and
	// delivery status changes).
	HumanUpsert HumanEventKind = "upsert"
	// HumanDelete: a message was deleted.
	HumanDelete HumanEventKind = "delete"
	// HumanRoomAdded / HumanRoomRemoved: the person's membership changed.
	HumanRoomAdded   HumanEventKind = "room_added"
	HumanRoomRemoved HumanEventKind = "room_removed"
	// HumanParticipants: a watched room's roster changed.
	HumanParticipants HumanEventKind = "participants_changed"
	// HumanActivity: an agent's working indicator in a watched room.
	HumanActivity HumanEventKind = "activity"
	// HumanState: the connection state changed. After Up, callers
	// reconcile room heads over REST: the human socket has no catch-up.
	HumanState HumanEventKind = "state"
)

// HumanEvent is one observation of a person's feed.
type HumanEvent struct {
	Kind      HumanEventKind
	Room      string
	Message   *protocol.Message
	MessageID string
	Activity  *protocol.Activity
	Payload   json.RawMessage
	Event     string // the push's event name, e.g. participant_added
	State     ConnState
	Err       error
}

// HumanFeedConfig configures a HumanFeed.
type HumanFeedConfig struct {
	// Client is the person's REST client.
	Client *Client
	// Socket configures the socket; BaseURL and Credential default to the
	// client's.
	Socket SocketConfig
	// ListTimeout bounds the room directory listing. Default 20s.
	ListTimeout time.Duration
	// MaxDirectory bounds the rooms read for the baseline. Default 500.
	MaxDirectory int
	Logger       *slog.Logger
}

// HumanFeed drives one person's socket over a bounded working set of rooms.
type HumanFeed struct {
	cfg     HumanFeedConfig
	userID  string
	onEvent func(HumanEvent)
	socket  *Socket
	watch   *WatchSet
	log     *slog.Logger

	mu      sync.Mutex
	session *Session        // guarded by mu: the live session, if any
	watched map[string]bool // guarded by mu: rooms joined in session
}

// NewHumanFeed builds a feed for the person whose user id is userID.
// onEvent must return quickly.
func NewHumanFeed(cfg HumanFeedConfig, userID string, onEvent func(HumanEvent)) (*HumanFeed, error) {
	if cfg.Client == nil || onEvent == nil || cfg.Logger == nil || userID == "" {
		return nil, errors.New("human feed: client, user id, event function and logger are required")
	}
	if cfg.ListTimeout == 0 {
		cfg.ListTimeout = 20 * time.Second
	}
	if cfg.MaxDirectory == 0 {
		cfg.MaxDirectory = 500
	}
	s, err := newClientSocket(cfg.Socket, cfg.Client, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &HumanFeed{cfg: cfg, userID: userID, onEvent: onEvent, socket: s, watch: NewWatchSet(), log: cfg.Logger.With("component", "human-feed"), watched: map[string]bool{}}, nil
}

// Run runs the feed until ctx ends or the socket is superseded, which is
// terminal.
func (f *HumanFeed) Run(ctx context.Context) error {
	return f.socket.Run(ctx, (*humanHandler)(f))
}

// Pin reserves a watch slot for a room the person opened or changed, and
// joins it now if the socket is up.
func (f *HumanFeed) Pin(ctx context.Context, room string) error {
	f.watch.Pin(room, time.Now())
	return f.reconcile(ctx)
}

// Watched returns the rooms the live session watches.
func (f *HumanFeed) Watched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.watched))
	for r := range f.watched {
		out = append(out, r)
	}
	return out
}

// roomTopics are the channels watched per room.
var roomTopics = []string{protocol.TopicChatRoom, protocol.TopicRoomParticipants, protocol.TopicRoomActivity}

// reconcile joins rooms that entered the working set and leaves those that
// fell out of it.
func (f *HumanFeed) reconcile(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.session
	if s == nil {
		return nil
	}
	want := map[string]bool{}
	for _, r := range f.watch.Rooms() {
		want[r] = true
	}
	for r := range f.watched {
		if !want[r] {
			for _, p := range roomTopics {
				_ = s.Leave(ctx, protocol.Topic(p, r))
			}
			delete(f.watched, r)
		}
	}
	for r := range want {
		if f.watched[r] {
			continue
		}
		for _, p := range roomTopics {
			if err := s.Join(ctx, protocol.Topic(p, r)); err != nil {
				var je *JoinError
				if p == protocol.TopicRoomActivity && errors.As(err, &je) {
					continue // a platform without the activity channel
				}
				return err
			}
		}
		f.watched[r] = true
	}
	return nil
}

type humanHandler HumanFeed

func (h *humanHandler) State(st ConnState, err error) {
	if st != StateUp {
		h.mu.Lock()
		h.session = nil
		h.watched = map[string]bool{}
		h.mu.Unlock()
	}
	h.onEvent(HumanEvent{Kind: HumanState, State: st, Err: err})
}

func (h *humanHandler) Connected(ctx context.Context, s *Session) error {
	for _, p := range []string{protocol.TopicUserRooms, protocol.TopicUserContacts} {
		if err := s.Join(ctx, protocol.Topic(p, h.userID)); err != nil {
			return err
		}
	}
	lctx, cancel := context.WithTimeout(ctx, h.cfg.ListTimeout)
	dir, err := h.directory(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("list rooms: %w", err)
	}
	h.watch.SetDirectory(dir)
	h.mu.Lock()
	h.session = s
	h.watched = map[string]bool{}
	h.mu.Unlock()
	return (*HumanFeed)(h).reconcile(ctx)
}

// directory reads the person's rooms with their last message times.
func (h *humanHandler) directory(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	cursor := ""
	for len(out) < h.cfg.MaxDirectory {
		rooms, next, err := h.cfg.Client.MyChats(ctx, cursor, protocol.MaxPageLimit)
		if err != nil {
			return nil, err
		}
		for _, r := range rooms {
			var t time.Time
			if r.LastMessageAt != nil {
				t, _ = time.Parse(time.RFC3339Nano, *r.LastMessageAt)
			}
			out[r.ID] = t
		}
		if next == "" || next == cursor {
			break
		}
		cursor = next
	}
	return out, nil
}

func (h *humanHandler) Push(ctx context.Context, s *Session, p Push) {
	prefix, id, ok := protocol.SplitTopic(p.Topic)
	if !ok {
		return
	}
	switch prefix {
	case protocol.TopicChatRoom:
		switch p.Event {
		case protocol.EventMessageCreated, protocol.EventMessageUpdated, protocol.EventEventCreated:
			var m protocol.Message
			if err := json.Unmarshal(p.Payload, &m); err != nil || m.ID == "" {
				h.log.Warn("undecodable room push", "room", id, "event", p.Event, "err", err)
				return
			}
			if m.ChatRoomID == "" {
				m.ChatRoomID = id
			}
			h.watch.Observe(id, time.Now())
			h.onEvent(HumanEvent{Kind: HumanUpsert, Room: id, Message: &m})
		case protocol.EventMessageDeleted:
			var d protocol.MessageDeleted
			if json.Unmarshal(p.Payload, &d) != nil || d.ID == "" {
				return
			}
			h.onEvent(HumanEvent{Kind: HumanDelete, Room: id, MessageID: d.ID})
		}
	case protocol.TopicRoomParticipants:
		if p.Event == protocol.EventRoomDeleted {
			h.watch.Forget(id)
			h.onEvent(HumanEvent{Kind: HumanRoomRemoved, Room: id})
			h.rewatch(ctx)
			return
		}
		h.onEvent(HumanEvent{Kind: HumanParticipants, Room: id, Payload: p.Payload, Event: p.Event})
	case protocol.TopicRoomActivity:
		var a protocol.Activity
		if json.Unmarshal(p.Payload, &a) != nil {
			return
		}
		h.onEvent(HumanEvent{Kind: HumanActivity, Room: id, Activity: &a})
	case protocol.TopicUserRooms:
		var r protocol.RoomEvent
		if json.Unmarshal(p.Payload, &r) != nil || r.ID == "" {
			return
		}
		switch p.Event {
		case protocol.EventRoomAdded:
			h.watch.Observe(r.ID, time.Now())
			h.onEvent(HumanEvent{Kind: HumanRoomAdded, Room: r.ID, Payload: p.Payload})
		case protocol.EventRoomRemoved:
			h.watch.Forget(r.ID)
			h.onEvent(HumanEvent{Kind: HumanRoomRemoved, Room: r.ID, Payload: p.Payload})
		}
		h.rewatch(ctx)
	}
}

// rewatch re-reconciles the working set after a membership change. It runs in
// the push goroutine (pushes are handled one at a time), so a join's reply
// is read by the session's reader while this waits.
func (h *humanHandler) rewatch(ctx context.Context) {
	if err := (*HumanFeed)(h).reconcile(ctx); err != nil && ctx.Err() == nil {
		h.log.Warn("rewatch rooms", "err", err)
	}
}
