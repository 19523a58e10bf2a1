package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// RetireRoom retires a room for a peer whose agent left it or whose room
// was deleted: its spooled and queued messages and its binding go, in one
// store transaction and without any remote write (Band answers 404 for a
// deleted room, and an agent removed from a room can no longer settle
// there). Work already in flight for the room needs no waiting: a lane's
// move of an entry and the retirement are serialized by the store, so an
// entry is either queued before the retirement (and deleted by it) or
// dropped when it leaves the spool afterwards; a claim, reply or ack of a
// deleted row finds it gone.
func (e *Engine) RetireRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (store.RoomRetired, error) {
	res, err := e.cfg.Store.RoomRetire(ctx, ws, key, room, e.cfg.Now())
	if err != nil {
		return res, err
	}
	e.cfg.Spool.ReleaseN(ws, key, res.Spooled, res.SpooledBytes)
	e.act.released(ws, key, room, "", true)
	e.emit(Event{Kind: EventRoomRetired, Workspace: ws, Peer: key, Room: room, Binding: res.Binding, Count: res.Queued + res.Spooled})
	e.wake.Notify()
	return res, nil
}

// RestoreRoom lifts a room's retirement when the agent is added to it
// again, before the room's backlog is caught up.
func (e *Engine) RestoreRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) error {
	ok, err := e.cfg.Store.RoomRestore(ctx, ws, key, room)
	if err != nil {
		return err
	}
	if ok {
		e.emit(Event{Kind: EventRoomRestored, Workspace: ws, Peer: key, Room: room})
	}
	return nil
}

// ReconcileRooms compares the peer's local state with present, the
// complete list of rooms the agent is in now: a retired room that is
// present again is restored, and every room the peer holds local state for
// (a binding, queued or unrouted messages) that is not present is retired.
// It runs when a feed connects, before any room is caught up, so a change
// that happened while the daemon was away or the socket was down is not
// missed. listedAt is when the listing began: local state newer than that
// (a room joined and bound, or a message received, while the list was in
// flight) is not judged by a list that may predate it. It returns the rooms
// it retired.
func (e *Engine) ReconcileRooms(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, present []jam.RoomID, listedAt time.Time) ([]jam.RoomID, error) {
	in := make(map[jam.RoomID]bool, len(present))
	for _, r := range present {
		in[r] = true
	}
	retired, err := e.cfg.Store.RoomRetiredList(ctx, ws, key)
	if err != nil {
		return nil, fmt.Errorf("reconcile rooms of %s: %w", key, err)
	}
	for _, r := range retired {
		if in[r] {
			if err := e.RestoreRoom(ctx, ws, key, r); err != nil {
				return nil, fmt.Errorf("reconcile rooms of %s: %w", key, err)
			}
		}
	}
	// Stored times are microseconds; compare at that precision.
	listedAt = listedAt.Truncate(time.Microsecond)
	var gone []jam.RoomID
	note := func(r jam.RoomID, at time.Time) {
		if !in[r] && at.Before(listedAt) && !slices.Contains(gone, r) {
			gone = append(gone, r)
		}
	}
	bindings, err := e.cfg.Store.BindingList(ctx, ws, key)
	if err != nil {
		return nil, fmt.Errorf("reconcile rooms of %s: %w", key, err)
	}
	for _, b := range bindings {
		note(b.Room, b.CreatedAt)
	}
	queued, err := e.cfg.Store.QueueRooms(ctx, ws, key)
	if err != nil {
		return nil, fmt.Errorf("reconcile rooms of %s: %w", key, err)
	}
	for _, q := range queued {
		note(q.Room, q.FirstReceived)
	}
	for _, r := range gone {
		if _, err := e.RetireRoom(ctx, ws, key, r); err != nil {
			return nil, fmt.Errorf("reconcile rooms of %s: %w", key, err)
		}
	}
	return gone, nil
}
