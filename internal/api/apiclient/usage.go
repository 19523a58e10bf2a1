package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jamhq/jam/internal/api/wire"
)

// Usage returns the usage of the workspace's turns grouped by by (agent,
// room, session or day; "" is agent) since since (as api.ParseSince reads
// it; "" for all time).
func (c *Client) Usage(ctx context.Context, by, since string) (wire.UsageReport, error) {
	q := url.Values{}
	if by != "" {
		q.Set("by", by)
	}
	if since != "" {
		q.Set("since", since)
	}
	var out wire.UsageReport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/usage", query: q}, &out)
	return out, err
}
