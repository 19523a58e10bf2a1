package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/delivery"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// deliveryFollowEvery is how often the daemon follows the open pull
// requests of its deliveries.
const deliveryFollowEvery = delivery.DefaultFollowEvery

// newDeliveries builds the delivery service on the job runner r; its
// kinds are registered before r runs.
func (d *daemon) newDeliveries() error {
	svc, err := delivery.New(delivery.Config{Workspace: d.workspace.ID, Minter: d.minter, Logger: d.log.With("component", "delivery"),
		Reviews: d.latestReview, RequireReview: d.cfg.MergeRequiresReview}, d.store, d.jobs)
	if err != nil {
		return err
	}
	d.deliveries = svc
	return nil
}

// runDeliveries resumes the deliveries a previous run left under way and
// follows the open pull requests on a timer until ctx ends.
func (d *daemon) runDeliveries(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() {
		if err := d.deliveries.Resume(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("resume deliveries", "err", err)
		}
		t := time.NewTicker(deliveryFollowEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				d.deliveries.FollowAll(ctx)
			}
		}
	})
}

func wireDelivery(v store.Delivery) wire.Delivery {
	out := wire.Delivery{ID: string(v.ID), ChangeSet: string(v.ChangeSetID), Session: string(v.SessionID), Turn: string(v.Turn), Remote: v.Remote,
		Branch: v.Branch, Connection: string(v.ConnectionID), PR: v.PR, Repo: v.Repo, Base: v.Base, Title: v.Title, Operation: string(v.Operation),
		State: string(v.State), Commit: v.Commit, RemoteSHA: v.RemoteSHA, PRNumber: v.PRNumber, PRURL: v.PRURL, PRState: v.PRState,
		PRHeadSHA: v.PRHeadSHA, Checks: v.Checks, ErrorCode: v.ErrorCode, Error: v.Error, Created: v.CreatedAt, Updated: v.UpdatedAt}
	if !v.FollowedAt.IsZero() {
		t := v.FollowedAt
		out.FollowedAt = &t
	}
	return out
}

func wireOperation(op store.Operation, ev []store.Evidence) wire.Operation {
	out := wire.Operation{ID: string(op.ID), Kind: op.Kind, Subject: op.Subject, State: string(op.State), Progress: op.Progress, Result: op.Result,
		ErrorCode: op.ErrorCode, Error: op.Error, Jobs: make([]string, 0, len(op.Jobs)), Evidence: make([]wire.Evidence, 0, len(ev)),
		Created: op.CreatedAt, Updated: op.UpdatedAt}
	for _, j := range op.Jobs {
		out.Jobs = append(out.Jobs, string(j))
	}
	for _, e := range ev {
		out.Evidence = append(out.Evidence, wire.Evidence{Seq: e.Seq, Step: e.Step, Event: string(e.Event), Detail: e.Detail, At: e.At})
	}
	return out
}

// Deliver implements api.Deliveries.
func (d *daemon) Deliver(ctx context.Context, r wire.DeliverRequest) (wire.Delivery, error) {
	cs, err := d.changeSet(ctx, r.ChangeSet)
	if err != nil {
		return wire.Delivery{}, fmt.Errorf("deliver: change set %s: %w", r.ChangeSet, err)
	}
	v, err := d.deliveries.Deliver(ctx, delivery.Request{ChangeSet: cs.ID, Remote: r.Remote, Branch: r.Branch, Connection: r.Connection,
		PR: r.PR, Repo: r.Repo, Base: r.Base, Title: r.Title})
	if err != nil {
		return wire.Delivery{}, err
	}
	return wireDelivery(v), nil
}

// Deliveries implements api.Deliveries.
func (d *daemon) Deliveries(ctx context.Context, q wire.DeliveryQuery) ([]wire.Delivery, error) {
	p := store.DeliveryListParams{WorkspaceID: d.workspace.ID, State: store.DeliveryState(q.State), Limit: q.Limit}
	if q.ChangeSet != "" {
		cs, err := d.changeSet(ctx, q.ChangeSet)
		if err != nil {
			return nil, fmt.Errorf("change set %s: %w", q.ChangeSet, err)
		}
		p.ChangeSetID = cs.ID
	}
	list, err := d.store.DeliveryList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Delivery, 0, len(list))
	for _, v := range list {
		out = append(out, wireDelivery(v))
	}
	return out, nil
}

// Delivery implements api.Deliveries.
func (d *daemon) Delivery(ctx context.Context, ref string) (wire.Delivery, error) {
	id, err := jam.ParseID[jam.DeliveryID](ref)
	if err != nil {
		return wire.Delivery{}, err
	}
	v, err := d.store.DeliveryGet(ctx, d.workspace.ID, id)
	if err != nil {
		return wire.Delivery{}, err
	}
	return wireDelivery(v), nil
}

// DeliveryFollow implements api.Deliveries.
func (d *daemon) DeliveryFollow(ctx context.Context, ref string) (wire.Delivery, error) {
	id, err := jam.ParseID[jam.DeliveryID](ref)
	if err != nil {
		return wire.Delivery{}, err
	}
	v, err := d.deliveries.Follow(ctx, id)
	if err != nil {
		return wire.Delivery{}, err
	}
	return wireDelivery(v), nil
}

// DeliveryMerge implements api.Deliveries.
func (d *daemon) DeliveryMerge(ctx context.Context, ref string, r wire.MergeRequest) (wire.Operation, error) {
	id, err := jam.ParseID[jam.DeliveryID](ref)
	if err != nil {
		return wire.Operation{}, err
	}
	op, err := d.deliveries.Merge(ctx, id, delivery.MergeRequest{Method: r.Method, Approved: r.Approved, RequireReview: r.RequireReview})
	if err != nil {
		return wire.Operation{}, err
	}
	return d.Operation(ctx, string(op.ID))
}

// Operation implements api.Deliveries.
func (d *daemon) Operation(ctx context.Context, ref string) (wire.Operation, error) {
	id, err := jam.ParseID[jam.OperationID](ref)
	if err != nil {
		return wire.Operation{}, err
	}
	op, err := d.store.OperationGet(ctx, d.workspace.ID, id)
	if err != nil {
		return wire.Operation{}, err
	}
	ev, err := d.store.EvidenceList(ctx, d.workspace.ID, id)
	if err != nil {
		return wire.Operation{}, err
	}
	return wireOperation(op, ev), nil
}

// latestReview answers the merge's review gate from the delegations: the
// newest submitted review of the change set.
func (d *daemon) latestReview(ctx context.Context, cs jam.ChangeSetID) (delivery.Review, bool, error) {
	svc, err := d.delegationService()
	if err != nil {
		return delivery.Review{}, false, err
	}
	del, ok, err := svc.LatestReview(ctx, d.workspace.ID, cs)
	if err != nil || !ok {
		return delivery.Review{}, false, err
	}
	approved, err := svc.Verdict(ctx, d.workspace.ID, del.ID)
	if err != nil {
		return delivery.Review{}, false, err
	}
	return delivery.Review{Delegation: del.ID, Agent: del.Agent, Approved: approved}, true, nil
}
