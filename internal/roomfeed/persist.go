package roomfeed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// persistOp is one accepted mutation (or a room retirement) on its way to
// the store.
type persistOp struct {
	room jam.RoomID
	// retire retires the room's cache; the other fields are unset.
	retire bool
	seq    int64
	// upsert is the row of an upsert; del the message of a delete.
	upsert    *Row
	del       jam.PlatformMessageID
	attention *store.AttentionItem
}

// dirtyRoom is a room whose mutations did not fit the persistence
// channel. It holds no rows: the checkpoint writes the room's whole
// window as it is at flush time, so any number of coalesced mutations
// cost one write, and the dirty set is bounded by the account's rooms.
type dirtyRoom struct {
	retire    bool
	attention []store.AttentionItem
}

// checkpoint is a dirty room's state taken at flush time.
type checkpoint struct {
	room      jam.RoomID
	retire    bool
	seq       int64
	rows      []Row
	attention []store.AttentionItem
}

// enqueueLocked hands op to the persistence worker without blocking. When
// the channel is full, or the room is already dirty (so its writes stay in
// order), op is coalesced into the room's dirty checkpoint instead, and a
// flush is scheduled. f.mu must be held.
func (f *Feed) enqueueLocked(op persistOp) {
	if d, ok := f.dirty[op.room]; ok {
		f.coalesceLocked(d, op)
		return
	}
	select {
	case f.ops <- op:
	default:
		d := &dirtyRoom{}
		f.dirty[op.room] = d
		f.coalesceLocked(d, op)
	}
}

// coalesceLocked folds op into a dirty room and makes sure a flush is
// scheduled. f.mu must be held.
func (f *Feed) coalesceLocked(d *dirtyRoom, op persistOp) {
	if op.retire {
		// Attention for a room the person left is moot.
		d.retire, d.attention = true, nil
	}
	if op.attention != nil {
		if len(d.attention) >= f.cfg.MaxDirtyAttention {
			d.attention = d.attention[1:]
			f.dropped++
			if f.dropped == 1 || f.dropped%100 == 0 {
				f.log.Warn("attention items dropped from a full checkpoint", "room", op.room, "dropped", f.dropped)
			}
		}
		d.attention = append(d.attention, *op.attention)
	}
	if !f.flushPending {
		f.flushPending = true
		f.afterLocked(f.cfg.FlushInterval, func() {
			select {
			case f.flushC <- struct{}{}:
			default:
			}
		})
	}
}

// run is the persistence worker: it writes queued mutations one by one,
// and dirty checkpoints when a flush is due and when the feed stops.
func (f *Feed) run(ctx context.Context) {
	for {
		select {
		case op := <-f.ops:
			f.write(ctx, op)
		case <-f.flushC:
			f.flush(ctx)
		case <-f.stopping:
			f.flush(ctx)
			return
		}
	}
}

