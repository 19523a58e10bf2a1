package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// Lifecycle holds the fake's lifecycle methods (embedded in Backend).
type Lifecycle struct {
	AgentRemoveFunc    func(ctx context.Context, agent string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error)
	AgentRestartFunc   func(ctx context.Context, agent string) (wire.AgentRestarted, error)
	RoomLeaveFunc      func(ctx context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error)
	SessionArchiveFunc func(ctx context.Context, session string) (wire.Session, error)
	SessionCloseFunc   func(ctx context.Context, session string) (wire.Session, error)
	RetryTurnFunc      func(ctx context.Context, turn string) (wire.Turn, error)
	AccountRemoveFunc  func(ctx context.Context, profile string) (wire.AccountRemoved, error)
}

func (f Lifecycle) AgentRemove(ctx context.Context, agent string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
	if f.AgentRemoveFunc == nil {
		return wire.AgentRemoved{}, ErrUnset
	}
	return f.AgentRemoveFunc(ctx, agent, r)
}

func (f Lifecycle) AgentRestart(ctx context.Context, agent string) (wire.AgentRestarted, error) {
	if f.AgentRestartFunc == nil {
		return wire.AgentRestarted{}, ErrUnset
	}
	return f.AgentRestartFunc(ctx, agent)
}

func (f Lifecycle) RoomLeave(ctx context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error) {
	if f.RoomLeaveFunc == nil {
		return wire.RoomLeft{}, ErrUnset
	}
	return f.RoomLeaveFunc(ctx, room, r)
}

func (f Lifecycle) SessionArchive(ctx context.Context, session string) (wire.Session, error) {
	if f.SessionArchiveFunc == nil {
		return wire.Session{}, ErrUnset
	}
	return f.SessionArchiveFunc(ctx, session)
}

func (f Lifecycle) SessionClose(ctx context.Context, session string) (wire.Session, error) {
	if f.SessionCloseFunc == nil {
		return wire.Session{}, ErrUnset
	}
	return f.SessionCloseFunc(ctx, session)
}

func (f Lifecycle) RetryTurn(ctx context.Context, turn string) (wire.Turn, error) {
	if f.RetryTurnFunc == nil {
		return wire.Turn{}, ErrUnset
	}
	return f.RetryTurnFunc(ctx, turn)
}

func (f Lifecycle) AccountRemove(ctx context.Context, profile string) (wire.AccountRemoved, error) {
	if f.AccountRemoveFunc == nil {
		return wire.AccountRemoved{}, ErrUnset
	}
	return f.AccountRemoveFunc(ctx, profile)
}
