package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// RoomMessagesQuery selects a room's recent messages.
type RoomMessagesQuery struct {
	// Account is the profile whose person reads the room; "" means the
	// only (or the configured) account.
	Account string
	// Limit is how many of the newest messages to return; 0 means
	// wire.MaxRoomMessages.
	Limit int
}

// RoomMessages returns a room's newest messages, oldest first, each with
// its room sequence and per-agent delivery status.
func (c *Client) RoomMessages(ctx context.Context, room string, q RoomMessagesQuery) (wire.RoomMessages, error) {
	v := url.Values{}
	if q.Account != "" {
		v.Set("account", q.Account)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.RoomMessages
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/rooms/%s/messages", room), query: v}, &out)
	return out, err
}

// RoomPost posts a message to a room as the account's person.
func (c *Client) RoomPost(ctx context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error) {
	var out wire.RoomPostResult
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/rooms/%s/messages", room), body: r}, &out)
	return out, err
}

// RoomParticipants lists a room's participants as the account's person
// sees them.
func (c *Client) RoomParticipants(ctx context.Context, room, account string) ([]wire.Participant, error) {
	var q url.Values
	if account != "" {
		q = url.Values{"account": {account}}
	}
	var out wire.ParticipantList
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/rooms/%s/participants", room), query: q}, &out)
	return out.Participants, err
}
