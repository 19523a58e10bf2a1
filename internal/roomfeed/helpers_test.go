package roomfeed

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

var epoch = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

const (
	userID  = "0190a1b2-0000-4000-8000-0000000000b0"
	agentID = "0190a1b2-0000-4000-8000-0000000000a0"
	roomA   = jam.RoomID("0190a1b2-0000-4000-8000-00000000aa01")
	roomB   = jam.RoomID("0190a1b2-0000-4000-8000-00000000aa02")
)

// msgID returns the n-th test message id.
func msgID(n int) string { return fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", n) }

// text builds a text message from the agent, n seconds after epoch.
func text(n int, content string) protocol.Message {
	at := protocol.FormatTime(epoch.Add(time.Duration(n) * time.Second))
	return protocol.Message{ID: msgID(n), Content: content, MessageType: protocol.MessageText, SenderID: agentID, SenderType: protocol.TypeAgent,
		SenderName: "coder", InsertedAt: at, UpdatedAt: at}
}

// withDelivery returns m with one agent's delivery status.
func withDelivery(m protocol.Message, status string) protocol.Message {
	m.Metadata.DeliveryStatus = map[string]protocol.DeliveryRecord{agentID: {Status: status, CurrentAttempt: 1}}
	m.Metadata.Extra = nil
	return m
}

// fakeClock is a manual Clock: timers fire, in the caller's goroutine,
// only when Advance passes them.
type fakeClock struct {
	// scheduled receives a value each time a timer is set (when it has
	// room).
	scheduled chan struct{}

	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	f    func()
	done bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: epoch.Add(time.Hour), scheduled: make(chan struct{}, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	select {
	case c.scheduled <- struct{}{}:
	default:
	}
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// pending counts the timers not yet fired or stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// Advance moves the clock and runs the timers that came due, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// gatedStore is the real SQLite store with a hook in front of
// RoomCacheApply: a closed-over gate can hold writes, and every finished
// apply is reported.
type gatedStore struct {
	*sqlite.Store
	// BeforeApplyFunc, if set, runs before each apply.
	BeforeApplyFunc func(p store.RoomCacheApplyParams)
	applied         chan applyResult
	calls           atomic.Int64
}

type applyResult struct {
	p   store.RoomCacheApplyParams
	err error
}

func (g *gatedStore) RoomCacheApply(ctx context.Context, p store.RoomCacheApplyParams) error {
	g.calls.Add(1)
	if g.BeforeApplyFunc != nil {
		g.BeforeApplyFunc(p)
	}
	err := g.Store.RoomCacheApply(ctx, p)
	g.applied <- applyResult{p: p, err: err}
	return err
}

// fakeHuman is a hand-written Human API.
type fakeHuman struct {
	HistoryFunc func(ctx context.Context, room string, limit int) ([]protocol.Message, error)
	Roster      []protocol.Participant
	mu          sync.Mutex
	posted      []protocol.MessageRequest // guarded by mu
	historyN    atomic.Int64
}

func (h *fakeHuman) History(ctx context.Context, room string, limit int) ([]protocol.Message, error) {
	h.historyN.Add(1)
	if h.HistoryFunc == nil {
		return nil, nil
	}
	return h.HistoryFunc(ctx, room, limit)
}

func (h *fakeHuman) Participants(context.Context, string) ([]protocol.Participant, error) {
	return h.Roster, nil
}

func (h *fakeHuman) Post(_ context.Context, _ string, content string, mentions []protocol.Mention) (protocol.MessageSent, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.posted = append(h.posted, protocol.MessageRequest{Message: protocol.MessageFields{Content: content, Mentions: mentions}})
	return protocol.MessageSent{ID: msgID(9000 + len(h.posted)), Success: true}, nil
}

// testBundle is a feed over a real SQLite store in a temporary directory.
type testBundle struct {
	dir   string
	st    *gatedStore
	box   *secret.Box
	clock *fakeClock
	human *fakeHuman
	ws    jam.WorkspaceID
	acct  jam.AccountID
	pubs  chan Mutation
	feed  *Feed
}

func setup(t *testing.T, mutate func(c *Config)) *testBundle {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	box, err := secret.LoadOrCreate(filepath.Join(dir, "key"))
	require.NoError(t, err)
	m := jam.NewMinter(nil, nil)
	ws, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "default", At: epoch})
	require.NoError(t, err)
	acct, err := st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](m), WorkspaceID: ws.ID, Profile: "local", BandURL: "http://hub",
		UserID: userID, Handle: "owner", KeySealed: []byte("k"), CreatedAt: epoch})
	require.NoError(t, err)
	b := &testBundle{dir: dir, st: &gatedStore{Store: st, applied: make(chan applyResult, 10000)}, box: box, clock: newFakeClock(),
		human: &fakeHuman{}, ws: ws.ID, acct: acct.ID, pubs: make(chan Mutation, 10000)}
	b.feed = b.start(t, mutate)
	return b
}

// start starts a feed over the bundle's store; it is stopped at cleanup.
func (b *testBundle) start(t *testing.T, mutate func(c *Config)) *Feed {
	t.Helper()
	cfg := Config{WorkspaceID: b.ws, AccountID: b.acct, Profile: "local", UserID: userID, Store: b.st, Sealer: b.box, Human: b.human,
		Logger: slog.New(slog.DiscardHandler), Clock: b.clock, Publish: func(m Mutation) { b.pubs <- m }}
	if mutate != nil {
		mutate(&cfg)
	}
	f, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, f.Stop(context.Background())) })
	return f
}

// nextPub returns the next published mutation.
func (b *testBundle) nextPub(t *testing.T) Mutation {
	t.Helper()
	select {
	case m := <-b.pubs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no mutation published")
		return Mutation{}
	}
}

// noPub checks that nothing is waiting to be published.
func (b *testBundle) noPub(t *testing.T) {
	t.Helper()
	select {
	case m := <-b.pubs:
		t.Fatalf("unexpected mutation %+v", m)
	default:
	}
}

// waitStored waits until the store's watermark of room reaches seq.
func (b *testBundle) waitStored(t *testing.T, room jam.RoomID, seq int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		states, err := b.st.RoomCacheStates(t.Context(), b.ws, b.acct)
		require.NoError(t, err)
		for _, s := range states {
			if s.Room == room && s.Seq >= seq {
				return
			}
		}
		select {
		case <-b.st.applied:
		case <-deadline:
			t.Fatalf("room %s never stored sequence %d", room, seq)
		}
	}
}

// stored returns the room's stored items, opened, newest first.
func (b *testBundle) stored(t *testing.T, room jam.RoomID) []Row {
	t.Helper()
	items, err := b.st.RoomCacheItems(t.Context(), b.ws, b.acct, room, 0)
	require.NoError(t, err)
	out := make([]Row, len(items))
	for i, it := range items {
		m, err := b.feed.openItem(room, it)
		require.NoError(t, err)
		out[i] = Row{Message: m, Seq: it.Seq, At: it.InsertedAt}
	}
	return out
}

func ids(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Message.ID
	}
	return out
}

func mentionOwner(n int) protocol.Message {
	return text(n, mention.Token(userID)+" please look")
}
