package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// Deliver starts delivering a change set.
func (c *Client) Deliver(ctx context.Context, r wire.DeliverRequest) (wire.Delivery, error) {
	var out wire.Delivery
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/deliveries", body: r}, &out)
	return out, err
}

// Deliveries lists the deliveries q selects, newest first.
func (c *Client) Deliveries(ctx context.Context, q wire.DeliveryQuery) ([]wire.Delivery, error) {
	v := url.Values{}
	if q.ChangeSet != "" {
		v.Set("change_set", q.ChangeSet)
	}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.Deliveries
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/deliveries", query: v}, &out)
	return out.Deliveries, err
}

// Delivery returns one delivery.
func (c *Client) Delivery(ctx context.Context, id string) (wire.Delivery, error) {
	var out wire.Delivery
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/deliveries/%s", id)}, &out)
	return out, err
}

// DeliveryFollow reads the delivery's pull request from GitHub now.
func (c *Client) DeliveryFollow(ctx context.Context, id string) (wire.Delivery, error) {
	var out wire.Delivery
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/deliveries/%s/follow", id)}, &out)
	return out, err
}

// DeliveryMerge starts the merge of the delivery's pull request behind
// its gates.
func (c *Client) DeliveryMerge(ctx context.Context, id string, r wire.MergeRequest) (wire.Operation, error) {
	var out wire.Operation
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/deliveries/%s/merge", id), body: r}, &out)
	return out, err
}

// Operations lists the operations q selects, newest first, without their
// evidence.
func (c *Client) Operations(ctx context.Context, q wire.OperationQuery) ([]wire.Operation, error) {
	v := url.Values{}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Subject != "" {
		v.Set("subject", q.Subject)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.Operations
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/operations", query: v}, &out)
	return out.Operations, err
}

// Operation returns one operation with its evidence.
func (c *Client) Operation(ctx context.Context, id string) (wire.Operation, error) {
	var out wire.Operation
	err := c.do(ctx, request{method: http.MethodGet, path: pathf("/v1/operations/%s", id)}, &out)
	return out, err
}

// Approvals lists the pending approvals, oldest first.
func (c *Client) Approvals(ctx context.Context) ([]wire.Approval, error) {
	var out wire.Approvals
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/approvals"}, &out)
	return out.Approvals, err
}

// Approve answers a pending approval.
func (c *Client) Approve(ctx context.Context, id string, r wire.ApproveRequest) (wire.ApprovalAnswer, error) {
	var out wire.ApprovalAnswer
	err := c.do(ctx, request{method: http.MethodPost, path: pathf("/v1/approvals/%s", id), body: r}, &out)
	return out, err
}
