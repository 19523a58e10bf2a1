package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// InboxItem is one queued message as an attached agent sees it.
type InboxItem struct {
	// Seq orders the queue; a page's last Seq starts the next page.
	Seq        int64
	Peer       jam.PeerKey
	Room       jam.RoomID
	MessageID  jam.PlatformMessageID
	Binding    jam.BindingID
	SenderID   jam.IdentityID
	SenderName string
	// SenderType is the sender's kind as Band says it: "User", "Agent",
	// or "System" for a local notice.
	SenderType      string
	Content         string
	AddressedToUser bool
	State           string
	ReceivedAt      time.Time
}

// FromAgent says whether an agent sent the message.
func (it InboxItem) FromAgent() bool { return strings.EqualFold(it.SenderType, "Agent") }

// Inbox page bounds: a read that names no limit gets DefaultInboxLimit
// messages; none gets more than MaxInboxLimit.
const (
	DefaultInboxLimit = 100
	MaxInboxLimit     = 1000
)

// InboxParams select inbox items.
type InboxParams struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey // zero: every peer
	Room        jam.RoomID  // "": every room
	Unrouted    bool        // the unrouted bucket instead of bound rooms
	// Limit bounds the messages returned, oldest first: 0 means
	// DefaultInboxLimit, at most MaxInboxLimit.
	Limit int
	// After starts the page after the message of this Seq (0: at the
	// oldest): InboxPage.Next of the page before.
	After int64
}

// InboxPage is the oldest part of an inbox; More says that more messages
// wait behind it.
type InboxPage struct {
	Items []InboxItem
	More  bool
	// Next is the After of the next page when More.
	Next int64
}

// Inbox lists the oldest queued messages, opened for reading: routed
// messages once delivered (a message whose claim is still failing is not
// the agent's work yet), or the unrouted bucket. Only the page's rows are
// read from the store, so an inbox with a large backlog (a daemon
// redelivering 100,000 messages after a restart) answers at once. Taking
// routed messages from the inbox opens the agent's working indicator in
// their rooms until they are settled.
func (e *Engine) Inbox(ctx context.Context, p InboxParams) (InboxPage, error) {
	switch {
	case p.Limit < 0 || p.Limit > MaxInboxLimit:
		return InboxPage{}, fmt.Errorf("%w: inbox limit %d is outside 1 to %d (0 means %d)", jam.ErrInvalid, p.Limit, MaxInboxLimit, DefaultInboxLimit)
	case p.Limit == 0:
		p.Limit = DefaultInboxLimit
	}
	if p.After < 0 {
		return InboxPage{}, fmt.Errorf("%w: inbox cursor %d is negative", jam.ErrInvalid, p.After)
	}
	var out []InboxItem
	more := false
	// A quarantined row is skipped, so a page may need another read to
	// fill; after is the last seq read.
	after := p.After
	for len(out) < p.Limit && !more {
		want := p.Limit - len(out) + 1 // one more tells whether more wait
		rows, err := retryCorrupt(ctx, e, func() ([]store.QueueRow, error) {
			return e.cfg.Store.QueueList(ctx, store.QueueListParams{WorkspaceID: p.WorkspaceID, Peer: p.Peer, Room: p.Room,
				Unrouted: p.Unrouted, Delivered: !p.Unrouted, After: after, Limit: want})
		})
		if err != nil {
			return InboxPage{}, fmt.Errorf("inbox: %w", err)
		}
		for _, r := range rows {
			after = r.Seq
			if len(out) == p.Limit {
				more = true
				break
			}
			m, ok, err := e.readRow(ctx, r)
			if err != nil {
				return InboxPage{}, fmt.Errorf("inbox: %w", err)
			}
			if !ok {
				continue // quarantined
			}
			out = append(out, InboxItem{Seq: r.Seq, Peer: r.Peer, Room: r.Room, MessageID: r.MessageID, Binding: r.Binding, SenderID: r.SenderID,
				SenderName: m.SenderName, SenderType: m.SenderType, Content: m.Content, AddressedToUser: r.AddressedToUser, State: r.State, ReceivedAt: r.ReceivedAt})
		}
		if len(rows) < want {
			break // the inbox holds no more
		}
	}
	if out == nil {
		out = []InboxItem{}
	}
	// The agent has taken these messages: it is working in their rooms
	// until it settles them.
	e.act.taken(p.WorkspaceID, out)
	pg := InboxPage{Items: out, More: more}
	if more {
		pg.Next = out[len(out)-1].Seq
	}
	return pg, nil
}

// Wait returns the inbox as soon as it holds a message, or an empty page
// when ctx ends first (a wait that timed out is not an error).
func (e *Engine) Wait(ctx context.Context, p InboxParams) (InboxPage, error) {
	for {
		woken := e.wake.C() // taken before reading, so no notify is missed
		pg, err := e.Inbox(ctx, p)
		if err != nil || len(pg.Items) > 0 {
			return pg, err
		}
		select {
		case <-ctx.Done():
			return InboxPage{Items: []InboxItem{}}, nil
		case <-woken:
		}
	}
}

// FindMessage returns the peer whose queue holds msg.
func (e *Engine) FindMessage(ctx context.Context, ws jam.WorkspaceID, msg jam.PlatformMessageID) (jam.PeerKey, error) {
	peers := e.Peers(ws)
	for _, p := range peers {
		if _, err := e.cfg.Store.QueueGet(ctx, ws, p.Key, msg); err == nil {
			return p.Key, nil
		}
	}
	for _, p := range peers {
		if settled, err := e.cfg.Store.MessageSettled(ctx, ws, p.Key, msg); err == nil && settled {
			return jam.PeerKey{}, settledError(msg)
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
		SenderName: m.SenderName, SenderType: m.SenderType, Content: m.Content, AddressedToUser: r.AddressedToUser, State: r.State, ReceivedAt: r.ReceivedAt}, nil
}
