package apiclient

import (
	"context"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Sessions lists the owned agents' sessions.
func (c *Client) Sessions(ctx context.Context) ([]wire.Session, error) {
	var out wire.Sessions
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/sessions"}, &out)
	return out.Sessions, err
}

// Turns lists a session's turns.
func (c *Client) Turns(ctx context.Context, session string) ([]wire.Turn, error) {
	var out wire.Turns
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/sessions/%s/turns", session)}, &out)
	return out.Turns, err
}

// AgentConfig changes an owned agent's runtime configuration.
func (c *Client) AgentConfig(ctx context.Context, agent string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error) {
	var out wire.AgentRuntimeStatus
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/agents/%s/config", agent), body: r}, &out)
	return out, err
}

// CancelTurn cancels a queued or running turn.
func (c *Client) CancelTurn(ctx context.Context, turn string) error {
	return c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/turns/%s/cancel", turn)}, nil)
}
