package session

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// batches collects what a batcher emits.
type batches struct {
	mu  sync.Mutex
	got [][]harness.Update
}

func (b *batches) emit(batch []harness.Update) {
	b.mu.Lock()
	b.got = append(b.got, batch)
	b.mu.Unlock()
}

func (b *batches) all() [][]harness.Update {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]harness.Update(nil), b.got...)
}

func TestBatcher(t *testing.T) {
	t.Parallel()
	text := func(s string) harness.Update { return harness.Update{Kind: harness.UpdateText, Text: s} }
	thought := func(s string) harness.Update { return harness.Update{Kind: harness.UpdateThinking, Text: s} }

	t.Run("chunks coalesce until the interval", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			var got batches
			b := newBatcher(250*time.Millisecond, 4<<10, got.emit)
			defer b.close()
			for range 100 {
				b.add(thought("hm "))
			}
			b.add(text("hello "))
			b.add(text("world"))
			synctest.Wait()
			require.Empty(t, got.all(), "nothing before the interval")
			time.Sleep(250 * time.Millisecond) // the fake clock of the bubble
			synctest.Wait()
			require.Equal(t, [][]harness.Update{{thought(strings.Repeat("hm ", 100)), text("hello world")}}, got.all(), "one batch, chunks merged by kind")
		})
	})

	t.Run("a full batch goes at once", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			var got batches
			b := newBatcher(250*time.Millisecond, 1024, got.emit)
			defer b.close()
			b.add(text(strings.Repeat("x", 600)))
			synctest.Wait()
			require.Empty(t, got.all())
			b.add(text(strings.Repeat("y", 600)))
			synctest.Wait()
			require.Len(t, got.all(), 1, "over the byte bound, before the interval")
			require.Len(t, got.all()[0][0].Text, 1200)
		})
	})

	t.Run("tool calls and plans go as they come, after the text before them", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			var got batches
			b := newBatcher(250*time.Millisecond, 4<<10, got.emit)
			defer b.close()
			call := harness.Update{Kind: harness.UpdateToolStart, ToolCallID: "c1", Title: "Write NOTES.md", ToolKind: "edit", Status: "pending"}
			b.add(text("let me write "))
			b.add(call)
			synctest.Wait()
			require.Equal(t, [][]harness.Update{{text("let me write "), call}}, got.all())
			plan := harness.Update{Kind: harness.UpdatePlan, Plan: []harness.PlanEntry{{Content: "read", Status: "completed"}, {Content: "write", Status: "pending"}}}
			b.add(plan)
			synctest.Wait()
			require.Equal(t, []harness.Update{plan}, got.all()[1])
		})
	})

	t.Run("close flushes the rest", func(t *testing.T) {
		t.Parallel()
		var got batches
		b := newBatcher(time.Hour, 4<<10, got.emit)
		b.add(text("last words"))
		b.close()
		require.Equal(t, [][]harness.Update{{text("last words")}}, got.all())
	})

	t.Run("an oversized chunk is clipped on a character boundary", func(t *testing.T) {
		t.Parallel()
		var got batches
		b := newBatcher(time.Hour, 4<<10, got.emit)
		b.add(text(strings.Repeat("é", maxUpdateText)))
		b.close()
		out := got.all()[0][0].Text
		require.LessOrEqual(t, len(out), maxUpdateText+len("…"))
		require.True(t, strings.HasSuffix(out, "é…"), "no split character")
	})
}

// observed records what an Observer sees.
type observed struct {
	mu     sync.Mutex
	moves  []TurnEvent
	output []OutputEvent
	// order is the kinds in order: the turn states and "output".
	order []string
}

func (o *observed) TurnMoved(ev TurnEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.moves = append(o.moves, ev)
	o.order = append(o.order, string(ev.Turn.State))
}

func (o *observed) TurnOutput(ev OutputEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.output = append(o.output, ev)
	if n := len(o.order); n == 0 || o.order[n-1] != "output" {
		o.order = append(o.order, "output")
	}
}

func (o *observed) snapshot() ([]TurnEvent, []OutputEvent, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]TurnEvent(nil), o.moves...), append([]OutputEvent(nil), o.output...), append([]string(nil), o.order...)
}

