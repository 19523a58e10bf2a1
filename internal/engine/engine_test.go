package engine

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/spool"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAgent is a hand-written Band agent API: each method has a Func
// field; calls are recorded.
type fakeAgent struct {
	mu          sync.Mutex
	calls       []string
	ProcessingF func(room, msg string) error
	FailedF     func(room, msg string) error
	SendF       func(room, content string) (string, error)
	Roster      []protocol.Participant
	Sent        []protocol.Message
	// Activity, when set, receives every activity report.
	Activity chan bool
}

func (f *fakeAgent) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeAgent) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeAgent) AgentProcessing(_ context.Context, room, msg string) (protocol.MessageStatus, error) {
	f.record("processing " + msg)
	if f.ProcessingF != nil {
		if err := f.ProcessingF(room, msg); err != nil {
			return protocol.MessageStatus{}, err
		}
	}
	return protocol.MessageStatus{ID: msg, Status: "processing"}, nil
}

func (f *fakeAgent) AgentProcessed(_ context.Context, _, msg string) (protocol.MessageStatus, error) {
	f.record("processed " + msg)
	return protocol.MessageStatus{ID: msg, Status: "processed"}, nil
}

func (f *fakeAgent) AgentFailed(_ context.Context, room, msg, reason string) (protocol.MessageStatus, error) {
	f.record("failed " + msg + " " + reason)
	if f.FailedF != nil {
		if err := f.FailedF(room, msg); err != nil {
			return protocol.MessageStatus{}, err
		}
	}
	return protocol.MessageStatus{ID: msg, Status: "failed"}, nil
}

func (f *fakeAgent) AgentSend(_ context.Context, room, content string, _ []protocol.Mention) (protocol.MessageSent, error) {
	f.record("send " + content)
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", len(f.Calls()))
	if f.SendF != nil {
		return protocol.MessageSent{ID: id}, func() error { _, err := f.SendF(room, content); return err }()
	}
	return protocol.MessageSent{ID: id, Success: true}, nil
}

func (f *fakeAgent) AgentParticipants(context.Context, string) ([]protocol.Participant, error) {
	return f.Roster, nil
}
func (f *fakeAgent) AgentPeers(context.Context) ([]protocol.Peer, error) { return nil, nil }
func (f *fakeAgent) AgentEvent(context.Context, string, protocol.EventFields) (protocol.EventCreated, error) {
	return protocol.EventCreated{ID: "event-1", Success: true}, nil
}
func (f *fakeAgent) AgentActivity(_ context.Context, _ string, working bool) error {
	f.record(fmt.Sprintf("activity %v", working))
	if f.Activity != nil {
		f.Activity <- working
	}
	return nil
}
func (f *fakeAgent) AgentSent(context.Context, string, time.Time) ([]protocol.Message, error) {
	return f.Sent, nil
}

// deliveries records what the engine delivered.
type deliveries struct{ ch chan Delivery }

func (d deliveries) Deliver(_ context.Context, del Delivery) error { d.ch <- del; return nil }

type testBundle struct {
	eng    *Engine
	st     *sqlite.Store
	sp     *spool.Spool
	agent  *fakeAgent
	del    deliveries
	events chan Event
	ws     jam.WorkspaceID
	peer   jam.PeerKey
	room   jam.RoomID
	m      *jam.Minter
}

const (
	agentID = "0190a1b2-0000-4000-8000-00000000000a"
	ownerID = "0190a1b2-0000-4000-8000-00000000000b"
	roomID  = "0190a1b2-0000-4000-8000-0000000000aa"
)

func setup(t *testing.T, bind bool) *testBundle {
	t.Helper()
	return setupWith(t, bind, nil)
}

// setupWith is setup with the engine's sealer wrapped by wrap, if set.
func setupWith(t *testing.T, bind bool, wrap func(Sealer) Sealer) *testBundle {
	t.Helper()
	return setupFull(t, bind, wrap, nil)
}

