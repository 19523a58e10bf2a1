package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
)

// Participants returns a room's roster as the peer's agent sees it, read
// from Band now.
func (e *Engine) Participants(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) ([]protocol.Participant, error) {
	p, err := e.peer(ws, key)
	if err != nil {
		return nil, err
	}
	roster, err := p.rt.Agent.AgentParticipants(ctx, string(room))
	if err != nil {
		return nil, fmt.Errorf("participants of room %s: %w", room, err)
	}
	p.remember(roster)
	return roster, nil
}

// MaxEventContent bounds an event's content (Band's cap, in characters).
const MaxEventContent = 16384

// RoomEvent posts a non-text event in a room as the peer's agent (Band's
// events: tool_call, tool_result, thought, error, task, attention). An
// event needs no mention and wakes nobody.
func (e *Engine) RoomEvent(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, ev protocol.EventFields) (protocol.EventCreated, error) {
	p, err := e.peer(ws, key)
	if err != nil {
		return protocol.EventCreated{}, err
	}
	if strings.TrimSpace(ev.Content) == "" {
		return protocol.EventCreated{}, fmt.Errorf("%w: event content is empty", jam.ErrInvalid)
	}
	if n := len([]rune(ev.Content)); n > MaxEventContent {
		return protocol.EventCreated{}, fmt.Errorf("%w: event content is %d characters, more than %d", jam.ErrInvalid, n, MaxEventContent)
	}
	created, err := p.rt.Agent.AgentEvent(ctx, string(room), ev)
	if err != nil {
		return protocol.EventCreated{}, fmt.Errorf("post %s event in room %s: %w", ev.MessageType, room, err)
	}
	return created, nil
}
