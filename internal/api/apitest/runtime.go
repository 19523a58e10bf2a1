package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

func (f Backend) Sessions(ctx context.Context) ([]wire.Session, error) {
	if f.SessionsFunc == nil {
		return nil, ErrUnset
	}
	return f.SessionsFunc(ctx)
}

func (f Backend) Turns(ctx context.Context, session string) ([]wire.Turn, error) {
	if f.TurnsFunc == nil {
		return nil, ErrUnset
	}
	return f.TurnsFunc(ctx, session)
}

func (f Backend) AgentConfig(ctx context.Context, agent string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error) {
	if f.AgentConfigFunc == nil {
		return wire.AgentRuntimeStatus{}, ErrUnset
	}
	return f.AgentConfigFunc(ctx, agent, r)
}

func (f Backend) CancelTurn(ctx context.Context, turn string) error {
	if f.CancelTurnFunc == nil {
		return ErrUnset
	}
	return f.CancelTurnFunc(ctx, turn)
}
