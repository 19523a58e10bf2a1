package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/store"
)

// startJobs starts the durable job runner of the daemon's workspace,
// claiming as this run. Components register their kinds on d.jobs
// before the runner starts (the delivery service does, and its resume
// and follow timer run beside the runner); all stop before the store
// closes, so no handler outlives its store.
func (d *daemon) startJobs(stack *stopStack) error {
	r, err := job.New(job.Config{Workspace: d.workspace.ID, Owner: jobOwner(d.run.Run), Minter: d.minter, Logger: d.log}, d.store)
	if err != nil {
		return err
	}
	d.jobs = r
	if prev := d.run.Previous; prev != nil && !prev.Clean() {
		// The node's previous run ended without a clean stop: its jobs'
		// leases are taken over now rather than once they lapse.
		owner := jobOwner(*prev)
		n, err := d.store.JobExpireOwner(context.Background(), d.workspace.ID, owner, time.Now())
		if err != nil {
			return fmt.Errorf("take over the jobs of %s: %w", owner, err)
		}
		if n > 0 {
			d.log.Info("took over the running jobs of the previous run", "owner", owner, "jobs", n)
		}
	}
	if err := d.newDeliveries(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	d.runDeliveries(ctx, &wg)
	wg.Go(func() {
		if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Error("job runner stopped", "err", err)
		}
	})
	stack.push("job runner", func(context.Context) error {
		cancel()
		wg.Wait()
		return nil
	})
	return nil
}

// jobOwner names a daemon run in its job claims.
func jobOwner(run store.DaemonRun) string { return fmt.Sprintf("%s/run-%d", run.Node, run.ID) }

func wireJob(j store.Job) wire.Job {
	out := wire.Job{ID: string(j.ID), Kind: j.Kind, State: string(j.State), IdempotencyKey: j.IdempotencyKey, Attempt: j.Attempt,
		MaxAttempts: j.MaxAttempts, RunAfter: j.RunAfter, Owner: j.Owner, Generation: j.Generation, Error: j.Error,
		Result: j.Result, Created: j.CreatedAt, Updated: j.UpdatedAt}
	if !j.LeaseUntil.IsZero() {
		t := j.LeaseUntil
		out.LeaseUntil = &t
	}
	return out
}

// Jobs implements api.Jobs.
func (d *daemon) Jobs(ctx context.Context, q wire.JobQuery) ([]wire.Job, error) {
	list, err := d.store.JobList(ctx, store.JobListParams{WorkspaceID: d.workspace.ID, State: store.JobState(q.State), Kind: q.Kind, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]wire.Job, 0, len(list))
	for _, j := range list {
		out = append(out, wireJob(j))
	}
	return out, nil
}

// Job implements api.Jobs.
func (d *daemon) Job(ctx context.Context, id string) (wire.Job, error) {
	return d.jobCall(ctx, id, func(ctx context.Context, id jam.JobID) (store.Job, error) {
		return d.store.JobGet(ctx, d.workspace.ID, id)
	})
}

// JobRetry implements api.Jobs.
func (d *daemon) JobRetry(ctx context.Context, id string) (wire.Job, error) {
	return d.jobCall(ctx, id, func(ctx context.Context, id jam.JobID) (store.Job, error) {
		j, err := d.store.JobRetry(ctx, d.workspace.ID, id, time.Now())
		if err == nil {
			d.jobs.Wake()
		}
		return j, err
	})
}

// JobCancel implements api.Jobs.
func (d *daemon) JobCancel(ctx context.Context, id string) (wire.Job, error) {
	return d.jobCall(ctx, id, func(ctx context.Context, id jam.JobID) (store.Job, error) {
		return d.store.JobCancel(ctx, d.workspace.ID, id, time.Now())
	})
}

func (d *daemon) jobCall(ctx context.Context, raw string, f func(context.Context, jam.JobID) (store.Job, error)) (wire.Job, error) {
	id, err := jam.ParseID[jam.JobID](raw)
	if err != nil {
		return wire.Job{}, err
	}
	j, err := f(ctx, id)
	if err != nil {
		return wire.Job{}, err
	}
	return wireJob(j), nil
}
