package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/store"
)

// retentionInterval is how often the owned runtimes' history is pruned
// (also once at start).
const retentionInterval = time.Hour

// runtimeRetention are the bounds the daemon keeps per session: the
// newest turns with their output and executions, the newest messages,
// and the stored output of the session's turns. Nothing that is not over
// is pruned (see store.RuntimeRetention).
var runtimeRetention = store.RuntimePruneParams{
	KeepTurns:      store.DefaultKeepTurns,
	KeepMessages:   store.DefaultKeepMessages,
	MaxOutputBytes: store.DefaultMaxOutputBytes,
}

// pruner applies retention bounds in the background: once when it
// starts, then every interval. Its goroutine is waited for by stop.
type pruner struct {
	st     store.RuntimeRetention
	params store.RuntimePruneParams
	every  time.Duration
	log    *slog.Logger
	// done, when set, is told of each pass (tests).
	done func(store.RuntimePruned, error)

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (p *pruner) start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Go(func() {
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			p.pass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

func (p *pruner) pass(ctx context.Context) {
	begun := time.Now()
	n, err := p.st.RuntimePrune(ctx, p.params)
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		p.log.Warn("prune runtime history", "err", err)
	case n.Total() > 0:
		p.log.Info("pruned runtime history", "turns", n.Turns, "executions", n.Executions, "journal", n.Journal,
			"output_batches", n.Output, "session_messages", n.Messages, "took", time.Since(begun).Round(time.Millisecond))
	}
	if p.done != nil {
		p.done(n, err)
	}
}

func (p *pruner) stop(context.Context) error {
	p.cancel()
	p.wg.Wait()
	return nil
}

// startRetention starts pruning the owned runtimes' history.
func (d *daemon) startRetention(stack *stopStack) {
	p := &pruner{st: d.store, params: runtimeRetention, every: retentionInterval, log: d.log.With("component", "retention")}
	p.start()
	stack.push("retention", p.stop)
}
