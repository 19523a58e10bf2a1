package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// ApprovalFuncs holds the fake's functions for approvals.
type ApprovalFuncs struct {
	ApprovalsFunc func(ctx context.Context) ([]wire.Approval, error)
	ApproveFunc   func(ctx context.Context, id string, r wire.ApproveRequest) (wire.ApprovalAnswer, error)
}

func (f ApprovalFuncs) Approvals(ctx context.Context) ([]wire.Approval, error) {
	if f.ApprovalsFunc == nil {
		return nil, ErrUnset
	}
	return f.ApprovalsFunc(ctx)
}

func (f ApprovalFuncs) Approve(ctx context.Context, id string, r wire.ApproveRequest) (wire.ApprovalAnswer, error) {
	if f.ApproveFunc == nil {
		return wire.ApprovalAnswer{}, ErrUnset
	}
	return f.ApproveFunc(ctx, id, r)
}
