package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// DelegationFuncs holds the fake's functions for delegations.
type DelegationFuncs struct {
	DelegationsFunc      func(ctx context.Context, q wire.DelegationQuery) ([]wire.Delegation, error)
	DelegationFunc       func(ctx context.Context, id string) (wire.DelegationDetail, error)
	DelegationCancelFunc func(ctx context.Context, id string) (wire.Delegation, error)
}

func (f DelegationFuncs) Delegations(ctx context.Context, q wire.DelegationQuery) ([]wire.Delegation, error) {
	if f.DelegationsFunc == nil {
		return nil, ErrUnset
	}
	return f.DelegationsFunc(ctx, q)
}

func (f DelegationFuncs) Delegation(ctx context.Context, id string) (wire.DelegationDetail, error) {
	if f.DelegationFunc == nil {
		return wire.DelegationDetail{}, ErrUnset
	}
	return f.DelegationFunc(ctx, id)
}

func (f DelegationFuncs) DelegationCancel(ctx context.Context, id string) (wire.Delegation, error) {
	if f.DelegationCancelFunc == nil {
		return wire.Delegation{}, ErrUnset
	}
	return f.DelegationCancelFunc(ctx, id)
}
