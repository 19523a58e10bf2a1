package apiclient

import (
	"context"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// Connections lists the daemon's live connections, oldest first.
func (c *Client) Connections(ctx context.Context) ([]wire.Connection, error) {
	var out wire.Connections
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/connections"}, &out)
	return out.Connections, err
}

// ConnectionAdd adds a connection; the secret travels in the body only.
func (c *Client) ConnectionAdd(ctx context.Context, r wire.ConnectionAddRequest) (wire.Connection, error) {
	var out wire.Connection
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/connections", body: r}, &out)
	return out, err
}

// Connection returns one connection by id, PROVIDER/NAME or NAME.
func (c *Client) Connection(ctx context.Context, ref string) (wire.Connection, error) {
	var out wire.Connection
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/connections/%s", ref)}, &out)
	return out, err
}

// ConnectionRotate appends a credential version to a connection.
func (c *Client) ConnectionRotate(ctx context.Context, ref string, r wire.ConnectionRotateRequest) (wire.Connection, error) {
	var out wire.Connection
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/connections/%s/rotate", ref), body: r}, &out)
	return out, err
}

// ConnectionRemove removes a connection.
func (c *Client) ConnectionRemove(ctx context.Context, ref string) (wire.Connection, error) {
	var out wire.Connection
	err := c.do(ctx, request{method: http.MethodDelete, path: pathf("/v1/connections/%s", ref)}, &out)
	return out, err
}
