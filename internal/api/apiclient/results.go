package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// ChangeSets lists change sets newest first: the workspace's, or the
// session's or turn's q names.
func (c *Client) ChangeSets(ctx context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error) {
	v := url.Values{}
	if q.Turn != "" {
		v.Set("turn", q.Turn)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := "/v1/changesets"
	if q.Session != "" {
		path = pathf("/v1/sessions/%s/changesets", q.Session)
	}
	var out wire.ChangeSets
	err := c.do(ctx, request{method: http.MethodGet, path: path, query: v}, &out)
	return out.ChangeSets, err
}

// ChangeSet returns one change set's manifest and figures.
func (c *Client) ChangeSet(ctx context.Context, id string) (wire.ChangeSet, error) {
	var out wire.ChangeSet
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/changesets/%s", id)}, &out)
	return out, err
}

// ChangeSetPatch returns one change set's binary patch, byte for byte.
func (c *Client) ChangeSetPatch(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/changesets/%s/patch", id)}, &out)
	return out, err
}

// CaptureChangeSet captures a change set of the session's worktree now,
// from its checkpoint since (0: its first).
func (c *Client) CaptureChangeSet(ctx context.Context, session string, since int) (wire.ChangeSet, error) {
	var out wire.ChangeSet
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/sessions/%s/changesets", session), body: wire.ChangeSetCaptureRequest{Since: since}}, &out)
	return out, err
}

// Checkpoints lists a session's checkpoints by Seq.
func (c *Client) Checkpoints(ctx context.Context, session string) ([]wire.Checkpoint, error) {
	var out wire.Checkpoints
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/sessions/%s/checkpoints", session)}, &out)
	return out.Checkpoints, err
}
