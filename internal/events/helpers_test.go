package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// faultStore is the real SQLite store with a hook in front of EventAppend,
// which can hold a commit or fail it.
type faultStore struct {
	*sqlite.Store
	// BeforeAppendFunc, if set, runs before each EventAppend with the
	// call's number (from 1); an error fails the call without writing.
	BeforeAppendFunc func(ctx context.Context, call int) error

	mu    sync.Mutex
	calls int // guarded by mu
}

func (f *faultStore) EventAppend(ctx context.Context, recs []store.EventRecord) ([]int64, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if f.BeforeAppendFunc != nil {
		if err := f.BeforeAppendFunc(ctx, n); err != nil {
			return nil, err
		}
	}
	return f.Store.EventAppend(ctx, recs)
}

// testBundle is a workspace in a fresh SQLite store, and a broker over it.
type testBundle struct {
	st *faultStore
	ws jam.WorkspaceID
	b  *events.Broker
}

// openStore opens a fresh store with one workspace, sealing event data as
// jamd's does; it closes when t ends.
func openStore(t testing.TB) (*faultStore, jam.WorkspaceID) {
	t.Helper()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	w, err := st.WorkspaceEnsure(context.Background(), store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "default", At: epoch})
	require.NoError(t, err)
	return &faultStore{Store: st}, w.ID
}

// setup starts a broker with cfg (its workspace filled in) over a fresh
// store; it stops when t ends, before the store closes.
func setup(t testing.TB, cfg events.Config) *testBundle {
	t.Helper()
	st, ws := openStore(t)
	return startBroker(t, st, ws, cfg)
}

func startBroker(t testing.TB, st *faultStore, ws jam.WorkspaceID, cfg events.Config) *testBundle {
	t.Helper()
	cfg.Workspace = ws
	b, err := events.New(cfg, st)
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, b.Stop(context.Background())) })
	return &testBundle{st: st, ws: ws, b: b}
}

// ev is event number i of a test: kind "test.n", data {"i":i}.
func ev(i int) events.Event {
	return events.Event{Kind: "test.n", At: epoch, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
}

// publish publishes events from..to (inclusive) in order.
func (tb *testBundle) publish(t testing.TB, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		require.NoError(t, tb.b.Publish(context.Background(), ev(i)))
	}
}

// next reads one event, failing the test after a generous bound (the
// bound only turns a hang into a failure; nothing waits on it).
func next(t testing.TB, s *events.Subscription) *events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := s.Next(ctx)
	require.NoError(t, err)
	return e
}

// index returns the "i" of a test event's data.
func index(t testing.TB, e *events.Event) int {
	t.Helper()
	var d struct{ I int }
	require.NoError(t, json.Unmarshal(e.Data, &d), "data of %s %d: %s", e.Kind, e.Seq, e.Data)
	return d.I
}

// subscribe subscribes and closes the subscription when t ends.
func (tb *testBundle) subscribe(t testing.TB, after int64) *events.Subscription {
	t.Helper()
	s, err := tb.b.Subscribe(after)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}
