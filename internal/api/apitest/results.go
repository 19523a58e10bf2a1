package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// Results holds the fake's functions for checkpoints and change sets.
type Results struct {
	ChangeSetsFunc       func(ctx context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error)
	ChangeSetFunc        func(ctx context.Context, id string) (wire.ChangeSet, error)
	ChangeSetPatchFunc   func(ctx context.Context, id string) ([]byte, error)
	CheckpointsFunc      func(ctx context.Context, session string) ([]wire.Checkpoint, error)
	CaptureChangeSetFunc func(ctx context.Context, session string, since int) (wire.ChangeSet, error)
}

func (f Results) ChangeSets(ctx context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error) {
	if f.ChangeSetsFunc == nil {
		return nil, ErrUnset
	}
	return f.ChangeSetsFunc(ctx, q)
}

func (f Results) ChangeSet(ctx context.Context, id string) (wire.ChangeSet, error) {
	if f.ChangeSetFunc == nil {
		return wire.ChangeSet{}, ErrUnset
	}
	return f.ChangeSetFunc(ctx, id)
}

func (f Results) ChangeSetPatch(ctx context.Context, id string) ([]byte, error) {
	if f.ChangeSetPatchFunc == nil {
		return nil, ErrUnset
	}
	return f.ChangeSetPatchFunc(ctx, id)
}

func (f Results) Checkpoints(ctx context.Context, session string) ([]wire.Checkpoint, error) {
	if f.CheckpointsFunc == nil {
		return nil, ErrUnset
	}
	return f.CheckpointsFunc(ctx, session)
}

func (f Results) CaptureChangeSet(ctx context.Context, session string, since int) (wire.ChangeSet, error) {
	if f.CaptureChangeSetFunc == nil {
		return wire.ChangeSet{}, ErrUnset
	}
	return f.CaptureChangeSetFunc(ctx, session, since)
}
