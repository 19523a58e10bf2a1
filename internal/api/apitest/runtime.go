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

func (f Backend) SessionMessages(ctx context.Context, session string) ([]wire.SessionMessage, error) {
	if f.SessionMessagesFunc == nil {
		return nil, ErrUnset
	}
	return f.SessionMessagesFunc(ctx, session)
}

func (f Backend) SessionSend(ctx context.Context, session string, r wire.SessionSendRequest) (wire.SessionSendResult, error) {
	if f.SessionSendFunc == nil {
		return wire.SessionSendResult{}, ErrUnset
	}
	return f.SessionSendFunc(ctx, session, r)
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

func (f Backend) Turn(ctx context.Context, turn string) (wire.Turn, error) {
	if f.TurnFunc == nil {
		return wire.Turn{}, ErrUnset
	}
	return f.TurnFunc(ctx, turn)
}

func (f Backend) TurnOutput(ctx context.Context, turn string) (wire.TurnOutput, error) {
	if f.TurnOutputFunc == nil {
		return wire.TurnOutput{}, ErrUnset
	}
	return f.TurnOutputFunc(ctx, turn)
}

func (f Backend) Worktrees(ctx context.Context) ([]wire.Worktree, error) {
	if f.WorktreesFunc == nil {
		return nil, ErrUnset
	}
	return f.WorktreesFunc(ctx)
}

func (f Backend) WorktreeArchive(ctx context.Context, session string) (wire.Worktree, error) {
	if f.WorktreeArchiveFunc == nil {
		return wire.Worktree{}, ErrUnset
	}
	return f.WorktreeArchiveFunc(ctx, session)
}

func (f Backend) WorktreeRemove(ctx context.Context, session string, r wire.WorktreeRemoveRequest) (wire.Worktree, error) {
	if f.WorktreeRemoveFunc == nil {
		return wire.Worktree{}, ErrUnset
	}
	return f.WorktreeRemoveFunc(ctx, session, r)
}

func (f Backend) WorktreeRestore(ctx context.Context, session string, r wire.WorktreeRestoreRequest) (wire.Worktree, error) {
	if f.WorktreeRestoreFunc == nil {
		return wire.Worktree{}, ErrUnset
	}
	return f.WorktreeRestoreFunc(ctx, session, r)
}

func (f Backend) Quarantine(ctx context.Context) ([]wire.QuarantinedRecord, error) {
	if f.QuarantineFunc == nil {
		return nil, ErrUnset
	}
	return f.QuarantineFunc(ctx)
}
