package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// Jobs lists the daemon's jobs q selects, newest first.
func (c *Client) Jobs(ctx context.Context, q wire.JobQuery) ([]wire.Job, error) {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.Jobs
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: v}, &out)
	return out.Jobs, err
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (wire.Job, error) {
	var out wire.Job
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/jobs/%s", id)}, &out)
	return out, err
}

// JobRetry queues a dead or cancelled job again.
func (c *Client) JobRetry(ctx context.Context, id string) (wire.Job, error) {
	var out wire.Job
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/jobs/%s/retry", id)}, &out)
	return out, err
}

// JobCancel cancels a queued, failed or running job.
func (c *Client) JobCancel(ctx context.Context, id string) (wire.Job, error) {
	var out wire.Job
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/jobs/%s/cancel", id)}, &out)
	return out, err
}