// write writes one queued op. An op of a dirty room is not written: the
// room's checkpoint covers it, and only its attention item is carried
// over. A failed write makes the room dirty, so the next flush retries it
// as a checkpoint.
func (f *Feed) write(ctx context.Context, op persistOp) {
	f.mu.Lock()
	if d, ok := f.dirty[op.room]; ok {
		if op.attention != nil {
			f.coalesceLocked(d, persistOp{room: op.room, attention: op.attention})
		}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	var err error
	if op.retire {
		err = f.cfg.Store.RoomCacheRetire(ctx, f.cfg.WorkspaceID, f.cfg.AccountID, op.room)
	} else {
		p := f.applyParams(op.room, op.seq)
		if op.upsert != nil {
			var it store.RoomCacheItem
			if it, err = f.sealRow(op.room, *op.upsert); err == nil {
				p.Upserts = []store.RoomCacheItem{it}
			}
		} else {
			p.Deletes = []jam.PlatformMessageID{op.del}
		}
		if op.attention != nil {
			p.Attention = []store.AttentionItem{*op.attention}
		}
		if err == nil {
			err = f.cfg.Store.RoomCacheApply(ctx, p)
		}
	}
	var staged []store.AttentionItem
	if op.attention != nil {
		staged = []store.AttentionItem{*op.attention}
	}
	f.afterWrite(ctx, op.room, op.retire, staged, err)
}

// afterWrite handles the outcome of a write. A stale sequence means a newer
// state is already stored: nothing to do. Any other failure makes the room
// dirty again, keeping what the write would have staged.
func (f *Feed) afterWrite(ctx context.Context, room jam.RoomID, retire bool, staged []store.AttentionItem, err error) {
	switch {
	case err == nil:
		return
	case errors.Is(err, jam.ErrConflict):
		f.log.Debug("stale room cache write skipped", "room", room, "err", err)
		return
	case ctx.Err() != nil:
		f.log.Warn("room cache write abandoned at stop", "room", room, "err", err)
		return
	}
	f.log.Warn("room cache write failed; retrying as a checkpoint", "room", room, "err", err)
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.dirty[room]
	if !ok {
		d = &dirtyRoom{}
		f.dirty[room] = d
	}
	f.coalesceLocked(d, persistOp{room: room, retire: retire})
	for i := range staged {
		f.coalesceLocked(d, persistOp{room: room, attention: &staged[i]})
	}
}

// flush writes every dirty room's checkpoint. It first writes what is
// queued: those ops were queued before their room turned dirty, and
// written after its checkpoint they would be refused as stale, losing
// their attention items.
func (f *Feed) flush(ctx context.Context) {
	for n := len(f.ops); n > 0; n-- {
		f.write(ctx, <-f.ops)
	}
	f.mu.Lock()
	f.flushPending = false
	batch := make([]checkpoint, 0, len(f.dirty))
	for room, d := range f.dirty {
		cp := checkpoint{room: room, retire: d.retire, attention: d.attention}
		if r, ok := f.rooms[room]; ok {
			cp.seq, cp.rows = r.seq, r.sorted()
		}
		batch = append(batch, cp)
	}
	clear(f.dirty)
	f.mu.Unlock()
	for _, cp := range batch {
		f.writeCheckpoint(ctx, cp)
	}
}

// writeCheckpoint replaces a room's stored window with its state at flush
// time, with the attention items its coalesced mutations staged.
func (f *Feed) writeCheckpoint(ctx context.Context, cp checkpoint) {
	if cp.retire {
		if err := f.cfg.Store.RoomCacheRetire(ctx, f.cfg.WorkspaceID, f.cfg.AccountID, cp.room); err != nil {
			f.afterWrite(ctx, cp.room, true, nil, err)
			return
		}
	}
	if cp.seq == 0 {
		return // nothing was ever accepted in the room
	}
	p := f.applyParams(cp.room, cp.seq)
	p.Replace, p.Attention = true, cp.attention
	for _, row := range cp.rows {
		it, err := f.sealRow(cp.room, row)
		if err != nil {
			f.log.Warn("room cache row not sealed; left out of the checkpoint", "room", cp.room, "message", row.Message.ID, "err", err)
			continue
		}
		p.Upserts = append(p.Upserts, it)
	}
	f.afterWrite(ctx, cp.room, false, cp.attention, f.cfg.Store.RoomCacheApply(ctx, p))
}

func (f *Feed) applyParams(room jam.RoomID, seq int64) store.RoomCacheApplyParams {
	return store.RoomCacheApplyParams{WorkspaceID: f.cfg.WorkspaceID, AccountID: f.cfg.AccountID, Room: room, Seq: seq, At: f.cfg.Clock.Now()}
}

// sealRow encrypts a row for the store.
func (f *Feed) sealRow(room jam.RoomID, row Row) (store.RoomCacheItem, error) {
	raw, err := json.Marshal(row.Message)
	if err != nil {
		return store.RoomCacheItem{}, fmt.Errorf("encode message %s: %w", row.Message.ID, err)
	}
	id := jam.PlatformMessageID(row.Message.ID)
	return store.RoomCacheItem{MessageID: id, Seq: row.Seq, InsertedAt: row.At, Sealed: f.cfg.Sealer.Seal(raw, f.itemAAD(room, id))}, nil
}
