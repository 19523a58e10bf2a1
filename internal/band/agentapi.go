package band

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/band/protocol"
)

// Agent API: calls made with an agent's key.

// AgentMe returns the agent's own profile; it also validates the key.
func (c *Client) AgentMe(ctx context.Context) (protocol.AgentMe, error) {
	var out protocol.Data[protocol.AgentMe]
	_, err := c.call(ctx, http.MethodGet, "/agent/me", nil, nil, &out)
	return out.Data, err
}

// maxChatPages bounds the room listing: 50 pages of 100.
const maxChatPages = 50

// AgentChats lists every room the agent is in.
func (c *Client) AgentChats(ctx context.Context) ([]protocol.ChatRoom, error) {
	return collectOffsetPages[protocol.ChatRoom](ctx, c, "/agent/chats")
}

// collectOffsetPages follows an offset-paginated list (pages of 100, at
// most maxChatPages of them) to its end.
func collectOffsetPages[T any](ctx context.Context, c *Client, path string) ([]T, error) {
	var all []T
	for page := 1; page <= maxChatPages; page++ {
		var out protocol.List[T]
		q := url.Values{"page": {strconv.Itoa(page)}, "page_size": {"100"}}
		if _, err := c.call(ctx, http.MethodGet, path, q, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Data...)
		if len(out.Data) == 0 || out.Metadata.TotalPages == nil || page >= *out.Metadata.TotalPages {
			break
		}
	}
	return all, nil
}

// AgentCreateChat creates a room owned by the agent.
func (c *Client) AgentCreateChat(ctx context.Context, title string) (protocol.ChatRoom, error) {
	var out protocol.Data[protocol.ChatRoom]
	req := protocol.ChatRequest{}
	if title != "" {
		req.Chat.Title = &title
	}
	_, err := c.call(ctx, http.MethodPost, "/agent/chats", nil, req, &out)
	return out.Data, err
}

// AgentParticipants lists a room's participants.
func (c *Client) AgentParticipants(ctx context.Context, room string) ([]protocol.Participant, error) {
	var out protocol.List[protocol.Participant]
	_, err := c.call(ctx, http.MethodGet, "/agent/chats/"+pathEscape(room)+"/participants", nil, nil, &out)
	return out.Data, err
}

// MessagePage is one page of a message list.
type MessagePage struct {
	Messages   []protocol.Message
	NextCursor string
	HasMore    bool
}

func pageOf(out protocol.List[protocol.Message]) MessagePage {
	p := MessagePage{Messages: out.Data}
	if out.Metadata.HasMore != nil {
		p.HasMore = *out.Metadata.HasMore
	}
	if out.Metadata.NextCursor != nil {
		p.NextCursor = *out.Metadata.NextCursor
	}
	return p
}

// AgentMessages returns one page of the agent's queue in a room, oldest
// first. status "" means everything not yet processed.
func (c *Client) AgentMessages(ctx context.Context, room, status, cursor string, limit int) (MessagePage, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out protocol.List[protocol.Message]
	_, err := c.call(ctx, http.MethodGet, "/agent/chats/"+pathEscape(room)+"/messages", q, nil, &out)
	return pageOf(out), err
}

// AgentPending returns every message of the room the agent has not yet
// processed, oldest first, following cursors to the end.
func (c *Client) AgentPending(ctx context.Context, room string) ([]protocol.Message, error) {
	var all []protocol.Message
	cursor := ""
	for {
		p, err := c.AgentMessages(ctx, room, "", cursor, protocol.MaxPageLimit)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Messages...)
		if !p.HasMore || p.NextCursor == "" || p.NextCursor == cursor {
			return all, nil
		}
		cursor = p.NextCursor
	}
}

// AgentNext returns the oldest unprocessed message, or ok=false when the
// queue is empty.
func (c *Client) AgentNext(ctx context.Context, room string) (protocol.Message, bool, error) {
	var out protocol.Data[protocol.Message]
	status, err := c.call(ctx, http.MethodGet, "/agent/chats/"+pathEscape(room)+"/messages/next", nil, nil, &out)
	if err != nil {
		return protocol.Message{}, false, err
	}
	return out.Data, status != http.StatusNoContent, nil
}

// AgentSend posts a text message as the agent.
func (c *Client) AgentSend(ctx context.Context, room, content string, mentions []protocol.Mention) (protocol.MessageSent, error) {
	var out protocol.Data[protocol.MessageSent]
	req := protocol.MessageRequest{Message: protocol.MessageFields{Content: content, Mentions: mentions}}
	_, err := c.call(ctx, http.MethodPost, "/agent/chats/"+pathEscape(room)+"/messages", nil, req, &out)
	return out.Data, err
}

// AgentProcessing claims a message, opening a new processing attempt.
func (c *Client) AgentProcessing(ctx context.Context, room, msg string) (protocol.MessageStatus, error) {
	return c.messageStatus(ctx, room, msg, "processing", nil)
}

// AgentProcessed closes the current attempt as a success.
func (c *Client) AgentProcessed(ctx context.Context, room, msg string) (protocol.MessageStatus, error) {
	return c.messageStatus(ctx, room, msg, "processed", nil)
}

// AgentFailed closes the current attempt as a failure.
func (c *Client) AgentFailed(ctx context.Context, room, msg, reason string) (protocol.MessageStatus, error) {
	return c.messageStatus(ctx, room, msg, "failed", protocol.FailedRequest{Error: reason})
}

func (c *Client) messageStatus(ctx context.Context, room, msg, verb string, body any) (protocol.MessageStatus, error) {
	var out protocol.Data[protocol.MessageStatus]
	_, err := c.call(ctx, http.MethodPost, "/agent/chats/"+pathEscape(room)+"/messages/"+pathEscape(msg)+"/"+verb, nil, body, &out)
	return out.Data, err
}

// AgentEvent posts a non-text event.
func (c *Client) AgentEvent(ctx context.Context, room string, ev protocol.EventFields) (protocol.EventCreated, error) {
	var out protocol.Data[protocol.EventCreated]
	_, err := c.call(ctx, http.MethodPost, "/agent/chats/"+pathEscape(room)+"/events", nil, protocol.EventRequest{Event: ev}, &out)
	return out.Data, err
}

// AgentActivity reports whether the agent is working in a room.
func (c *Client) AgentActivity(ctx context.Context, room string, working bool) error {
	_, err := c.call(ctx, http.MethodPost, "/agent/chats/"+pathEscape(room)+"/activity", nil, protocol.ActivityRequest{Working: working}, nil)
	return err
}

// AgentPeers lists the agents and people this agent can reach: siblings,
// its owner and contacts.
func (c *Client) AgentPeers(ctx context.Context) ([]protocol.Peer, error) {
	return collectOffsetPages[protocol.Peer](ctx, c, "/agent/peers")
}

// AgentContext returns one page of the agent's view of a room: what it
// sent and the text messages that mention it, oldest first.
func (c *Client) AgentContext(ctx context.Context, room, cursor string, limit int) (MessagePage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out protocol.List[protocol.Message]
	_, err := c.call(ctx, http.MethodGet, "/agent/chats/"+pathEscape(room)+"/context", q, nil, &out)
	return pageOf(out), err
}
