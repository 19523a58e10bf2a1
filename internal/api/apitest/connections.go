package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// ConnectionFuncs holds the fake's functions for connections.
type ConnectionFuncs struct {
	ConnectionsFunc      func(ctx context.Context) ([]wire.Connection, error)
	ConnectionAddFunc    func(ctx context.Context, r wire.ConnectionAddRequest) (wire.Connection, error)
	ConnectionFunc       func(ctx context.Context, ref string) (wire.Connection, error)
	ConnectionRotateFunc func(ctx context.Context, ref string, r wire.ConnectionRotateRequest) (wire.Connection, error)
	ConnectionRemoveFunc func(ctx context.Context, ref string) (wire.Connection, error)
}

func (f ConnectionFuncs) Connections(ctx context.Context) ([]wire.Connection, error) {
	if f.ConnectionsFunc == nil {
		return nil, ErrUnset
	}
	return f.ConnectionsFunc(ctx)
}

func (f ConnectionFuncs) ConnectionAdd(ctx context.Context, r wire.ConnectionAddRequest) (wire.Connection, error) {
	if f.ConnectionAddFunc == nil {
		return wire.Connection{}, ErrUnset
	}
	return f.ConnectionAddFunc(ctx, r)
}

func (f ConnectionFuncs) Connection(ctx context.Context, ref string) (wire.Connection, error) {
	if f.ConnectionFunc == nil {
		return wire.Connection{}, ErrUnset
	}
	return f.ConnectionFunc(ctx, ref)
}

func (f ConnectionFuncs) ConnectionRotate(ctx context.Context, ref string, r wire.ConnectionRotateRequest) (wire.Connection, error) {
	if f.ConnectionRotateFunc == nil {
		return wire.Connection{}, ErrUnset
	}
	return f.ConnectionRotateFunc(ctx, ref, r)
}

func (f ConnectionFuncs) ConnectionRemove(ctx context.Context, ref string) (wire.Connection, error) {
	if f.ConnectionRemoveFunc == nil {
		return wire.Connection{}, ErrUnset
	}
	return f.ConnectionRemoveFunc(ctx, ref)
}
