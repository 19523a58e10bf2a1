package ingest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/bench/internal/pgdb"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/spool"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// spoolStore is what the jam targets need of a store dialect.
type spoolStore interface {
	store.Spool
	Close() error
}

// jamTarget is internal/spool over a fresh store (SQLite, or a fresh
// PostgreSQL database): the daemon's path from an agent socket to an
// acknowledged message. Undrained, a pushed entry's budget is returned
// and its row stays; drained, a consumer moves every entry to the queue
// as it comes, in batches, as the engine does, and returns the budget
// after the move.
type jamTarget struct {
	st      spoolStore
	sp      *spool.Spool
	count   *commitCounter
	box     *secret.Box
	ws      jam.WorkspaceID
	peer    jam.PeerKey
	rooms   []jam.RoomID
	cleanup func() error // drops the PostgreSQL database; nil for SQLite

	drain    chan store.QueueRow // nil: undrained
	drainErr error               // set by the consumer before it returns
	drained  atomic.Int64
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// drainBatch is the most entries the consumer moves in one transaction.
const drainBatch = 64

func openJam(ctx context.Context, dir string, drained bool) (*jamTarget, error) {
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db")})
	if err != nil {
		return nil, err
	}
	return newJamTarget(ctx, dir, st, nil, drained)
}

func openJamPostgres(ctx context.Context, dir, url string, drained bool) (*jamTarget, error) {
	if url == "" {
		return nil, fmt.Errorf("ingest: %w: the postgres targets need a server URL", jam.ErrInvalid)
	}
	dbURL, _, drop, err := pgdb.Create(ctx, url, "jambench_")
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: dbURL})
	if err != nil {
		return nil, errors.Join(err, drop())
	}
	return newJamTarget(ctx, dir, st, drop, drained)
}

func newJamTarget(ctx context.Context, dir string, st spoolStore, cleanup func() error, drained bool) (*jamTarget, error) {
	fail := func(err error) (*jamTarget, error) {
		err = errors.Join(err, st.Close())
		if cleanup != nil {
			err = errors.Join(err, cleanup())
		}
		return nil, err
	}
	box, err := secret.LoadOrCreate(filepath.Join(dir, "jam.key"))
	if err != nil {
		return fail(err)
	}
	count := &commitCounter{Spool: st}
	sp, err := spool.New(spool.Config{}, count)
	if err == nil {
		err = sp.Start(ctx)
	}
	if err != nil {
		return fail(err)
	}
	t := &jamTarget{st: st, sp: sp, count: count, box: box, cleanup: cleanup,
		ws: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), peer: jam.PeerKey{Profile: "bench", Scope: "agent"}}
	for range 8 {
		t.rooms = append(t.rooms, newUUID[jam.RoomID]())
	}
	if drained {
		// Deep enough that producers never wait on the channel: the
		// spool's own bound (its budget, returned after the move) is
		// what holds them back when the consumer falls behind.
		t.drain = make(chan store.QueueRow, 1<<16)
		t.wg.Go(t.consume)
	}
	return t, nil
}

func (t *jamTarget) Push(ctx context.Context, producer int, payload []byte) (time.Duration, error) {
	msg := newUUID[jam.PlatformMessageID]()
	e := store.SpoolEntry{WorkspaceID: t.ws, Peer: t.peer, Room: t.rooms[producer%len(t.rooms)], MessageID: msg,
		Sealed: t.box.Seal(payload, []byte(msg)), ReceivedAt: time.Now()}
	t0 := time.Now()
	seq, appended, err := t.sp.Push(ctx, e)
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if !appended {
		return d, fmt.Errorf("message %s reported as a duplicate", msg)
	}
	if t.drain == nil {
		// Undrained: only the entry's budget is returned (see the
		// package doc).
		t.sp.Release(t.ws, t.peer, len(e.Sealed))
		return d, nil
	}
	row := store.QueueRow{Seq: seq, WorkspaceID: e.WorkspaceID, Peer: e.Peer, Room: e.Room, MessageID: e.MessageID,
		Sealed: e.Sealed, State: store.QueueQueued, ReceivedAt: e.ReceivedAt}
	select {
	case t.drain <- row:
	case <-ctx.Done():
		return d, ctx.Err()
	}
	return d, nil
}

// consume moves pushed entries to the queue's unrouted bucket, up to
// drainBatch a transaction, until the drain channel closes.
func (t *jamTarget) consume() {
	ctx := context.Background()
	batch := make([]store.QueueRow, 0, drainBatch)
	for row := range t.drain {
		batch = append(batch[:0], row)
	fill:
		for len(batch) < drainBatch {
			select {
			case r, ok := <-t.drain:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		if t.drainErr != nil {
			continue // keep reading so no producer blocks; report at Close
		}
		moved, err := t.st.SpoolMoveBatch(ctx, batch)
		if err != nil {
			t.drainErr = fmt.Errorf("drain: %w", err)
			continue
		}
		for i, m := range moved {
			if m.Outcome == store.MoveMissing {
				t.drainErr = fmt.Errorf("drain: spool entry %d is missing", batch[i].Seq)
			}
			t.sp.Release(t.ws, t.peer, len(batch[i].Sealed))
		}
		t.drained.Add(int64(len(moved)))
	}
}

func (t *jamTarget) Extra() map[string]float64 {
	n := t.count.commits.Load()
	if n == 0 {
		return nil
	}
	x := map[string]float64{
		"msgs_per_commit": float64(t.count.entries.Load()) / float64(n),
		"commit_ms":       float64(t.count.busy.Load()) / float64(n) / 1e6,
	}
	if t.drain != nil {
		x["drained"] = float64(t.drained.Load())
	}
	return x
}

func (t *jamTarget) Close() error {
	err := errors.Join(t.sp.Stop(context.Background()), t.stopDrain())
	err = errors.Join(err, t.st.Close())
	if t.cleanup != nil {
		err = errors.Join(err, t.cleanup())
	}
	return err
}

// stopDrain waits for the consumer to move every entry pushed so far and
// returns its error. It is called once pushes have ended.
func (t *jamTarget) stopDrain() error {
	if t.drain == nil {
		return nil
	}
	t.stopOnce.Do(func() {
		close(t.drain)
		t.wg.Wait()
	})
	return t.drainErr
}

// commitCounter counts the store's commits, the entries they carried and
// the time spent in them.
type commitCounter struct {
	store.Spool
	commits, entries, busy atomic.Int64
}

func (c *commitCounter) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	t0 := time.Now()
	defer func() {
		c.commits.Add(1)
		c.entries.Add(int64(len(entries)))
		c.busy.Add(int64(time.Since(t0)))
	}()
	return c.Spool.SpoolAppend(ctx, entries)
}

// newUUID returns a random version 4 UUID, as Band's message ids are.
func newUUID[T jam.UUID]() T { return T(uuidString()) }

func uuidString() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
