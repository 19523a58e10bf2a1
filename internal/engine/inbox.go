package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// InboxItem is one queued message as an attached agent sees it.
type InboxItem struct {
	Peer            jam.PeerKey
	Room            jam.RoomID
	MessageID       jam.PlatformMessageID
	Binding         jam.BindingID
	SenderID        jam.IdentityID
	SenderName      string
	Content         string
	AddressedToUser bool
	State           string
	ReceivedAt      time.Time
}

// InboxParams select inbox items.
type InboxParams struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey // zero: every peer
	Room        jam.RoomID  // "": every room
	Unrouted    bool        // the unrouted bucket instead of bound rooms
	Limit       int
}

// Inbox lists queued messages oldest first, opened for reading. Taking
// routed messages from the inbox opens the agent's working indicator in
// their rooms until they are settled.
func (e *Engine) Inbox(ctx context.Context, p InboxParams) ([]InboxItem, error) {
	rows, err := retryCorrupt(ctx, e, func() ([]store.QueueRow, error) {
		return e.cfg.Store.QueueList(ctx, store.QueueListParams{WorkspaceID: p.WorkspaceID, Peer: p.Peer, Room: p.Room, Unrouted: p.Unrouted, Limit: p.Limit})
	})
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	out := make([]InboxItem, 0, len(rows))
	for _, r := range rows {
		// A routed message is in the inbox once delivered: a message whose
		// claim is still failing is not the agent's work yet.
		if !p.Unrouted && (r.Binding == "" || r.State != store.QueueDelivered) {
			continue
		}
		m, ok, err := e.readRow(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
		if !ok {
			continue // quarantined
		}
		out = append(out, InboxItem{Peer: r.Peer, Room: r.Room, MessageID: r.MessageID, Binding: r.Binding, SenderID: r.SenderID,
			SenderName: m.SenderName, Content: m.Content, AddressedToUser: r.AddressedToUser, State: r.State, ReceivedAt: r.ReceivedAt})
	}
	// The agent has taken these messages: it is working in their rooms
	// until it settles them.
	e.act.taken(p.WorkspaceID, out)
	return out, nil
}

// Wait returns the inbox as soon as it holds a message, or an empty list
// when ctx ends first (a wait that timed out is not an error).
func (e *Engine) Wait(ctx context.Context, p InboxParams) ([]InboxItem, error) {
	for {
		woken := e.wake.C() // taken before reading, so no notify is missed
		items, err := e.Inbox(ctx, p)
		if err != nil || len(items) > 0 {
			return items, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-woken:
		}
	}
}

// FindMessage returns the peer whose queue holds msg.
func (e *Engine) FindMessage(ctx context.Context, ws jam.WorkspaceID, msg jam.PlatformMessageID) (jam.PeerKey, error) {
	for _, p := range e.Peers(ws) {
		if _, err := e.cfg.Store.QueueGet(ctx, ws, p.Key, msg); err == nil {
			return p.Key, nil
		}
	}
	return jam.PeerKey{}, fmt.Errorf("%w: message %s is not queued for any agent", jam.ErrNotFound, msg)
}

// Message returns one queued message opened for reading, without taking
// it (an owned runtime reads the message its turn answers).
func (e *Engine) Message(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (InboxItem, error) {
	r, err := e.cfg.Store.QueueGet(ctx, ws, key, msg)
	if err != nil {
		return InboxItem{}, fmt.Errorf("message %s: %w", msg, err)
	}
	m, ok, err := e.readRow(ctx, r)
	if err != nil {
		return InboxItem{}, fmt.Errorf("message %s: %w", msg, err)
	}
	if !ok {
		return InboxItem{}, fmt.Errorf("message %s: %w: it could not be read and was quarantined", msg, jam.ErrNotFound)
	}
	return InboxItem{Peer: r.Peer, Room: r.Room, MessageID: r.MessageID, Binding: r.Binding, SenderID: r.SenderID,
		SenderName: m.SenderName, Content: m.Content, AddressedToUser: r.AddressedToUser, State: r.State, ReceivedAt: r.ReceivedAt}, nil
}