// TestManager_observerSeesTurnsAndTheirOutput: every transition reaches the
// Observer with the session's peer and room, the streamed output arrives in
// batches between running and the end, and the manager keeps the output.
func TestManager_observerSeesTurnsAndTheirOutput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	obs := &observed{}
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Observer: obs, BatchInterval: time.Hour, BatchBytes: 64,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return &fakeHost{exited: make(chan struct{}),
				stream: func(_ string, updates func(harness.Update)) {
					for range 10 {
						updates(harness.Update{Kind: harness.UpdateThinking, Text: "thinking… "})
					}
					updates(harness.Update{Kind: harness.UpdateToolStart, ToolCallID: "c1", Title: "Write NOTES.md", Status: "pending"})
					updates(harness.Update{Kind: harness.UpdateToolUpdate, ToolCallID: "c1", Status: "completed"})
					for _, w := range []string{"all ", "done"} {
						updates(harness.Update{Kind: harness.UpdateText, Text: w})
					}
				},
				answer: func(string) (harness.Outcome, error) {
					return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "all done"}, nil
				}}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	defer func() { require.NoError(t, m.Stop(context.Background())) }()

	msg := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000021")
	b.deliver(t, m, msg)
	require.Equal(t, msg, <-b.set.done)
	require.Eventually(t, func() bool {
		moves, _, _ := obs.snapshot()
		return len(moves) > 0 && moves[len(moves)-1].Turn.State.Terminal()
	}, 30*time.Second, time.Millisecond)

	moves, output, order := obs.snapshot()
	require.Equal(t, []string{"queued", "preparing", "running", "output", "succeeded"}, order, "the output comes between running and the end")
	for _, mv := range moves {
		require.Equal(t, b.sess.Peer, mv.Peer)
		require.Equal(t, b.sess.Room, mv.Room)
		require.Equal(t, msg, mv.Turn.SourceMessageID)
	}
	require.Equal(t, jam.TurnState(""), moves[0].From)
	require.Equal(t, jam.TurnRunning, moves[3].From)
	require.Equal(t, "end_turn", moves[3].Turn.Reason)

	var text, thought strings.Builder
	for i, ev := range output {
		require.Equal(t, i+1, ev.Batch, "batches are numbered in order")
		require.Equal(t, moves[0].Turn.ID, ev.Turn.ID)
		for _, u := range ev.Updates {
			switch u.Kind {
			case harness.UpdateText:
				text.WriteString(u.Text)
			case harness.UpdateThinking:
				thought.WriteString(u.Text)
			}
		}
	}
	require.Equal(t, "all done", text.String())
	require.Equal(t, strings.Repeat("thinking… ", 10), thought.String())
	require.Less(t, len(output), 14, "chunks were coalesced")

	kept, ok, err := m.Output(t.Context(), moves[0].Turn.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, len(output), kept.Batches)
	require.Equal(t, []harness.Update{
		{Kind: harness.UpdateThinking, Text: strings.Repeat("thinking… ", 10)},
		{Kind: harness.UpdateToolStart, ToolCallID: "c1", Title: "Write NOTES.md", Status: "pending"},
		{Kind: harness.UpdateToolUpdate, ToolCallID: "c1", Status: "completed"},
		{Kind: harness.UpdateText, Text: "all done"},
	}, kept.Updates)
	_, ok, err = m.Output(t.Context(), jam.New[jam.TurnID](b.m))
	require.NoError(t, err)
	require.False(t, ok)
}

func TestTranscript_bounded(t *testing.T) {
	t.Parallel()
	tr := transcript{limit: MaxOutputBytes}
	chunk := harness.Update{Kind: harness.UpdateText, Text: strings.Repeat("x", 1000)}
	for i := range 100 {
		tr.append(i+1, []harness.Update{chunk})
	}
	require.Equal(t, 100, tr.out.Batches)
	require.True(t, tr.out.Truncated)
	require.LessOrEqual(t, tr.size, MaxOutputBytes)
	require.Len(t, tr.out.Updates, 1)
}
