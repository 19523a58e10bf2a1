package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
)

// WaitGrace is how much longer than the requested wait WaitInbox gives the
// daemon to answer before it gives up on the call.
const WaitGrace = 15 * time.Second

// Accounts lists the signed-in Band accounts.
func (c *Client) Accounts(ctx context.Context) ([]wire.Account, error) {
	var out wire.AccountList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/accounts"}, &out)
	return out.Accounts, err
}

// AccountAdd signs in a Band account.
func (c *Client) AccountAdd(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error) {
	var out wire.Account
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/accounts", body: r}, &out)
	return out, err
}

// Agents lists the agents (peers) of every account.
func (c *Client) Agents(ctx context.Context) ([]wire.Agent, error) {
	var out wire.AgentList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/agents"}, &out)
	return out.Agents, err
}

// AgentAdd registers a new agent, or imports one when r.Key is set.
func (c *Client) AgentAdd(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
	var out wire.Agent
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/agents", body: r}, &out)
	return out, err
}

// Rooms lists the rooms of one account profile, or of every account when
// account is "".
func (c *Client) Rooms(ctx context.Context, account string) ([]wire.Room, error) {
	var q url.Values
	if account != "" {
		q = url.Values{"account": {account}}
	}
	var out wire.RoomList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/rooms", query: q}, &out)
	return out.Rooms, err
}

// RoomCreate creates a room, with agents as its first participants.
func (c *Client) RoomCreate(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
	var out wire.Room
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/rooms", body: r}, &out)
	return out, err
}

// RoomAdd adds an agent to a room.
func (c *Client) RoomAdd(ctx context.Context, room string, r wire.RoomAddRequest) error {
	return c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/rooms/%s/agents", room), body: r}, nil)
}

// Bind binds an agent's session to a room.
func (c *Client) Bind(ctx context.Context, r wire.BindRequest) (wire.Binding, error) {
	var out wire.Binding
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/bindings", body: r}, &out)
	return out, err
}

// Unbind removes a binding.
func (c *Client) Unbind(ctx context.Context, binding string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: pathf("/v1/bindings/%s", binding)}, nil)
}

// InboxQuery selects queued messages; empty fields do not filter.
type InboxQuery = wire.InboxQuery

// Inbox lists queued messages.
func (c *Client) Inbox(ctx context.Context, q InboxQuery) (wire.Inbox, error) {
	v := url.Values{}
	if q.Agent != "" {
		v.Set("agent", q.Agent)
	}
	if q.Room != "" {
		v.Set("room", q.Room)
	}
	if q.Unrouted {
		v.Set("unrouted", strconv.FormatBool(true))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	var out wire.Inbox
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/inbox", query: v}, &out)
	return out, err
}

// WaitInbox waits until a message is queued and returns the inbox, or
// returns an empty inbox when r.TimeoutMS (0: wire.DefaultWait) passes.
// The call itself is bounded by that wait plus WaitGrace.
func (c *Client) WaitInbox(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error) {
	wait := wire.DefaultWait
	if r.TimeoutMS > 0 {
		wait = time.Duration(r.TimeoutMS) * time.Millisecond
	}
	var out wire.Inbox
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/waitInbox", body: r, timeout: wait + WaitGrace}, &out)
	return out, err
}

// Reply answers a queued message in its room and settles it.
func (c *Client) Reply(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error) {
	var out wire.ReplyResult
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/messages/%s/reply", msg), body: r}, &out)
	return out, err
}

// Ack settles a queued message without answering it.
func (c *Client) Ack(ctx context.Context, msg string, r wire.AckRequest) error {
	return c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/messages/%s/ack", msg), body: r}, nil)
}

// Notice queues a local notice for an agent in a room.
func (c *Client) Notice(ctx context.Context, r wire.NoticeRequest) (wire.NoticeResult, error) {
	var out wire.NoticeResult
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/notices", body: r}, &out)
	return out, err
}

// Send posts a new message to a room.
func (c *Client) Send(ctx context.Context, r wire.SendRequest) (wire.SendResult, error) {
	var out wire.SendResult
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/send", body: r}, &out)
	return out, err
}

// Quarantine lists the records taken out of the inbound pipeline because
// they could no longer be read.
func (c *Client) Quarantine(ctx context.Context) ([]wire.QuarantinedRecord, error) {
	var out wire.QuarantineList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quarantine"}, &out)
	return out.Records, err
}