// setupFull is setupWith with the engine's spool wrapped by wrapSpool, if
// set.
func setupFull(t *testing.T, bind bool, wrap func(Sealer) Sealer, wrapSpool func(Spool) Spool) *testBundle {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	box, err := secret.LoadOrCreate(filepath.Join(dir, "key"))
	require.NoError(t, err)
	m := jam.NewMinter(nil, nil)
	ws, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "default", At: time.Now()})
	require.NoError(t, err)
	b := &testBundle{st: st, ws: ws.ID, peer: jam.PeerKey{Profile: "local", Scope: "coder"}, room: roomID, m: m,
		agent: &fakeAgent{Roster: []protocol.Participant{{ID: agentID, Type: "Agent"}, {ID: ownerID, Type: "User"}}},
		del:   deliveries{ch: make(chan Delivery, 16)}, events: make(chan Event, 4096)}
	acct := store.Account{ID: jam.New[jam.AccountID](m), WorkspaceID: ws.ID, Profile: "local", BandURL: "http://hub", UserID: ownerID, Handle: "owner", KeySealed: []byte("k"), CreatedAt: time.Now()}
	_, err = st.AccountPut(ctx, acct)
	require.NoError(t, err)
	_, err = st.PeerPut(ctx, store.Peer{WorkspaceID: ws.ID, Key: b.peer, AccountID: acct.ID, AgentID: agentID, Handle: "owner/coder", Name: "coder", KeySealed: []byte("k"), CreatedAt: time.Now()})
	require.NoError(t, err)
	if bind {
		_, err = st.BindingPut(ctx, store.Binding{ID: jam.New[jam.BindingID](m), WorkspaceID: ws.ID, Peer: b.peer, Room: b.room, Alias: "a", SessionID: jam.New[jam.SessionID](m), Mode: jam.RuntimeAttached, CreatedAt: time.Now()})
		require.NoError(t, err)
	}
	sp, err := spool.New(spool.Config{Logger: slog.New(slog.DiscardHandler)}, st)
	require.NoError(t, err)
	require.NoError(t, sp.Start(ctx))
	t.Cleanup(func() { sp.Stop(context.Background()) })
	b.sp = sp
	var sealer Sealer = box
	if wrap != nil {
		sealer = wrap(box)
	}
	var engSpool Spool = sp
	if wrapSpool != nil {
		engSpool = wrapSpool(sp)
	}
	eng, err := New(Config{Store: st, Spool: engSpool, Sealer: sealer, Deliverer: b.del, Logger: slog.New(slog.DiscardHandler), RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond,
		Events: func(ev Event) { b.events <- ev }})
	require.NoError(t, err)
	require.NoError(t, eng.AddPeer(ctx, PeerRuntime{WorkspaceID: ws.ID, Key: b.peer, AgentID: agentID, Handle: "owner/coder", OwnerUserID: ownerID, Agent: b.agent}))
	require.NoError(t, eng.Start(ctx))
	t.Cleanup(func() { eng.Stop(context.Background()) })
	b.eng = eng
	return b
}

func (b *testBundle) inbound(t *testing.T, n int, content string) string {
	t.Helper()
	id := fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", n)
	require.NoError(t, b.eng.Inbound(t.Context(), b.ws, b.peer, protocol.Message{ID: id, ChatRoomID: string(b.room), Content: content, SenderID: ownerID, SenderType: "User", MessageType: "text"}))
	return id
}

// waitEvent waits for the event of kind about msg.
func (b *testBundle) waitEvent(t *testing.T, kind EventKind, msg string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-b.events:
			if ev.Kind == kind && string(ev.MessageID) == msg {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event for %s", kind, msg)
		}
	}
}

func (b *testBundle) delivered(t *testing.T) Delivery {
	t.Helper()
	select {
	case d := <-b.del.ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered")
		return Delivery{}
	}
}

