package events_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestBroker_liveSubscription(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{})
	tb.publish(t, 1, 3)
	// Wait until the three are handed out, so the reset's floor is known.
	first := tb.subscribe(t, 0)
	for range 3 {
		next(t, first)
	}

	s := tb.subscribe(t, events.Live)
	reset := next(t, s)
	require.Equal(t, events.KindReset, reset.Kind)
	require.Equal(t, int64(3), reset.Seq, "a reset's seq is the last event before the subscription")
	var data events.ResetData
	require.NoError(t, json.Unmarshal(reset.Data, &data))
	require.Equal(t, events.ReasonSubscribe, data.Reason)
	require.Empty(t, data.Snapshots)

	room := jam.RoomID("6F9619FF-8B86-4011-B42D-00C04FC964FF")
	require.NoError(t, tb.b.Publish(t.Context(), events.Event{
		Kind: "message.queued", Peer: jam.PeerKey{Profile: "p", Scope: "a"}, Room: room, Data: json.RawMessage(`{"binding":"b"}`),
	}))
	e := next(t, s)
	require.Equal(t, int64(4), e.Seq)
	require.Equal(t, "message.queued", e.Kind)
	require.Equal(t, jam.RoomID(strings.ToLower(string(room))), e.Room, "ids are canonical")
	require.False(t, e.At.IsZero(), "a zero time means now")
	require.Equal(t, time.UTC, e.At.Location())
	require.JSONEq(t, `{"binding":"b"}`, string(e.Data))
	require.Equal(t, int64(4), s.Last())
}

func TestBroker_resumeReplaysThenLive(t *testing.T) {
	t.Parallel()
	// A replay page smaller than the replay, so it takes several reads.
	tb := setup(t, events.Config{ReplayPage: 3})
	tb.publish(t, 1, 10)
	watch := tb.subscribe(t, 0)
	for i := 1; i <= 10; i++ {
		require.Equal(t, i, index(t, next(t, watch)))
	}

	s := tb.subscribe(t, 4)
	tb.publish(t, 11, 12)
	for i := 5; i <= 12; i++ {
		e := next(t, s)
		require.Equal(t, int64(i), e.Seq)
		require.Equal(t, i, index(t, e))
	}
	e, ok, err := s.TryNext(t.Context())
	require.NoError(t, err)
	require.False(t, ok, "nothing more: %+v", e)

	// Resuming at the end replays nothing and goes live.
	end := tb.subscribe(t, 12)
	tb.publish(t, 13, 13)
	require.Equal(t, int64(13), next(t, end).Seq)
}

func TestBroker_replayedEqualsLive(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{})
	live := tb.subscribe(t, 0)
	require.NoError(t, tb.b.Publish(t.Context(), events.Event{
		Kind: "agent.state", Peer: jam.PeerKey{Profile: "p", Scope: "a"}, MessageID: "6F9619FF-8B86-4011-B42D-00C04FC964FF",
		At: time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600)), Data: json.RawMessage(` {} `),
	}))
	got := next(t, live)
	replayed := next(t, tb.subscribe(t, 0))
	require.Equal(t, *got, *replayed, "an event looks the same live and replayed")
	require.Nil(t, got.Data, "empty data is left out")
}

// TestBroker_noticeMessageIDs: an event about a local notice (a
// delegation's briefing or news) names it by its notice id, live and
// replayed; a notice id that is not one is refused.
func TestBroker_noticeMessageIDs(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{})
	live := tb.subscribe(t, 0)
	notice := jam.NoticeID(jam.New[jam.MessageID](jam.NewMinter(nil, nil)))
	require.NoError(t, tb.b.Publish(t.Context(), events.Event{Kind: "turn.running", Peer: jam.PeerKey{Profile: "p", Scope: "a"}, MessageID: notice}))
	require.Equal(t, notice, next(t, live).MessageID)
	require.Equal(t, notice, next(t, tb.subscribe(t, 0)).MessageID)
	require.ErrorIs(t, tb.b.Publish(t.Context(), events.Event{Kind: "k", MessageID: jam.NoticePrefix + "msg_x"}), jam.ErrInvalid)
}

