package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// A record that can no longer be read — a spool entry or queue row whose
// columns are invalid, or whose sealed content does not open or decode —
// is moved to the store's quarantine (with its raw bytes and the reason),
// reported as an EventQuarantined and logged, and the lane goes on with
// the next message: one damaged record never holds up its room, and
// nothing is dropped without a trace. Band still holds the original
// message; if it offers it again, it is spooled afresh from that copy.
//
// Records are checked where they are read: the lane opens every spool
// entry, Redeliver opens every queue row before claiming it, Inbox and
// Message open what they return, and a read that meets a row whose
// columns do not even scan (store.ErrCorrupt) sweeps the tables
// (store.QuarantineInvalid) and reads again. Start sweeps once before
// anything is delivered.

// sweep moves every record with invalid columns to the quarantine and
// reports each. It returns how many it moved.
func (e *Engine) sweep(ctx context.Context) (int, error) {
	recs, err := e.cfg.Store.QuarantineInvalid(ctx, e.cfg.Now())
	if err != nil {
		return 0, fmt.Errorf("sweep invalid records: %w", err)
	}
	for _, rec := range recs {
		e.quarantined(rec)
	}
	return len(recs), nil
}

// retryCorrupt runs read, and once more after a sweep if it met a corrupt
// row.
func retryCorrupt[T any](ctx context.Context, e *Engine, read func() (T, error)) (T, error) {
	v, err := read()
	if !errors.Is(err, store.ErrCorrupt) {
		return v, err
	}
	if n, serr := e.sweep(ctx); serr != nil || n == 0 {
		return v, errors.Join(err, serr)
	}
	return read()
}

// quarantineSpool moves a spool entry that cannot be opened to the
// quarantine. A failure is returned: the entry then stays where it is,
// and the lane retries it later.
func (e *Engine) quarantineSpool(ctx context.Context, en store.SpoolEntry, reason error) error {
	rec, err := e.cfg.Store.QuarantineSpool(ctx, en.Seq, reason.Error(), e.cfg.Now())
	if errors.Is(err, jam.ErrNotFound) {
		return nil // moved or quarantined meanwhile
	}
	if err != nil {
		return fmt.Errorf("quarantine spool entry %d (%v): %w", en.Seq, reason, err)
	}
	e.quarantined(rec)
	return nil
}

// quarantineRow moves a queue row that cannot be opened to the quarantine.
func (e *Engine) quarantineRow(ctx context.Context, r store.QueueRow, reason error) error {
	rec, err := e.cfg.Store.QuarantineQueue(ctx, r.WorkspaceID, r.Peer, r.MessageID, reason.Error(), e.cfg.Now())
	if errors.Is(err, jam.ErrNotFound) {
		return nil // settled or quarantined meanwhile
	}
	if err != nil {
		return fmt.Errorf("quarantine queued message %s (%v): %w", r.MessageID, reason, err)
	}
	e.quarantined(rec)
	return nil
}

// quarantined reports a record that left the pipeline, and returns a
// spool entry's capacity to its peer.
func (e *Engine) quarantined(rec store.QuarantinedRecord) {
	if rec.Source == store.QuarantineFromSpool {
		e.cfg.Spool.ReleaseN(rec.WorkspaceID, rec.Peer, 1, int64(len(rec.Sealed)))
	}
	e.log.Error("record quarantined", "source", rec.Source, "seq", rec.Seq, "quarantine_id", rec.ID,
		"peer", rec.Peer, "room", rec.Room, "message", rec.MessageID, "reason", rec.Reason)
	// An identity the record held that is not valid is left out of the
	// event (the quarantine keeps it).
	ev := Event{Kind: EventQuarantined, Workspace: rec.WorkspaceID, Err: errors.New(rec.Reason), Source: rec.Source, QuarantineID: rec.ID}
	if rec.Peer.Validate() == nil {
		ev.Peer = rec.Peer
	}
	if _, err := jam.ParseUUID[jam.RoomID](string(rec.Room)); err == nil {
		ev.Room = rec.Room
	}
	if _, err := jam.ParseMessageID(string(rec.MessageID)); err == nil {
		ev.MessageID = rec.MessageID
	}
	e.emit(ev)
}

// readRow opens and decodes a queue row. A row that does not open or
// decode is quarantined and ok is false; err is set only if the
// quarantine itself failed.
func (e *Engine) readRow(ctx context.Context, r store.QueueRow) (m protocol.Message, ok bool, err error) {
	raw, oerr := e.cfg.Sealer.Open(r.Sealed, aad(r.WorkspaceID, r.Peer, r.MessageID))
	if oerr != nil {
		oerr = fmt.Errorf("open: %w", oerr)
	} else if derr := json.Unmarshal(raw, &m); derr != nil {
		oerr = fmt.Errorf("decode: %w", derr)
	}
	if oerr == nil {
		return m, true, nil
	}
	return protocol.Message{}, false, e.quarantineRow(ctx, r, oerr)
}