func TestEngine_deliversInOrderAndDedupes(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	first := b.inbound(t, 1, "@[["+agentID+"]] one")
	second := b.inbound(t, 2, "@[["+agentID+"]] two @[["+ownerID+"]]")
	b.inbound(t, 1, "@[["+agentID+"]] one") // a duplicate is not delivered twice
	d1, d2 := b.delivered(t), b.delivered(t)
	require.Equal(t, first, string(d1.Row.MessageID))
	require.Equal(t, second, string(d2.Row.MessageID))
	require.True(t, d2.Row.AddressedToUser)
	require.False(t, d1.Row.AddressedToUser)

	// The row reaches the inbox when it is marked delivered, which the
	// engine reports after handing it over.
	b.waitEvent(t, EventDelivered, second)
	pg, err := b.eng.Inbox(t.Context(), InboxParams{WorkspaceID: b.ws})
	items := pg.Items
	require.NoError(t, err)
	require.Len(t, items, 2, "delivered rows reach the inbox")
	require.Equal(t, "@owner/coder one", items[0].Content, "the agent's own token renders as its handle")
	select {
	case d := <-b.del.ch:
		t.Fatalf("duplicate delivered: %v", d.Row.MessageID)
	default:
	}
	// Delivery never settles.
	for _, c := range b.agent.Calls() {
		require.False(t, strings.HasPrefix(c, "processed"), "delivery settled: %v", b.agent.Calls())
	}
}

func TestEngine_systemMarkerIsSettledNotQueued(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	marker := b.inbound(t, 1, "[system:joined]")
	after := b.inbound(t, 2, "@[["+agentID+"]] real")
	require.Equal(t, after, string(b.delivered(t).Row.MessageID))
	require.Contains(t, b.agent.Calls(), "processed "+marker)
}

func TestEngine_unroutedUntilBound(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	id := b.inbound(t, 1, "hello")
	b.waitEvent(t, EventQueuedUnrouted, id)
	pg, err := b.eng.Inbox(t.Context(), InboxParams{WorkspaceID: b.ws, Unrouted: true})
	items := pg.Items
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.NotContains(t, b.agent.Calls(), "processing "+id, "an unrouted message is not claimed")

	bind := store.Binding{ID: jam.New[jam.BindingID](b.m), WorkspaceID: b.ws, Peer: b.peer, Room: b.room, Alias: "late", SessionID: jam.New[jam.SessionID](b.m), Mode: jam.RuntimeAttached, CreatedAt: time.Now()}
	moved, err := b.st.BindingPut(t.Context(), bind)
	require.NoError(t, err)
	require.Equal(t, 1, moved)
	require.NoError(t, b.eng.Redeliver(t.Context(), b.ws, b.peer, bind.ID))
	require.Equal(t, id, string(b.delivered(t).Row.MessageID))
}

func TestEngine_claimRetriesRetryableFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var mu sync.Mutex
	fails := 2
	b.agent.ProcessingF = func(string, string) error {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			return fmt.Errorf("injected 503: %w", jam.ErrUnavailable)
		}
		return nil
	}
	id := b.inbound(t, 1, "x")
	require.Equal(t, id, string(b.delivered(t).Row.MessageID))
}

func TestEngine_replyResumeDoesNotPostTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	id := b.inbound(t, 1, "task")
	b.delivered(t)
	msg := jam.PlatformMessageID(id)

	// The first attempt posts and then "crashes" before settling: the
	// agent's send succeeds on Band but the call reports failure.
	b.agent.SendF = func(room, content string) (string, error) {
		b.agent.Sent = append(b.agent.Sent, protocol.Message{ID: "0190a1b2-0000-4000-8000-999999999999", Content: "@[[" + ownerID + "]] " + content, SenderID: agentID})
		return "", fmt.Errorf("connection reset: %w", jam.ErrUnavailable)
	}
	_, err := b.eng.Reply(t.Context(), ReplyParams{WorkspaceID: b.ws, Peer: b.peer, MessageID: msg, Text: "done"})
	require.Error(t, err)

	b.agent.SendF = nil
	res, err := b.eng.Reply(t.Context(), ReplyParams{WorkspaceID: b.ws, Peer: b.peer, MessageID: msg, Text: "done"})
	require.NoError(t, err)
	require.True(t, res.Resumed)
	sends := 0
	for _, c := range b.agent.Calls() {
		if strings.HasPrefix(c, "send ") {
			sends++
		}
	}
	require.Equal(t, 1, sends, "the resumed reply found its part on Band and did not post it again")
	_, err = b.st.QueueGet(t.Context(), b.ws, b.peer, msg)
	require.ErrorIs(t, err, jam.ErrNotFound, "settled")
}

