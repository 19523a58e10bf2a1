package session

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// outputStore is the real store with its output writes replaceable.
type outputStore struct {
	Store
	TurnOutputAppendFunc func(ctx context.Context, p store.TurnOutputAppendParams) (store.TurnOutputBatch, error)
}

func (s outputStore) TurnOutputAppend(ctx context.Context, p store.TurnOutputAppendParams) (store.TurnOutputBatch, error) {
	return s.TurnOutputAppendFunc(ctx, p)
}

// syncBuffer is a log sink safe for the batcher's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// streamingManager starts a manager on st whose agent streams stream
// before it answers, and stops it when the test ends unless the test
// stopped it first.
func (b *bundle) streamingManager(t *testing.T, st Store, log *slog.Logger, stream func(string, func(harness.Update))) (*Manager, *observed) {
	t.Helper()
	obs := &observed{}
	m, err := New(Config{Workspace: b.ws, Store: st, Settler: b.set, Logger: log, Minter: b.m, RetryDelay: time.Millisecond,
		Observer: obs, BatchInterval: time.Hour, BatchBytes: 64,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return &fakeHost{exited: make(chan struct{}), stream: stream,
				answer: func(string) (harness.Outcome, error) {
					return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "done"}, nil
				}}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	var once sync.Once
	stop := func() { once.Do(func() { require.NoError(t, m.Stop(context.Background())) }) }
	t.Cleanup(stop)
	return m, obs
}

// runOne delivers a message and waits until its turn has ended.
func (b *bundle) runOne(t *testing.T, m *Manager, obs *observed, msg jam.PlatformMessageID) store.Turn {
	t.Helper()
	b.deliver(t, m, msg)
	require.Equal(t, msg, <-b.set.done)
	var last store.Turn
	require.Eventually(t, func() bool {
		moves, _, _ := obs.snapshot()
		if len(moves) == 0 {
			return false
		}
		last = moves[len(moves)-1].Turn
		return last.State.Terminal()
	}, 30*time.Second, time.Millisecond)
	require.Equal(t, jam.TurnSucceeded, last.State)
	return last
}

func streamSome(_ string, updates func(harness.Update)) {
	for range 10 {
		updates(harness.Update{Kind: harness.UpdateThinking, Text: "thinking… "})
	}
	updates(harness.Update{Kind: harness.UpdateToolStart, ToolCallID: "c1", Title: "Write NOTES.md", Status: "pending"})
	updates(harness.Update{Kind: harness.UpdatePlan, Plan: []harness.PlanEntry{{Content: "write", Priority: "high", Status: "completed"}}})
	for _, w := range []string{"all ", "done"} {
		updates(harness.Update{Kind: harness.UpdateText, Text: w})
	}
}

// TestManager_outputComesFromTheStoreAfterARestart: a manager that never
// ran the turn (the daemon restarted) reads its output from the store,
// the same as the manager that ran it kept in memory.
func TestManager_outputComesFromTheStoreAfterARestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	discard := slog.New(slog.DiscardHandler)
	first, obs := b.streamingManager(t, b.st, discard, streamSome)
	turn := b.runOne(t, first, obs, "0190a1b2-0000-4000-8000-000000000031")
	before, ok, err := first.Output(t.Context(), turn.ID)
	require.NoError(t, err)
	require.True(t, ok)
	_, events, _ := obs.snapshot()
	require.Len(t, events, before.Batches)
	require.NoError(t, first.Stop(context.Background()))

	second, _ := b.streamingManager(t, b.st, discard, streamSome)
	second.mu.Lock()
	_, inMemory := second.outputs[turn.ID]
	second.mu.Unlock()
	require.False(t, inMemory)
	after, ok, err := second.Output(t.Context(), turn.ID)
	require.NoError(t, err)
	require.True(t, ok, "the store keeps the output")
	require.Equal(t, before, after)
	require.Equal(t, []harness.Update{
		{Kind: harness.UpdateThinking, Text: strings.Repeat("thinking… ", 10)},
		{Kind: harness.UpdateToolStart, ToolCallID: "c1", Title: "Write NOTES.md", Status: "pending"},
		{Kind: harness.UpdatePlan, Plan: []harness.PlanEntry{{Content: "write", Priority: "high", Status: "completed"}}},
		{Kind: harness.UpdateText, Text: "all done"},
	}, after.Updates)

	_, ok, err = second.Output(t.Context(), jam.New[jam.TurnID](b.m))
	require.NoError(t, err)
	require.False(t, ok, "a turn that streamed nothing")
}

// TestManager_outputBeyondMemoryComesFromTheStore: memory keeps
// MaxOutputBytes of a turn; the store keeps more, and answers then.
func TestManager_outputBeyondMemoryComesFromTheStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	chunk := strings.Repeat("x", 999) + "\n"
	const chunks = 2 * MaxOutputBytes / 1000
	m, obs := b.streamingManager(t, b.st, slog.New(slog.DiscardHandler), func(_ string, updates func(harness.Update)) {
		for range chunks {
			updates(harness.Update{Kind: harness.UpdateText, Text: chunk})
		}
		updates(harness.Update{Kind: harness.UpdateToolStart, ToolCallID: "c2", Title: "last", Status: "completed"})
	})
	turn := b.runOne(t, m, obs, "0190a1b2-0000-4000-8000-000000000032")
	m.mu.Lock()
	require.True(t, m.outputs[turn.ID].out.Truncated, "memory holds only part of it")
	m.mu.Unlock()

	out, ok, err := m.Output(t.Context(), turn.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, out.Truncated)
	_, events, _ := obs.snapshot()
	require.Equal(t, len(events), out.Batches)
	require.Equal(t, []harness.Update{{Kind: harness.UpdateText, Text: strings.Repeat(chunk, chunks)},
		{Kind: harness.UpdateToolStart, ToolCallID: "c2", Title: "last", Status: "completed"}}, out.Updates)
}

// TestManager_outputNotStoredIsNotFatal: a batch the store refuses is
// logged; the turn goes on and ends as it would, and memory still has it.
func TestManager_outputNotStoredIsNotFatal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs syncBuffer
	failing := outputStore{Store: b.st, TurnOutputAppendFunc: func(context.Context, store.TurnOutputAppendParams) (store.TurnOutputBatch, error) {
		return store.TurnOutputBatch{}, errors.New("disk on fire")
	}}
	m, obs := b.streamingManager(t, failing, slog.New(slog.NewTextHandler(&logs, nil)), streamSome)
	turn := b.runOne(t, m, obs, "0190a1b2-0000-4000-8000-000000000033")
	require.Contains(t, logs.String(), "turn output not stored")
	require.Contains(t, logs.String(), "disk on fire")

	out, ok, err := m.Output(t.Context(), turn.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, out.Updates, 4)
	stored, err := b.st.TurnOutput(t.Context(), b.ws, turn.ID)
	require.NoError(t, err)
	require.Empty(t, stored)
}
