package endtoend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

// hubRig is the hub alone, with an owner, one agent and one room per
// posting goroutine (so the agent's next message in a room is the one
// its poster just posted).
type hubRig struct {
	h     *hub.Hub
	http  *band.HTTP
	owner *band.Client
	agent *band.Client
	id    string
	rooms []string
}

func startHub(ctx context.Context, o Options) (_ *hubRig, err error) {
	dir, err := os.MkdirTemp(o.Dir, "hub")
	if err != nil {
		return nil, err
	}
	h, err := hub.New(hub.Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := h.Start(ctx); err != nil {
		return nil, err
	}
	r := &hubRig{h: h, http: band.NewHTTP(band.HTTPConfig{MaxInFlight: 2 * o.Posters, MaxIdlePerHost: 2 * o.Posters})}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.stop())
		}
	}()
	if r.owner, err = band.NewClient(r.http, h.URL(), band.APIKey(h.OwnerKey())); err != nil {
		return nil, err
	}
	reg, err := r.owner.RegisterAgent(ctx, agentName, "benchmark agent")
	if err != nil {
		return nil, fmt.Errorf("register agent: %w", err)
	}
	r.id = reg.Agent.ID
	if r.agent, err = band.NewClient(r.http, h.URL(), band.APIKey(reg.Credentials.APIKey)); err != nil {
		return nil, err
	}
	for i := range o.Posters {
		room, err := r.owner.CreateChat(ctx, fmt.Sprintf("bench %d", i))
		if err != nil {
			return nil, fmt.Errorf("create room: %w", err)
		}
		if _, err := r.owner.AddChatParticipant(ctx, room.ID, r.id, protocol.RoleMember); err != nil {
			return nil, fmt.Errorf("add agent: %w", err)
		}
		r.rooms = append(r.rooms, room.ID)
	}
	return r, nil
}

func (r *hubRig) stop() error {
	r.http.CloseIdle()
	return r.h.Stop(context.Background())
}

// post is the owner's post of message n in worker's room, followed by the
// agent's read of it (delivery) and its claim and settlement.
func (r *hubRig) post(tr *tracker) postFunc {
	return func(ctx context.Context, worker, n int, at time.Time) error {
		tr.post(n, at)
		room := r.rooms[worker]
		if _, err := r.owner.SendChatMessage(ctx, room, text(agentName, n), []protocol.Mention{{ID: r.id}}); err != nil {
			return fmt.Errorf("post: %w", err)
		}
		m, ok, err := r.agent.AgentNext(ctx, room)
		if err != nil {
			return fmt.Errorf("next: %w", err)
		}
		got, _ := number(m.Content)
		if !ok || got != n {
			return fmt.Errorf("next in room %d: want message %d, got %q", worker, n, m.Content)
		}
		tr.deliver(n, time.Now())
		if _, err := r.agent.AgentProcessing(ctx, room, m.ID); err != nil {
			return fmt.Errorf("processing: %w", err)
		}
		if _, err := r.agent.AgentProcessed(ctx, room, m.ID); err != nil {
			return fmt.Errorf("processed: %w", err)
		}
		tr.settle(n, time.Now())
		return nil
	}
}

// RunHub runs the fixed-load and the saturation run on a fresh hub.
func RunHub(ctx context.Context, o Options) ([]Result, error) {
	o = o.withDefaults()
	r, err := startHub(ctx, o)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, load := range []Load{Fixed, Saturation} {
		for _, warm := range []bool{true, false} {
			tr := newTracker()
			switch {
			case warm:
				err = runFixed(ctx, Options{Rate: 100, Duration: 200 * time.Millisecond, Posters: min(4, o.Posters)}, tr, r.post(tr))
			case load == Fixed:
				err = runFixed(ctx, o, tr, r.post(tr))
			default:
				err = runSaturation(ctx, o, tr, r.post(tr))
			}
			if err != nil {
				return nil, errors.Join(fmt.Errorf("hub %s: %w", load, err), r.stop())
			}
			if !warm {
				offered := 0.0
				if load == Fixed {
					offered = o.Rate
				}
				out = append(out, tr.result(load, offered))
			}
		}
	}
	return out, r.stop()
}
