package band

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/band/protocol"
)

// Human API: calls made with a person's key or token.

// Profile returns the person's profile.
func (c *Client) Profile(ctx context.Context) (protocol.UserDetails, error) {
	var out protocol.Data[protocol.UserDetails]
	_, err := c.call(ctx, http.MethodGet, "/me/profile", nil, nil, &out)
	return out.Data, err
}

// RegisterAgent registers a new agent; the key in the answer is shown once.
func (c *Client) RegisterAgent(ctx context.Context, name, description string) (protocol.RegisteredAgent, error) {
	var out protocol.Data[protocol.RegisteredAgent]
	req := protocol.RegisterAgentRequest{Agent: protocol.RegisterAgentFields{Name: name, Description: description}}
	_, err := c.call(ctx, http.MethodPost, "/me/agents/register", nil, req, &out)
	return out.Data, err
}

// MyAgents lists the person's agents.
func (c *Client) MyAgents(ctx context.Context) ([]protocol.MyAgent, error) {
	return collectPages[protocol.MyAgent](ctx, c, "/me/agents")
}

// DeleteAgent deletes one of the person's agents, revoking its key.
func (c *Client) DeleteAgent(ctx context.Context, id string, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	_, err := c.call(ctx, http.MethodDelete, "/me/agents/"+pathEscape(id), q, nil, nil)
	return err
}

// MyChats returns one page of the person's rooms, newest first.
func (c *Client) MyChats(ctx context.Context, cursor string, limit int) ([]protocol.MeChatRoom, string, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out protocol.List[protocol.MeChatRoom]
	_, err := c.call(ctx, http.MethodGet, "/me/chats", q, nil, &out)
	next := ""
	if out.Metadata.HasMore != nil && *out.Metadata.HasMore && out.Metadata.NextCursor != nil {
		next = *out.Metadata.NextCursor
	}
	return out.Data, next, err
}

// CreateChat creates a room the person owns.
func (c *Client) CreateChat(ctx context.Context, title string) (protocol.MeChatRoom, error) {
	var out protocol.Data[protocol.MeChatRoom]
	req := protocol.ChatRequest{}
	if title != "" {
		req.Chat.Title = &title
	}
	_, err := c.call(ctx, http.MethodPost, "/me/chats", nil, req, &out)
	return out.Data, err
}

// ChatMessages returns one page of a room's history, newest first, all
// message types.
func (c *Client) ChatMessages(ctx context.Context, room, cursor string, limit int) (MessagePage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out protocol.List[protocol.Message]
	_, err := c.call(ctx, http.MethodGet, "/me/chats/"+pathEscape(room)+"/messages", q, nil, &out)
	return pageOf(out), err
}

// SendChatMessage posts a text message as the person.
func (c *Client) SendChatMessage(ctx context.Context, room, content string, mentions []protocol.Mention) (protocol.MessageSent, error) {
	var out protocol.Data[protocol.MessageSent]
	req := protocol.MessageRequest{Message: protocol.MessageFields{Content: content, Mentions: mentions}}
	_, err := c.call(ctx, http.MethodPost, "/me/chats/"+pathEscape(room)+"/messages", nil, req, &out)
	return out.Data, err
}

// ChatParticipants lists a room's participants as the person sees them.
func (c *Client) ChatParticipants(ctx context.Context, room string) ([]protocol.Participant, error) {
	return collectPages[protocol.Participant](ctx, c, "/me/chats/"+pathEscape(room)+"/participants")
}

// collectPages follows a cursor-paginated list to its end.
func collectPages[T any](ctx context.Context, c *Client, path string) ([]T, error) {
	var all []T
	cursor := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(protocol.MaxPageLimit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var out protocol.List[T]
		if _, err := c.call(ctx, http.MethodGet, path, q, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Data...)
		md := out.Metadata
		if md.HasMore == nil || !*md.HasMore || md.NextCursor == nil || *md.NextCursor == cursor {
			return all, nil
		}
		cursor = *md.NextCursor
	}
}

// AddChatParticipant adds a participant to a room.
func (c *Client) AddChatParticipant(ctx context.Context, room, participant, role string) (protocol.Participant, error) {
	var out protocol.Data[protocol.Participant]
	req := protocol.ParticipantRequest{Participant: protocol.ParticipantFields{ParticipantID: participant, Role: role}}
	_, err := c.call(ctx, http.MethodPost, "/me/chats/"+pathEscape(room)+"/participants", nil, req, &out)
	return out.Data, err
}

// RemoveChatParticipant removes a participant from a room.
func (c *Client) RemoveChatParticipant(ctx context.Context, room, participant string) error {
	_, err := c.call(ctx, http.MethodDelete, "/me/chats/"+pathEscape(room)+"/participants/"+pathEscape(participant), nil, nil, nil)
	return err
}
