package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// Delegations lists the delegations q selects, newest first.
func (c *Client) Delegations(ctx context.Context, q wire.DelegationQuery) ([]wire.Delegation, error) {
	v := url.Values{}
	if q.Parent != "" {
		v.Set("parent", q.Parent)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.Delegations
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/delegations", query: v}, &out)
	return out.Delegations, err
}

// Delegation returns one delegation with its contract's schema and, once
// submitted, its result.
func (c *Client) Delegation(ctx context.Context, id string) (wire.DelegationDetail, error) {
	var out wire.DelegationDetail
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/delegations/%s", id)}, &out)
	return out, err
}

// DelegationCancel cancels a pending or running delegation.
func (c *Client) DelegationCancel(ctx context.Context, id string) (wire.Delegation, error) {
	var out wire.Delegation
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/delegations/%s/cancel", id)}, &out)
	return out, err
}