func TestBroker_laggedSubscriberResyncsAndResumes(t *testing.T) {
	t.Parallel()
	const buffer, total = 8, 100
	tb := setup(t, events.Config{SubscriberBuffer: buffer, MaxBatch: 4})
	stalled := tb.subscribe(t, 0)
	fast := tb.subscribe(t, 0)
	for i := 1; i <= total; i++ {
		tb.publish(t, i, i)
		require.Equal(t, i, index(t, next(t, fast)), "the fast subscriber gets everything while the other stalls")
	}

	// The stalled one gets its buffer, then the resync, then the end.
	for i := 1; i <= buffer; i++ {
		require.Equal(t, i, index(t, next(t, stalled)))
	}
	resync := next(t, stalled)
	require.Equal(t, events.KindStreamResync, resync.Kind)
	require.Equal(t, int64(buffer), resync.Seq, "the resync names the last event delivered")
	require.JSONEq(t, `{"reason":"lagged"}`, string(resync.Data))
	_, err := stalled.Next(t.Context())
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, uint64(1), tb.b.Stats().Lagged)

	// Resuming after the resync's seq replays exactly what was missed.
	resumed := tb.subscribe(t, resync.Seq)
	for i := buffer + 1; i <= total; i++ {
		require.Equal(t, i, index(t, next(t, resumed)))
	}
}

func TestBroker_snapshotProviders(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	b, err := events.New(events.Config{Workspace: ws}, st)
	require.NoError(t, err)
	presence := `{"p/a":"up"}`
	require.NoError(t, b.RegisterSnapshot("presence", func() (json.RawMessage, error) { return json.RawMessage(presence), nil }))
	require.NoError(t, b.RegisterSnapshot("activity", func() (json.RawMessage, error) { return nil, errors.New("activity unknown") }))
	require.NoError(t, b.RegisterSnapshot("broken", func() (json.RawMessage, error) { return json.RawMessage(`{`), nil }))
	require.ErrorIs(t, b.RegisterSnapshot("presence", func() (json.RawMessage, error) { return nil, nil }), jam.ErrAlreadyExists)
	require.ErrorIs(t, b.RegisterSnapshot("", nil), jam.ErrInvalid)
	require.NoError(t, b.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, b.Stop(context.Background())) })

	s, err := b.Subscribe(events.Live)
	require.NoError(t, err)
	defer s.Close()
	reset := next(t, s)
	require.Equal(t, events.KindReset, reset.Kind)
	require.JSONEq(t, `{"reason":"subscribe","snapshots":{"presence":{"p/a":"up"}},
		"errors":{"activity":"activity unknown","broken":"snapshot is not valid JSON"}}`, string(reset.Data))

	// A subscription with a position gets no reset; one beyond the end is
	// treated as new.
	s2, err := b.Subscribe(0)
	require.NoError(t, err)
	defer s2.Close()
	_, ok, err := s2.TryNext(t.Context())
	require.NoError(t, err)
	require.False(t, ok)
	s3, err := b.Subscribe(99)
	require.NoError(t, err)
	defer s3.Close()
	reset = next(t, s3)
	require.Equal(t, events.KindReset, reset.Kind)
	require.Equal(t, int64(0), reset.Seq)
	var data events.ResetData
	require.NoError(t, json.Unmarshal(reset.Data, &data))
	require.Equal(t, events.ReasonUnknownPosition, data.Reason)
	require.Equal(t, int64(99), data.After)
}

// TestBroker_snapshotAtomicWithPosition checks the reset's promise: a
// provider whose state a publisher updates before publishing reflects at
// least every event up to the reset's seq.
func TestBroker_snapshotAtomicWithPosition(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	b, err := events.New(events.Config{Workspace: ws}, st)
	require.NoError(t, err)
	var counter struct {
		mu sync.Mutex
		n  int
	}
	require.NoError(t, b.RegisterSnapshot("count", func() (json.RawMessage, error) {
		counter.mu.Lock()
		defer counter.mu.Unlock()
		return json.RawMessage(fmt.Sprintf(`{"n":%d}`, counter.n)), nil
	}))
	require.NoError(t, b.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, b.Stop(context.Background())) })

	const total = 300
	published := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for i := 1; i <= total; i++ {
			counter.mu.Lock()
			counter.n = i
			counter.mu.Unlock()
			if err := b.Publish(context.Background(), ev(i)); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	})
	for range 20 {
		s, err := b.Subscribe(events.Live)
		require.NoError(t, err)
		reset := next(t, s)
		var data struct {
			Snapshots struct{ Count struct{ N int } }
		}
		require.NoError(t, json.Unmarshal(reset.Data, &data))
		// Event i has seq i (a fresh store), so the snapshot must count at
		// least up to the reset's seq.
		require.GreaterOrEqual(t, int64(data.Snapshots.Count.N), reset.Seq)
		s.Close()
	}
	require.NoError(t, <-published)
}

