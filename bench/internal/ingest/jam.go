package ingest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/spool"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// jamTarget is internal/spool over a fresh SQLite store: the daemon's
// path from an agent socket to an acknowledged message.
type jamTarget struct {
	st    *sqlite.Store
	sp    *spool.Spool
	count *commitCounter
	box   *secret.Box
	ws    jam.WorkspaceID
	peer  jam.PeerKey
	rooms []jam.RoomID
}

func openJam(ctx context.Context, dir string) (*jamTarget, error) {
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db")})
	if err != nil {
		return nil, err
	}
	box, err := secret.LoadOrCreate(filepath.Join(dir, "jam.key"))
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	count := &commitCounter{Store: st}
	sp, err := spool.New(spool.Config{}, count)
	if err == nil {
		err = sp.Start(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	t := &jamTarget{st: st, sp: sp, count: count, box: box,
		ws: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), peer: jam.PeerKey{Profile: "bench", Scope: "agent"}}
	for range 8 {
		t.rooms = append(t.rooms, newUUID[jam.RoomID]())
	}
	return t, nil
}

func (t *jamTarget) Push(ctx context.Context, producer int, payload []byte) (time.Duration, error) {
	msg := newUUID[jam.PlatformMessageID]()
	e := store.SpoolEntry{WorkspaceID: t.ws, Peer: t.peer, Room: t.rooms[producer%len(t.rooms)], MessageID: msg,
		Sealed: t.box.Seal(payload, []byte(msg)), ReceivedAt: time.Now()}
	t0 := time.Now()
	_, appended, err := t.sp.Push(ctx, e)
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if !appended {
		return d, fmt.Errorf("message %s reported as a duplicate", msg)
	}
	// The engine would move the entry to the queue; here only its budget
	// is returned (see the package doc).
	t.sp.Release(t.ws, t.peer, len(e.Sealed))
	return d, nil
}

func (t *jamTarget) Extra() map[string]float64 {
	n := t.count.commits.Load()
	if n == 0 {
		return nil
	}
	return map[string]float64{
		"msgs_per_commit": float64(t.count.entries.Load()) / float64(n),
		"commit_ms":       float64(t.count.busy.Load()) / float64(n) / 1e6,
	}
}

func (t *jamTarget) Close() error {
	return errors.Join(t.sp.Stop(context.Background()), t.st.Close())
}

// commitCounter counts the store's commits, the entries they carried and
// the time spent in them.
type commitCounter struct {
	*sqlite.Store
	commits, entries, busy atomic.Int64
}

func (c *commitCounter) SpoolAppend(ctx context.Context, entries []store.SpoolEntry) (store.SpoolAppendResult, error) {
	t0 := time.Now()
	defer func() {
		c.commits.Add(1)
		c.entries.Add(int64(len(entries)))
		c.busy.Add(int64(time.Since(t0)))
	}()
	return c.Store.SpoolAppend(ctx, entries)
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