func TestReplyMentions(t *testing.T) {
	t.Parallel()
	h := func(s string) *string { return &s }
	roster := []protocol.Participant{{ID: agentID, Handle: h("owner/coder")}, {ID: ownerID, Handle: h("owner")}, {ID: "0190a1b2-0000-4000-8000-00000000000c", Handle: h("owner/review")}}
	cases := []struct {
		name     string
		sender   jam.IdentityID
		explicit []string
		roster   []protocol.Participant
		want     []string
		wantErr  string
	}{
		{name: "sender", sender: ownerID, roster: roster, want: []string{ownerID}},
		{name: "explicit by handle", sender: ownerID, explicit: []string{"@owner/review"}, roster: roster, want: []string{"0190a1b2-0000-4000-8000-00000000000c"}},
		{name: "explicit gone falls back to sender", sender: ownerID, explicit: []string{"ghost"}, roster: roster, want: []string{ownerID}},
		{name: "sender left, sole other", sender: "0190a1b2-0000-4000-8000-0000000000ff", roster: roster[:2], want: []string{ownerID}},
		{name: "sender left, several others", sender: "0190a1b2-0000-4000-8000-0000000000ff", roster: roster, wantErr: "name a recipient"},
		{name: "never self", sender: agentID, explicit: []string{"owner/coder"}, roster: roster[:2], want: []string{ownerID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := replyMentions(agentID, tc.sender, tc.explicit, tc.roster)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrNoRecipient)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var ids []string
			for _, m := range got {
				ids = append(ids, m.ID)
			}
			require.Equal(t, tc.want, ids)
		})
	}
}

func TestSplitParts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"short"}, splitParts("short", 10))
	parts := splitParts(strings.Repeat("é", 10), 7) // 2-byte runes never split
	require.Equal(t, strings.Repeat("é", 10), strings.Join(parts, ""))
	for _, p := range parts {
		require.LessOrEqual(t, len(p), 7)
		require.True(t, strings.HasPrefix(p, "é"))
	}
	lines := splitParts("aaaa\nbbbb\ncccc", 10)
	require.Equal(t, []string{"aaaa\nbbbb\n", "cccc"}, lines, "prefers line breaks")
}

func FuzzSplitParts(f *testing.F) {
	f.Add("hello\nworld", 5)
	f.Add(strings.Repeat("é", 20), 3)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 4 || limit > 1<<16 {
			return
		}
		parts := splitParts(s, limit)
		if strings.Join(parts, "") != s {
			t.Fatalf("parts do not reassemble %q", s)
		}
		for _, p := range parts {
			if len(p) > limit {
				t.Fatalf("part of %d bytes over %d", len(p), limit)
			}
		}
	})
}

// TestEngine_startDoesNotWaitForTheBacklog: Start returns while the
// messages queued before it are still being redelivered (their claims
// hang here), and a message arriving meanwhile is delivered only after
// them.
func TestEngine_startDoesNotWaitForTheBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	first, second := b.inbound(t, 1, "one"), b.inbound(t, 2, "two")
	require.Equal(t, jam.PlatformMessageID(first), b.delivered(t).Row.MessageID)
	require.Equal(t, jam.PlatformMessageID(second), b.delivered(t).Row.MessageID)
	b.waitEvent(t, EventDelivered, second) // recorded delivered
	require.NoError(t, b.eng.Stop(ctx))

	// A restart: claims hang until the gate opens.
	gate := make(chan struct{})
	agent := &fakeAgent{Roster: b.agent.Roster, ProcessingF: func(string, string) error { <-gate; return nil }}
	del := deliveries{ch: make(chan Delivery, 16)}
	eng, err := New(Config{Store: b.st, Spool: b.sp, Sealer: b.eng.cfg.Sealer, Deliverer: del, Logger: slog.New(slog.DiscardHandler), RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, eng.AddPeer(ctx, PeerRuntime{WorkspaceID: b.ws, Key: b.peer, AgentID: agentID, Handle: "owner/coder", OwnerUserID: ownerID, Agent: agent}))
	require.NoError(t, eng.Start(ctx), "Start returns with the backlog's claims hanging")
	defer eng.Stop(context.Background())
	released := false
	defer func() {
		if !released {
			close(gate) // a failed check must not leave Stop waiting on a claim
		}
	}()
	select {
	case <-eng.Recovered():
		t.Fatal("recovered while claims hang")
	default:
	}
	third := "0190a1b2-0000-4000-8000-000000000003"
	require.NoError(t, eng.Inbound(ctx, b.ws, b.peer, protocol.Message{ID: third, ChatRoomID: string(b.room), Content: "three", SenderID: ownerID, SenderType: "User", MessageType: "text"}))
	close(gate)
	released = true
	var got []jam.PlatformMessageID
	for range 3 {
		select {
		case d := <-del.ch:
			got = append(got, d.Row.MessageID)
		case <-time.After(10 * time.Second):
			t.Fatalf("delivered only %v", got)
		}
	}
	require.Equal(t, []jam.PlatformMessageID{jam.PlatformMessageID(first), jam.PlatformMessageID(second), jam.PlatformMessageID(third)}, got,
		"the backlog first, then the new message")
	<-eng.Recovered()
}