func TestBroker_publishInvalid(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{})
	tests := []struct {
		name string
		ev   events.Event
	}{
		{"no kind", events.Event{}},
		{"upper-case kind", events.Event{Kind: "Queued"}},
		{"long kind", events.Event{Kind: strings.Repeat("k", store.MaxEventKindLen+1)}},
		{"reset kind", events.Event{Kind: events.KindReset}},
		{"resync kind", events.Event{Kind: events.KindStreamResync}},
		{"bad peer", events.Event{Kind: "k", Peer: jam.PeerKey{Profile: "p"}}},
		{"bad room", events.Event{Kind: "k", Room: "r"}},
		{"bad message", events.Event{Kind: "k", MessageID: "m"}},
		{"data not JSON", events.Event{Kind: "k", Data: json.RawMessage(`{`)}},
		{"data not an object", events.Event{Kind: "k", Data: json.RawMessage(`"x"`)}},
		{"data invalid UTF-8", events.Event{Kind: "k", Data: json.RawMessage("{\"a\":\"\xff\"}")}},
		{"data too large", events.Event{Kind: "k", Data: json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxEventPayloadLen) + `"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, tb.b.Publish(t.Context(), tt.ev), jam.ErrInvalid)
		})
	}
}

func TestBroker_subscribeInvalid(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{})
	_, err := tb.b.Subscribe(-2)
	require.ErrorIs(t, err, jam.ErrInvalid)
}

func TestBroker_publishWaitsOnlyForRoom(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	entered, release := make(chan struct{}), make(chan struct{})
	st.BeforeAppendFunc = func(ctx context.Context, call int) error {
		if call == 1 {
			close(entered)
			<-release
		}
		return nil
	}
	tb := startBroker(t, st, ws, events.Config{PublishBuffer: 2})
	stalled := tb.subscribe(t, 0) // never read: publishing does not wait for it

	tb.publish(t, 1, 1)
	<-entered // the writer holds event 1 in a commit that does not return
	tb.publish(t, 2, 3)
	// The buffer is full: a publish with an ended context gives up rather
	// than dropping anything or overfilling the buffer.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, tb.b.Publish(ctx, ev(99)), context.Canceled)

	blocked := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { blocked <- tb.b.Publish(context.Background(), ev(4)) })
	close(release)
	require.NoError(t, <-blocked)
	wg.Wait()
	for i := 1; i <= 4; i++ {
		require.Equal(t, i, index(t, next(t, stalled)), "nothing was dropped")
	}
}

func TestBroker_commitRetriesUntilStored(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	st.BeforeAppendFunc = func(_ context.Context, call int) error {
		if call <= 3 {
			return fmt.Errorf("disk hiccup %d: %w", call, jam.ErrUnavailable)
		}
		return nil
	}
	tb := startBroker(t, st, ws, events.Config{RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	s := tb.subscribe(t, 0)
	tb.publish(t, 1, 5)
	for i := 1; i <= 5; i++ {
		e := next(t, s)
		require.Equal(t, i, index(t, e))
		require.Equal(t, int64(i), e.Seq, "a failed commit wrote nothing")
	}
	require.Zero(t, tb.b.Stats().Dropped)
}

func TestBroker_stopDrainsAndEnds(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	b, err := events.New(events.Config{Workspace: ws}, st)
	require.NoError(t, err)
	require.NoError(t, b.Stop(t.Context()), "stop before start")
	require.ErrorIs(t, b.Start(t.Context()), jam.ErrStopping)

	b, err = events.New(events.Config{Workspace: ws}, st)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	require.ErrorIs(t, b.Start(t.Context()), jam.ErrConflict)
	s, err := b.Subscribe(0)
	require.NoError(t, err)
	for i := 1; i <= 500; i++ {
		require.NoError(t, b.Publish(t.Context(), ev(i)))
	}
	require.NoError(t, b.Stop(t.Context()))
	require.NoError(t, b.Stop(t.Context()), "stop twice")

	last, err := st.EventLast(t.Context(), ws)
	require.NoError(t, err)
	require.Equal(t, int64(500), last, "everything published before the stop is committed")
	require.ErrorIs(t, b.Publish(t.Context(), ev(501)), jam.ErrStopping)
	_, err = b.Subscribe(events.Live)
	require.ErrorIs(t, err, jam.ErrStopping)

	// The subscription gets what was handed out, then the stop.
	for i := 1; i <= 500; i++ {
		require.Equal(t, i, index(t, next(t, s)))
	}
	_, err = s.Next(t.Context())
	require.ErrorIs(t, err, jam.ErrStopping)
	s.Close()
	s.Close()
}

func TestBroker_stopOutOfTime(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	st.BeforeAppendFunc = func(ctx context.Context, _ int) error {
		<-ctx.Done() // a store that never answers
		return ctx.Err()
	}
	b, err := events.New(events.Config{Workspace: ws}, st)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	for i := 1; i <= 3; i++ {
		require.NoError(t, b.Publish(t.Context(), ev(i)))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, b.Stop(ctx), context.Canceled)
	require.Equal(t, uint64(3), b.Stats().Dropped, "the cut-off events are counted")
}

func TestBroker_closedSubscription(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{})
	s := tb.subscribe(t, 0)
	s.Close()
	_, err := s.Next(t.Context())
	require.ErrorIs(t, err, events.ErrClosed)
	tb.publish(t, 1, 2) // a closed subscription is no longer fed
	watch := tb.subscribe(t, 0)
	require.Equal(t, 1, index(t, next(t, watch)))
}

func TestBroker_retentionAtStart(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	now := time.Now()
	var recs []store.EventRecord
	for i, age := range []time.Duration{10 * 24 * time.Hour, 8 * 24 * time.Hour, time.Hour, time.Minute, 0} {
		recs = append(recs, store.EventRecord{WorkspaceID: ws, Kind: fmt.Sprintf("old.%d", i), CreatedAt: now.Add(-age)})
	}
	_, err := st.EventAppend(t.Context(), recs)
	require.NoError(t, err)

	tb := startBroker(t, st, ws, events.Config{RetainEvents: 2})
	s := tb.subscribe(t, 0)
	require.Equal(t, "old.3", next(t, s).Kind, "older than 7 days, or beyond the 2 newest, is gone")
	require.Equal(t, "old.4", next(t, s).Kind)

	// The floor is the store's last sequence: a live subscription starts
	// after it, and new events continue the sequence.
	live := tb.subscribe(t, events.Live)
	require.Equal(t, int64(5), next(t, live).Seq)
	tb.publish(t, 1, 1)
	require.Equal(t, int64(6), next(t, live).Seq)
}

func TestNew_invalidConfig(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	tests := []struct {
		name string
		cfg  events.Config
	}{
		{"no workspace", events.Config{}},
		{"negative publish buffer", events.Config{Workspace: ws, PublishBuffer: -1}},
		{"negative subscriber buffer", events.Config{Workspace: ws, SubscriberBuffer: -1}},
		{"negative batch", events.Config{Workspace: ws, MaxBatch: -1}},
		{"huge replay page", events.Config{Workspace: ws, ReplayPage: store.MaxEventListLimit + 1}},
		{"negative retention", events.Config{Workspace: ws, RetainEvents: -1}},
		{"negative age", events.Config{Workspace: ws, RetainAge: -time.Hour}},
		{"retry bounds", events.Config{Workspace: ws, RetryMin: time.Second, RetryMax: time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := events.New(tt.cfg, st)
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
	_, err := events.New(events.Config{Workspace: ws}, nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
}

// TestBroker_peerLogsOfEarlierBuildsAreScrubbed: logs written by a build
// that kept event data in them (a turn's output, say) are rewritten at
// Start with each line's envelope only, backups included.
func TestBroker_peerLogsOfEarlierBuildsAreScrubbed(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	dir := t.TempDir()
	canary := "canary" + rand.Text()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "local"), 0o700))
	old := `{"seq":7,"kind":"turn.update","at":"2026-01-02T03:04:05Z","peer":"local/demo","data":{"updates":[{"kind":"text","text":"` + canary + `"}]}}` + "\n" +
		"not an event\n" +
		`{"seq":8,"kind":"agent.state","at":"2026-01-02T03:04:06Z","peer":"local/demo"}` + "\n"
	for _, name := range []string{"demo.log", "demo.log.1"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "local", name), []byte(old), 0o600))
	}
	b, err := events.New(events.Config{Workspace: ws, PeerLogDir: dir}, st)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	require.NoError(t, b.Stop(t.Context()))
	for _, name := range []string{"demo.log", "demo.log.1"} {
		raw, err := os.ReadFile(filepath.Join(dir, "local", name))
		require.NoError(t, err)
		require.NotContains(t, string(raw), canary, name)
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		require.Len(t, lines, 2, name)
		require.Contains(t, lines[0], `"seq":7`)
		require.Contains(t, lines[0], `"data_bytes":`)
		require.Contains(t, lines[1], `"seq":8`)
		st, err := os.Stat(filepath.Join(dir, "local", name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Join(dir, "local"))
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temporary file is left")
}

func TestBroker_peerLogs(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	dir := t.TempDir()
	b, err := events.New(events.Config{Workspace: ws, PeerLogDir: dir}, st)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	peer := jam.PeerKey{Profile: "local", Scope: "coder"}
	require.NoError(t, b.Publish(t.Context(), events.Event{Kind: "agent.state", Peer: peer, Data: json.RawMessage(`{"state":"up"}`)}))
	require.NoError(t, b.Publish(t.Context(), events.Event{Kind: "daemon.note"}))
	require.NoError(t, b.Stop(t.Context())) // commits, logs and closes

	raw, err := os.ReadFile(filepath.Join(dir, "local", "coder.log"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	require.Len(t, lines, 1, "only the event that names a peer")
	var got events.Event
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	require.Equal(t, int64(1), got.Seq)
	require.Equal(t, "agent.state", got.Kind)
	require.Equal(t, peer, got.Peer)
	require.False(t, got.At.IsZero())
	require.Empty(t, got.Data, "the log keeps no event data")
	require.Contains(t, lines[0], `"data_bytes":14`)
}

func TestBroker_stopOutOfTimeWithNothingPending(t *testing.T) {
	t.Parallel()
	st, ws := openStore(t)
	b, err := events.New(events.Config{Workspace: ws}, st)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	s, err := b.Subscribe(0)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, b.Publish(t.Context(), ev(1)))
	next(t, s) // committed and handed out: nothing is pending
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, b.Stop(ctx), "a stop that had nothing left to commit did not fail")
	require.Zero(t, b.Stats().Dropped)
}

func TestBroker_replayFromRecentCacheThenStore(t *testing.T) {
	t.Parallel()
	tb := setup(t, events.Config{RecentEvents: 10, ReplayPage: 4})
	watch := tb.subscribe(t, 0)
	for i := 1; i <= 30; i++ {
		tb.publish(t, i, i)
		next(t, watch)
	}

	// After 25: all in the cache (it holds 21..30).
	s := tb.subscribe(t, 25)
	for i := 26; i <= 30; i++ {
		require.Equal(t, i, index(t, next(t, s)))
	}
	st := tb.b.Stats()
	require.NotZero(t, st.ReplayCached)
	require.Zero(t, st.ReplayStored)

	// After 5: the store until the cache takes over, seamlessly.
	s = tb.subscribe(t, 5)
	for i := 6; i <= 30; i++ {
		require.Equal(t, i, index(t, next(t, s)))
	}
	require.NotZero(t, tb.b.Stats().ReplayStored)
	require.Greater(t, tb.b.Stats().ReplayCached, st.ReplayCached)

	// Without the cache every replay reads the store.
	nocache := setup(t, events.Config{RecentEvents: -1})
	nocache.publish(t, 1, 3)
	w := nocache.subscribe(t, 0)
	for i := 1; i <= 3; i++ {
		require.Equal(t, i, index(t, next(t, w)))
	}
	require.Zero(t, nocache.b.Stats().ReplayCached)
}
