package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// retryable reports whether a Band failure may succeed if retried. The
// adapter's errors match jam.ErrUnavailable when they are retryable
// (408, 409, 425, 429, 5xx, expired auth, transport).
func retryable(err error) bool {
	return errors.Is(err, jam.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// claimAndDeliver claims a queued row on Band and delivers it. A
// retryable claim failure is retried in place, with bounded backoff,
// before the caller goes on to the room's next row: a room's messages
// reach its agent in order even while Band refuses or cannot be reached
// (a lane is one room's, so only that room waits). A permanent failure,
// or retries given up, leave the row queued for a later redelivery.
func (e *Engine) claimAndDeliver(ctx context.Context, p *peerState, row store.QueueRow) {
	err := e.claim(ctx, p, row)
	if err == nil {
		e.deliver(ctx, row)
		return
	}
	if alreadyProcessed(err) {
		// Settled on Band before a crash kept us from removing the row.
		if serr := e.settle(ctx, p, row, false); serr == nil {
			return
		}
	}
	base := Event{Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding, Err: err}
	if !retryable(err) || ctx.Err() != nil {
		base.Kind = EventClaimFailed
		e.emit(base)
		return
	}
	base.Kind = EventClaimRetry
	e.emit(base)
	e.retryClaim(p, row)
}

// retryClaim retries a claim with backoff. Before each attempt it re-reads
// the row: a message settled or re-homed meanwhile is not claimed for its
// old owner.
func (e *Engine) retryClaim(p *peerState, row store.QueueRow) {
	ctx := e.ctx
	if e.backoff(func() bool {
		cur, err := e.cfg.Store.QueueGet(ctx, row.WorkspaceID, row.Peer, row.MessageID)
		if err != nil {
			return true // settled or gone
		}
		if cur.Binding == "" {
			return true // unbound meanwhile: the next bind redelivers it
		}
		err = e.claim(ctx, p, cur)
		if err == nil {
			e.deliver(ctx, cur)
			return true
		}
		if !retryable(err) {
			e.emit(Event{Kind: EventClaimFailed, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: cur.Binding, Err: err})
			return true
		}
		return false
	}) {
		return
	}
	e.emit(Event{Kind: EventClaimFailed, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding,
		Err: fmt.Errorf("claim %s: gave up after %d attempts", row.MessageID, e.cfg.ClaimAttempts)})
}

// backoff calls try for attempts 2 to ClaimAttempts, each after a delay
// that starts at RetryMin and doubles up to RetryMax, until try reports
// that it is done. It reports whether try was done or the engine
// stopped; false means every attempt was spent.
func (e *Engine) backoff(try func() (done bool)) bool {
	delay := e.cfg.RetryMin
	for attempt := 2; attempt <= e.cfg.ClaimAttempts; attempt++ {
		t := time.NewTimer(delay)
		select {
		case <-e.ctx.Done():
			t.Stop()
			return true
		case <-t.C:
		}
		delay = min(delay*2, e.cfg.RetryMax)
		if try() {
			return true
		}
	}
	return false
}

// claim opens a processing attempt on Band and records it.
// A local notice is claimed locally only: it never touches Band.
func (e *Engine) claim(ctx context.Context, p *peerState, row store.QueueRow) error {
	if !row.MessageID.IsNotice() {
		if _, err := p.rt.Agent.AgentProcessing(ctx, string(row.Room), string(row.MessageID)); err != nil {
			return fmt.Errorf("claim %s: %w", row.MessageID, err)
		}
	}
	// A row delivered before (a redelivery) stays delivered: the agent
	// may already hold it, and marking it claimed again would hide it from
	// the inbox while the room's later rows still show.
	if row.State != store.QueueDelivered {
		if err := e.cfg.Store.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: row.WorkspaceID, Peer: row.Peer, MessageID: row.MessageID, State: store.QueueClaimed, At: e.cfg.Now()}); err != nil {
			return fmt.Errorf("record claim %s: %w", row.MessageID, err)
		}
	}
	e.emit(Event{Kind: EventClaimed, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding})
	return nil
}

// deliver hands a claimed row to its binding's session.
func (e *Engine) deliver(ctx context.Context, row store.QueueRow) {
	base := Event{Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding}
	b, err := e.cfg.Store.BindingGet(ctx, row.WorkspaceID, row.Binding)
	if err == nil {
		err = e.cfg.Deliverer.Deliver(ctx, Delivery{Binding: b, Row: row})
	}
	if err == nil {
		err = e.markDelivered(ctx, row)
	}
	e.wake.Notify()
	if err != nil {
		base.Kind, base.Err = EventDeliveryFailed, err
		e.emit(base)
		return
	}
	base.Kind = EventDelivered
	e.emit(base)
}

// Redeliver re-claims and re-delivers every queued message of a peer's
// bindings (of one binding when id is not ""), each binding's oldest
// first: at start, after a bind or steal, and after a peer reconnects.
// Bindings (rooms) are worked side by side, as many at once as lanes may
// be active, so one room's backlog does not hold up the others.
func (e *Engine) Redeliver(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, id jam.BindingID) error {
	p, err := e.peer(ws, key)
	if err != nil {
		return err
	}
	bindings, err := e.cfg.Store.BindingList(ctx, ws, key)
	if err != nil {
		return fmt.Errorf("redeliver %s: %w", key, err)
	}
	sem := make(chan struct{}, e.cfg.MaxActiveLanes)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, b := range bindings {
		if id != "" && b.ID != id {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := e.redeliverBinding(ctx, p, b); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// redeliverBinding re-claims and re-delivers one binding's queued
// messages, oldest first.
func (e *Engine) redeliverBinding(ctx context.Context, p *peerState, b store.Binding) error {
	rows, err := retryCorrupt(ctx, e, func() ([]store.QueueRow, error) {
		return e.cfg.Store.QueueList(ctx, store.QueueListParams{WorkspaceID: b.WorkspaceID, Peer: b.Peer, Binding: b.ID})
	})
	if err != nil {
		return fmt.Errorf("redeliver %s: %w", b.ID, err)
	}
	for _, row := range rows {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A row that no longer opens is not claimed: it is quarantined
		// and the room's next message goes on.
		if _, ok, err := e.readRow(ctx, row); err != nil {
			return fmt.Errorf("redeliver %s: %w", b.ID, err)
		} else if !ok {
			continue
		}
		e.claimAndDeliver(ctx, p, row)
	}
	return nil
}

// markDelivered records a row delivered. A retryable failure (the store
// full or unavailable) is retried in place with bounded backoff, as a
// claim is: the lane, one room's, waits, so the room's later rows never
// reach its agent's inbox ahead of this one.
func (e *Engine) markDelivered(ctx context.Context, row store.QueueRow) error {
	mark := func() error {
		return e.cfg.Store.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: row.WorkspaceID, Peer: row.Peer, MessageID: row.MessageID,
			State: store.QueueDelivered, At: e.cfg.Now()})
	}
	again := func(err error) bool {
		return (retryable(err) || errors.Is(err, jam.ErrStorageFull)) && ctx.Err() == nil
	}
	err := mark()
	if err == nil || !again(err) {
		return err
	}
	e.backoff(func() bool {
		err = mark()
		return err == nil || !again(err)
	})
	return err
}
