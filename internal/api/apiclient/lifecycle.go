package apiclient

import (
	"context"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// AgentRemove removes an agent from jam (and from Band with
// r.DeleteOnBand).
func (c *Client) AgentRemove(ctx context.Context, agent string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
	var out wire.AgentRemoved
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/agents/%s/remove", agent), body: r}, &out)
	return out, err
}

// AgentRestart replaces an owned agent's processes at the next turn
// boundary.
func (c *Client) AgentRestart(ctx context.Context, agent string) (wire.AgentRestarted, error) {
	var out wire.AgentRestarted
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/agents/%s/restart", agent)}, &out)
	return out, err
}

// RoomLeave takes an agent out of a room.
func (c *Client) RoomLeave(ctx context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error) {
	var out wire.RoomLeft
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/rooms/%s/leave", room), body: r}, &out)
	return out, err
}

// SessionArchive archives a session; a later message resumes it.
func (c *Client) SessionArchive(ctx context.Context, session string) (wire.Session, error) {
	var out wire.Session
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/sessions/%s/archive", session)}, &out)
	return out, err
}

// SessionClose closes a session for good.
func (c *Client) SessionClose(ctx context.Context, session string) (wire.Session, error) {
	var out wire.Session
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/sessions/%s/close", session)}, &out)
	return out, err
}

// RetryTurn runs a turn's message again as a new turn, which it returns.
func (c *Client) RetryTurn(ctx context.Context, turn string) (wire.Turn, error) {
	var out wire.Turn
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/turns/%s/retry", turn)}, &out)
	return out, err
}

// AccountRemove removes an account no agent uses.
func (c *Client) AccountRemove(ctx context.Context, profile string) (wire.AccountRemoved, error) {
	var out wire.AccountRemoved
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/accounts/%s/remove", profile)}, &out)
	return out, err
}
