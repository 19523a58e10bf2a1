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

// SessionMessages lists a session's accepted messages.
func (c *Client) SessionMessages(ctx context.Context, session string) ([]wire.SessionMessage, error) {
	var out wire.SessionMessages
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/sessions/%s/messages", session)}, &out)
	return out.Messages, err
}

// SessionSend sends a message to a session: a note, a queued turn or a
// steer.
func (c *Client) SessionSend(ctx context.Context, session string, r wire.SessionSendRequest) (wire.SessionSendResult, error) {
	var out wire.SessionSendResult
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/sessions/%s/messages", session), body: r}, &out)
	return out, err
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

// Turn returns one turn with its session and executions.
func (c *Client) Turn(ctx context.Context, turn string) (wire.Turn, error) {
	var out wire.Turn
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/turns/%s", turn)}, &out)
	return out, err
}

// TurnOutput returns what a turn streamed, as the daemon keeps it.
func (c *Client) TurnOutput(ctx context.Context, turn string) (wire.TurnOutput, error) {
	var out wire.TurnOutput
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/turns/%s/output", turn)}, &out)
	return out, err
}

// Worktrees lists the sessions' worktrees.
func (c *Client) Worktrees(ctx context.Context) ([]wire.Worktree, error) {
	var out wire.Worktrees
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/worktrees"}, &out)
	return out.Worktrees, err
}

// WorktreeArchive archives a session's worktree: its changes are committed
// to its branch, which stays; its directory goes.
func (c *Client) WorktreeArchive(ctx context.Context, session string) (wire.Worktree, error) {
	var out wire.Worktree
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/worktrees/%s/archive", session)}, &out)
	return out, err
}

// WorktreeRemove deletes a session's worktree and its branch.
func (c *Client) WorktreeRemove(ctx context.Context, session string, r wire.WorktreeRemoveRequest) (wire.Worktree, error) {
	var out wire.Worktree
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/worktrees/%s/remove", session), body: r}, &out)
	return out, err
}

// WorktreeRestore checks a session's archived or removed worktree out
// again: from the checkpoint r names, else its latest.
func (c *Client) WorktreeRestore(ctx context.Context, session string, r wire.WorktreeRestoreRequest) (wire.Worktree, error) {
	var out wire.Worktree
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/worktrees/%s/restore", session), body: r}, &out)
	return out, err
}
