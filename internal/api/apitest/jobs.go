package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// JobFuncs holds the fake's functions for jobs.
type JobFuncs struct {
	JobsFunc      func(ctx context.Context, q wire.JobQuery) ([]wire.Job, error)
	JobFunc       func(ctx context.Context, id string) (wire.Job, error)
	JobRetryFunc  func(ctx context.Context, id string) (wire.Job, error)
	JobCancelFunc func(ctx context.Context, id string) (wire.Job, error)
}

func (f JobFuncs) Jobs(ctx context.Context, q wire.JobQuery) ([]wire.Job, error) {
	if f.JobsFunc == nil {
		return nil, ErrUnset
	}
	return f.JobsFunc(ctx, q)
}

func (f JobFuncs) Job(ctx context.Context, id string) (wire.Job, error) {
	if f.JobFunc == nil {
		return wire.Job{}, ErrUnset
	}
	return f.JobFunc(ctx, id)
}

func (f JobFuncs) JobRetry(ctx context.Context, id string) (wire.Job, error) {
	if f.JobRetryFunc == nil {
		return wire.Job{}, ErrUnset
	}
	return f.JobRetryFunc(ctx, id)
}

func (f JobFuncs) JobCancel(ctx context.Context, id string) (wire.Job, error) {
	if f.JobCancelFunc == nil {
		return wire.Job{}, ErrUnset
	}
	return f.JobCancelFunc(ctx, id)
}
