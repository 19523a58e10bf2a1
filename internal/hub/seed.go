package hub

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
)

// seedBatch is how many messages one seeding transaction writes.
const seedBatch = 5000

// SeedMessage is one text message for [Hub.SeedMessages]: posted in Room by
// Sender, a participant of the room, mentioning (and delivered to) the
// agents of Mentions, each a participant of the room too.
type SeedMessage struct {
	Room     string
	Sender   string
	Content  string
	Mentions []string
}

// SeedMessages stores many text messages at once, for benchmarks and tests
// that need a large backlog: each is stored as POST …/messages stores it
// (the same rows: the message with its mentions normalised, one delivery
// per mentioned agent, the room's last_message_at), but without the
// request's overhead, in transactions of a few thousand messages, and
// without pushes to sockets, as if it had been posted while nobody was
// connected. It returns the messages as the hub would push them, in order.
//
// A message whose room, sender or mention is not a participant of its room,
// or whose content is blank, fails the call with jam.ErrInvalid; the
// transactions committed before it stay.
func (h *Hub) SeedMessages(ctx context.Context, msgs []SeedMessage) ([]protocol.Message, error) {
	d := h.db.Load()
	if d == nil {
		return nil, fmt.Errorf("%w: seed messages: the hub is not running", jam.ErrUnavailable)
	}
	rooms := map[string][]participantRow{}
	out := make([]protocol.Message, 0, len(msgs))
	for chunk := range slices.Chunk(msgs, seedBatch) {
		err := h.write(ctx, d, func(tx *sql.Tx) (func(), error) {
			for _, sm := range chunk {
				m, err := h.seedOne(ctx, tx, rooms, sm)
				if err != nil {
					return nil, err
				}
				out = append(out, m)
			}
			return nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("seed messages: %w", err)
		}
	}
	return out, nil
}

// seedOne stores one message inside tx; rooms caches each room's
// participants for the call.
func (h *Hub) seedOne(ctx context.Context, tx *sql.Tx, rooms map[string][]participantRow, sm SeedMessage) (protocol.Message, error) {
	if blank(sm.Content) || strings.IndexByte(sm.Content, 0) >= 0 {
		return protocol.Message{}, fmt.Errorf("%w: message in room %s: blank content", jam.ErrInvalid, sm.Room)
	}
	parts, ok := rooms[sm.Room]
	if !ok {
		var err error
		if parts, err = participantsOf(ctx, tx, sm.Room); err != nil {
			return protocol.Message{}, err
		}
		rooms[sm.Room] = parts
	}
	find := func(id string) (participantRow, bool) {
		i := slices.IndexFunc(parts, func(p participantRow) bool { return p.ID == id })
		if i < 0 {
			return participantRow{}, false
		}
		return parts[i], true
	}
	sender, ok := find(sm.Sender)
	if !ok {
		return protocol.Message{}, fmt.Errorf("%w: sender %s is not a participant of room %s", jam.ErrInvalid, sm.Sender, sm.Room)
	}
	var targets []mention.Target
	stored := []protocol.Mention{}
	for _, id := range sm.Mentions {
		p, ok := find(id)
		if !ok || p.Type != protocol.TypeAgent || p.ID == sender.ID {
			return protocol.Message{}, fmt.Errorf("%w: mention %s is not another agent of room %s", jam.ErrInvalid, id, sm.Room)
		}
		targets = append(targets, mention.Target{ID: p.ID, Handle: p.Handle, Name: p.Name})
		stored = append(stored, protocol.Mention{ID: p.ID, Handle: p.Handle, Name: p.Name})
	}
	now := h.now().UnixMicro()
	m := messageRow{
		ID: newUUID(), RoomID: sm.Room, SenderID: sender.ID, SenderType: sender.Type, MessageType: protocol.MessageText,
		Content: mention.Normalize(sm.Content, targets), Mentions: stored, InsertedAt: now, UpdatedAt: now, SenderName: sender.Name,
	}
	mj, err := json.Marshal(stored)
	if err != nil {
		return protocol.Message{}, err
	}
	if err := tx.QueryRowContext(ctx, messageInsert, m.ID, m.RoomID, m.SenderID, m.SenderType, m.MessageType, m.Content, string(mj), nil, now, now).Scan(&m.Seq); err != nil {
		return protocol.Message{}, err
	}
	if _, err := tx.ExecContext(ctx, roomTouchMessages, now, m.RoomID); err != nil {
		return protocol.Message{}, err
	}
	status := map[string]protocol.DeliveryRecord{}
	delivered := formatMicros(now)
	for _, p := range stored {
		if _, err := tx.ExecContext(ctx, deliveryInsert, m.Seq, p.ID, m.RoomID, now); err != nil {
			return protocol.Message{}, err
		}
		status[p.ID] = protocol.DeliveryRecord{Status: protocol.DeliveryDelivered, DeliveredAt: &delivered, Attempts: []protocol.Attempt{}}
	}
	return m.wire(status), nil
}
