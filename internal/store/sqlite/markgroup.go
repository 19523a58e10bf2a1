package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/jamhq/jam/internal/jam"
)

// markGroup commits concurrent queue marks together: one transaction and
// one fsync for every mark waiting when the writer is free, instead of one
// each. The engine marks each message twice (claimed, then delivered), from
// every active lane at once; one at a time, the lanes queued behind each
// other's fsyncs on the single writer connection (a restart's redelivery
// spent three quarters of its time there).
//
// There is no goroutine of its own: the first caller to find the group
// idle leads, committing batches until its own mark is committed, then
// hands the lead to the oldest waiting caller, if any. Every caller
// returns only once its mark is committed (or its batch failed), as a
// lone mark would.
type markGroup struct {
	mu      sync.Mutex
	queue   []*markReq // guarded by mu
	leading bool       // guarded by mu: a caller is committing
}

// markReq is one caller's mark.
type markReq struct {
	query string
	args  []any
	msg   jam.PlatformMessageID
	err   error         // set before done closes
	done  chan struct{} // closed once committed or failed
	lead  chan struct{} // closed when this caller takes the lead
}

// markMax bounds one transaction's marks.
const markMax = 256

// mark commits one queue mark with whatever others wait alongside it.
func (s *Store) mark(ctx context.Context, r *markReq) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue mark %s: %w", r.msg, err)
	}
	r.done, r.lead = make(chan struct{}), make(chan struct{})
	g := &s.marks
	g.mu.Lock()
	g.queue = append(g.queue, r)
	if g.leading {
		g.mu.Unlock()
		select {
		case <-r.done:
			return r.err
		case <-r.lead:
		}
	} else {
		g.leading = true
		g.mu.Unlock()
	}
	// Leading: commit batches until this caller's mark is among them,
	// then pass the lead on. The batch is committed even if ctx ends
	// meanwhile (other callers' marks are in it); a mark is short.
	cctx := context.WithoutCancel(ctx)
	for {
		g.mu.Lock()
		n := min(len(g.queue), markMax)
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()
		s.commitMarks(cctx, batch)
		select {
		case <-r.done:
		default:
			continue // this caller's mark waits in a later batch
		}
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leading = false
		} else {
			close(g.queue[0].lead)
		}
		g.mu.Unlock()
		return r.err
	}
}

// commitMarks runs a batch of marks in one transaction. A mark whose row
// is gone fails alone (jam.ErrNotFound); a failed transaction fails the
// whole batch.
func (s *Store) commitMarks(ctx context.Context, batch []*markReq) {
	missing := make([]bool, len(batch))
	// Prepared once, outside the transaction (the writer has one
	// connection): with the pure-Go driver a prepare costs about as much
	// as the update.
	err := s.stmts.prepare(ctx, s.writer, queueMarkClaimed, queueMarkDelivered)
	if err == nil {
		err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
			for i, r := range batch {
				st, err := s.stmts.inTx(ctx, tx, r.query)
				if err != nil {
					return err
				}
				res, err := st.ExecContext(ctx, r.args...)
				if err != nil {
					return err
				}
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				missing[i] = n == 0
			}
			return nil
		})
	}
	for i, r := range batch {
		switch {
		case err != nil:
			r.err = fmt.Errorf("queue mark %s: %w", r.msg, err)
		case missing[i]:
			r.err = fmt.Errorf("queue mark %s: %w", r.msg, jam.ErrNotFound)
		}
		close(r.done)
	}
}