// TestEngine_redeliveryKeepsRoomOrderThroughRetries: after a restart, a
// room's first queued message whose claim fails once (retryable) is still
// delivered before the room's next one.
func TestEngine_redeliveryKeepsRoomOrderThroughRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	first, second := b.inbound(t, 1, "one"), b.inbound(t, 2, "two")
	b.delivered(t)
	b.delivered(t)
	require.NoError(t, b.eng.Stop(ctx))

	var failed atomic.Bool
	agent := &fakeAgent{Roster: b.agent.Roster, ProcessingF: func(_, msg string) error {
		if msg == first && failed.CompareAndSwap(false, true) {
			return fmt.Errorf("%w: 503 from the platform", jam.ErrUnavailable)
		}
		return nil
	}}
	del := deliveries{ch: make(chan Delivery, 16)}
	eng, err := New(Config{Store: b.st, Spool: b.sp, Sealer: b.eng.cfg.Sealer, Deliverer: del, Logger: slog.New(slog.DiscardHandler), RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, eng.AddPeer(ctx, PeerRuntime{WorkspaceID: b.ws, Key: b.peer, AgentID: agentID, Handle: "owner/coder", OwnerUserID: ownerID, Agent: agent}))
	require.NoError(t, eng.Start(ctx))
	defer eng.Stop(context.Background())
	var got []jam.PlatformMessageID
	for range 2 {
		select {
		case d := <-del.ch:
			got = append(got, d.Row.MessageID)
		case <-time.After(10 * time.Second):
			t.Fatalf("delivered only %v", got)
		}
	}
	require.True(t, failed.Load())
	require.Equal(t, []jam.PlatformMessageID{jam.PlatformMessageID(first), jam.PlatformMessageID(second)}, got)
}

// blockingDeliverer holds every delivery until released.
type blockingDeliverer struct {
	entered chan jam.PlatformMessageID
	release chan struct{}
}

func (d blockingDeliverer) Deliver(_ context.Context, del Delivery) error {
	d.entered <- del.Row.MessageID
	<-d.release
	return nil
}

