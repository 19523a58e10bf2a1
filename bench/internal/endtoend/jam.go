package endtoend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jamtest"
)

// agentName is the attached agent of the runs.
const agentName = "bench"

// jamRig is a daemon with one attached agent bound to o.Rooms rooms.
type jamRig struct {
	d      *jamtest.Daemon
	owner  *band.Client
	agent  wire.Agent
	rooms  []string
	ackers int
}

func startJam(ctx context.Context, o Options) (_ *jamRig, err error) {
	dir, err := os.MkdirTemp(o.Dir, "jam")
	if err != nil {
		return nil, err
	}
	d, err := jamtest.Start(ctx, jamtest.Options{DataDir: dir})
	if err != nil {
		return nil, err
	}
	r := &jamRig{d: d, ackers: o.Ackers}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.stop())
		}
	}()
	if r.owner, err = d.Owner(); err != nil {
		return nil, err
	}
	if r.agent, err = d.Client.AgentAdd(ctx, wire.AgentAddRequest{Name: agentName}); err != nil {
		return nil, fmt.Errorf("add agent: %w", err)
	}
	for i := range o.Rooms {
		room, err := d.Client.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("bench %d", i), Agents: []string{agentName}})
		if err != nil {
			return nil, fmt.Errorf("create room: %w", err)
		}
		if _, err := d.Client.Bind(ctx, wire.BindRequest{Agent: agentName, Room: room.ID}); err != nil {
			return nil, fmt.Errorf("bind room: %w", err)
		}
		r.rooms = append(r.rooms, room.ID)
	}
	return r, nil
}

func (r *jamRig) stop() error { return r.d.Stop() }

// post is the owner's post of message n to a room chosen round-robin.
func (r *jamRig) post(tr *tracker) postFunc {
	return func(ctx context.Context, _, n int, at time.Time) error {
		tr.post(n, at)
		_, err := r.owner.SendChatMessage(ctx, r.rooms[n%len(r.rooms)], text(r.agent.Handle, n),
			[]protocol.Mention{{ID: r.agent.AgentID}})
		return err
	}
}

// consume is the agent: it waits for its inbox, takes every message in it
// (delivery), acknowledges them with up to r.ackers at once (settlement),
// and waits again, until ctx ends.
func (r *jamRig) consume(ctx context.Context, tr *tracker) error {
	sem := make(chan struct{}, r.ackers)
	for ctx.Err() == nil {
		inbox, err := r.d.Client.WaitInbox(ctx, wire.WaitRequest{Agent: agentName, TimeoutMS: 200})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait inbox: %w", err)
		}
		now := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, m := range inbox.Messages {
			n, ok := number(m.Content)
			if ok && !tr.deliver(n, now) {
				continue // not ours, or listed again before its ack finished
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := r.d.Client.Ack(ctx, m.ID, wire.AckRequest{Agent: agentName}); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("ack %s: %w", m.ID, err))
					mu.Unlock()
					return
				}
				if ok {
					tr.settle(n, time.Now())
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// RunJam runs the fixed-load and the saturation run on a fresh daemon.
func RunJam(ctx context.Context, o Options) ([]Result, error) {
	o = o.withDefaults()
	r, err := startJam(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	var out []Result
	for _, load := range []Load{Fixed, Saturation} {
		res, err := r.run(ctx, o, load)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("jam %s: %w", load, err), r.stop())
		}
		out = append(out, res)
	}
	return out, r.stop()
}

// run warms up with a few messages, then runs one load with the agent
// consuming alongside.
func (r *jamRig) run(ctx context.Context, o Options, load Load) (Result, error) {
	for _, warm := range []bool{true, false} {
		tr := newTracker()
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var consumeErr error
		wg.Go(func() { consumeErr = r.consume(cctx, tr) })
		var err error
		switch {
		case warm:
			err = runFixed(ctx, Options{Rate: 100, Duration: 200 * time.Millisecond, Posters: 4}, tr, r.post(tr))
		case load == Fixed:
			err = runFixed(ctx, o, tr, r.post(tr))
		default:
			err = runSaturation(ctx, o, tr, r.post(tr))
		}
		if err == nil {
			waitSettled(ctx, tr, o.Drain)
		}
		cancel()
		wg.Wait()
		if err := errors.Join(err, consumeErr); err != nil {
			return Result{}, err
		}
		if !warm {
			offered := 0.0
			if load == Fixed {
				offered = o.Rate
			}
			return tr.result(load, offered), nil
		}
	}
	panic("unreachable")
}
