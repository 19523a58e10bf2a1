package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// DeliveryFuncs holds the fake's functions for deliveries and operations.
type DeliveryFuncs struct {
	DeliverFunc        func(ctx context.Context, r wire.DeliverRequest) (wire.Delivery, error)
	DeliveriesFunc     func(ctx context.Context, q wire.DeliveryQuery) ([]wire.Delivery, error)
	DeliveryFunc       func(ctx context.Context, id string) (wire.Delivery, error)
	DeliveryFollowFunc func(ctx context.Context, id string) (wire.Delivery, error)
	DeliveryMergeFunc  func(ctx context.Context, id string, r wire.MergeRequest) (wire.Operation, error)
	OperationFunc      func(ctx context.Context, id string) (wire.Operation, error)
	OperationsFunc     func(ctx context.Context, q wire.OperationQuery) ([]wire.Operation, error)
}

func (f DeliveryFuncs) Operations(ctx context.Context, q wire.OperationQuery) ([]wire.Operation, error) {
	if f.OperationsFunc == nil {
		return nil, ErrUnset
	}
	return f.OperationsFunc(ctx, q)
}

func (f DeliveryFuncs) Deliver(ctx context.Context, r wire.DeliverRequest) (wire.Delivery, error) {
	if f.DeliverFunc == nil {
		return wire.Delivery{}, ErrUnset
	}
	return f.DeliverFunc(ctx, r)
}

func (f DeliveryFuncs) Deliveries(ctx context.Context, q wire.DeliveryQuery) ([]wire.Delivery, error) {
	if f.DeliveriesFunc == nil {
		return nil, ErrUnset
	}
	return f.DeliveriesFunc(ctx, q)
}

func (f DeliveryFuncs) Delivery(ctx context.Context, id string) (wire.Delivery, error) {
	if f.DeliveryFunc == nil {
		return wire.Delivery{}, ErrUnset
	}
	return f.DeliveryFunc(ctx, id)
}

func (f DeliveryFuncs) DeliveryFollow(ctx context.Context, id string) (wire.Delivery, error) {
	if f.DeliveryFollowFunc == nil {
		return wire.Delivery{}, ErrUnset
	}
	return f.DeliveryFollowFunc(ctx, id)
}

func (f DeliveryFuncs) DeliveryMerge(ctx context.Context, id string, r wire.MergeRequest) (wire.Operation, error) {
	if f.DeliveryMergeFunc == nil {
		return wire.Operation{}, ErrUnset
	}
	return f.DeliveryMergeFunc(ctx, id, r)
}

func (f DeliveryFuncs) Operation(ctx context.Context, id string) (wire.Operation, error) {
	if f.OperationFunc == nil {
		return wire.Operation{}, ErrUnset
	}
	return f.OperationFunc(ctx, id)
}