// TestEngine_redeliveredRowStaysInTheInbox: while a restart renews the
// claim of a message delivered before, the message stays in the inbox,
// with the room's later ones, in order (marking it claimed again would
// hide it while the later ones still show).
func TestEngine_redeliveredRowStaysInTheInbox(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	first, second := b.inbound(t, 1, "one"), b.inbound(t, 2, "two")
	b.delivered(t)
	b.delivered(t)
	b.waitEvent(t, EventDelivered, second)
	require.NoError(t, b.eng.Stop(ctx))

	del := blockingDeliverer{entered: make(chan jam.PlatformMessageID, 4), release: make(chan struct{})}
	eng, err := New(Config{Store: b.st, Spool: b.sp, Sealer: b.eng.cfg.Sealer, Deliverer: del, Logger: slog.New(slog.DiscardHandler), RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, eng.AddPeer(ctx, PeerRuntime{WorkspaceID: b.ws, Key: b.peer, AgentID: agentID, Handle: "owner/coder", OwnerUserID: ownerID, Agent: &fakeAgent{Roster: b.agent.Roster}}))
	require.NoError(t, eng.Start(ctx))
	defer eng.Stop(context.Background())
	defer close(del.release)
	// The first message is claimed again and its delivery is under way.
	require.Equal(t, jam.PlatformMessageID(first), <-del.entered)
	pg, err := eng.Inbox(ctx, InboxParams{WorkspaceID: b.ws, Peer: b.peer})
	items := pg.Items
	require.NoError(t, err)
	var ids []jam.PlatformMessageID
	for _, it := range items {
		ids = append(ids, it.MessageID)
	}
	require.Equal(t, []jam.PlatformMessageID{jam.PlatformMessageID(first), jam.PlatformMessageID(second)}, ids)
}

// TestEngine_inboxPages reads an inbox in pages: the oldest Limit
// messages, and More while others wait behind them.
func TestEngine_inboxPages(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	var all []jam.PlatformMessageID
	for i := 1; i <= 5; i++ {
		all = append(all, jam.PlatformMessageID(b.inbound(t, i, fmt.Sprintf("m%d", i))))
	}
	for range all {
		b.delivered(t)
	}
	b.waitEvent(t, EventDelivered, string(all[4]))
	page := func(limit int) ([]jam.PlatformMessageID, bool) {
		t.Helper()
		pg, err := b.eng.Inbox(ctx, InboxParams{WorkspaceID: b.ws, Peer: b.peer, Limit: limit})
		require.NoError(t, err)
		var ids []jam.PlatformMessageID
		for _, it := range pg.Items {
			ids = append(ids, it.MessageID)
		}
		return ids, pg.More
	}
	ids, more := page(2)
	require.Equal(t, all[:2], ids)
	require.True(t, more)
	ids, more = page(5)
	require.Equal(t, all, ids)
	require.False(t, more, "exactly the page: nothing waits behind it")
	ids, more = page(0)
	require.Equal(t, all, ids, "the default page holds them all")
	require.False(t, more)
	// A cursor walks the rest.
	var walked []jam.PlatformMessageID
	var after int64
	for {
		pg, err := b.eng.Inbox(ctx, InboxParams{WorkspaceID: b.ws, Peer: b.peer, Limit: 2, After: after})
		require.NoError(t, err)
		for _, it := range pg.Items {
			walked = append(walked, it.MessageID)
		}
		if !pg.More {
			break
		}
		after = pg.Next
	}
	require.Equal(t, all, walked)
	pg, err := b.eng.Wait(ctx, InboxParams{WorkspaceID: b.ws, Peer: b.peer, Limit: 4})
	require.NoError(t, err)
	require.Len(t, pg.Items, 4)
	require.True(t, pg.More)
	for _, bad := range []int{-1, MaxInboxLimit + 1} {
		_, err := b.eng.Inbox(ctx, InboxParams{WorkspaceID: b.ws, Peer: b.peer, Limit: bad})
		require.ErrorIs(t, err, jam.ErrInvalid, "limit %d", bad)
	}
}

// TestEngine_liveLaneKeepsRoomOrderThroughClaimRetries: a claim Band
// refuses for a while is retried in place, so the room's next message
// does not reach the agent first (it did when retries ran in a side pool
// and the lane moved on; the SIGKILL loop with hub kills caught it).
func TestEngine_liveLaneKeepsRoomOrderThroughClaimRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	first := fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", 1)
	var refusals atomic.Int32
	b.agent.ProcessingF = func(_, msg string) error {
		if msg == first && refusals.Add(1) <= 2 {
			return fmt.Errorf("%w: 503 from the platform", jam.ErrUnavailable)
		}
		return nil
	}
	require.Equal(t, first, b.inbound(t, 1, "one"))
	second := b.inbound(t, 2, "two")
	got := []jam.PlatformMessageID{b.delivered(t).Row.MessageID, b.delivered(t).Row.MessageID}
	require.Equal(t, int32(3), refusals.Load(), "two refusals, then the claim that went through")
	require.Equal(t, []jam.PlatformMessageID{jam.PlatformMessageID(first), jam.PlatformMessageID(second)}, got)
}
