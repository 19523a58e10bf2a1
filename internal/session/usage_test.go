package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/pricing"
	"github.com/jamhq/jam/internal/store"
)

// usageHost is a fake process whose turns run a script with the turn's
// context, its updates and the host (to die mid-turn).
type usageHost struct {
	fakeHost
	turn func(ctx context.Context, text string, updates func(harness.Update), h *usageHost) (harness.Outcome, error)
}

func (h *usageHost) Prompt(ctx context.Context, _ harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	return h.turn(ctx, in.Text, updates, h)
}

// usageManager starts a manager whose processes run turn, pricing with
// table.
func (b *bundle) usageManager(t *testing.T, table string, turn func(context.Context, string, func(harness.Update), *usageHost) (harness.Outcome, error)) *Manager {
	t.Helper()
	prices, err := pricing.Parse([]byte(table))
	require.NoError(t, err)
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Prices: func() pricing.Table { return prices },
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return &usageHost{fakeHost: fakeHost{exited: make(chan struct{})}, turn: turn}, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	return m
}

// msgID is the i-th Band message of a test.
func msgID(i int) jam.PlatformMessageID {
	return jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-0000000001%02d", i))
}

// endedExecution waits until the session's i-th turn is in state and
// returns its one execution, ended.
func (b *bundle) endedExecution(t *testing.T, i int, state jam.TurnState) store.Execution {
	t.Helper()
	var got store.Execution
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
		require.NoError(t, err)
		if len(turns) <= i || turns[i].State != state {
			return false
		}
		execs, err := b.st.ExecutionList(t.Context(), b.ws, turns[i].ID)
		require.NoError(t, err)
		require.Len(t, execs, 1)
		got = execs[0]
		return true
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, store.ExecutionEnded, got.State)
	return got
}

const usagePrices = `
[models."gpt-5*"]
input = 1.25
output = 10
cached_input = 0.125
`

// TestManager_turnUsageLandsInItsExecution: what a turn's Outcome reports
// is what its execution stores: a reported cost as reported, else an
// estimate from the price table, else an unknown cost.
func TestManager_turnUsageLandsInItsExecution(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outcomes := map[jam.PlatformMessageID]harness.Outcome{
		msgID(0): {StopReason: harness.StopCompleted, Text: "1", Model: "claude-sonnet-4-5",
			Usage: harness.Usage{InputTokens: 1200, OutputTokens: 340, CachedTokens: 5000, ReasoningTokens: 20, CostUSD: 0.0421}},
		msgID(1): {StopReason: harness.StopCompleted, Text: "2", Model: "gpt-5-codex",
			Usage: harness.Usage{InputTokens: 1000, OutputTokens: 100, CachedTokens: 8000}},
		msgID(2): {StopReason: harness.StopCompleted, Text: "3", Model: "unpriced", Usage: harness.Usage{InputTokens: 7}},
		msgID(3): {StopReason: harness.StopCompleted, Text: noReply},
	}
	m := b.usageManager(t, usagePrices, func(_ context.Context, text string, updates func(harness.Update), _ *usageHost) (harness.Outcome, error) {
		for k, o := range outcomes {
			if strings.HasSuffix(text, string(k)) {
				// A streamed usage the outcome supersedes.
				updates(harness.Update{Kind: harness.UpdateUsage, Usage: &harness.Usage{InputTokens: 1}})
				return o, nil
			}
		}
		return harness.Outcome{}, errors.New("no script for " + text)
	})
	for i := range 4 {
		b.deliver(t, m, msgID(i))
	}
	want := []store.ExecutionUsage{
		{InputTokens: 1200, OutputTokens: 340, CachedTokens: 5000, ReasoningTokens: 20, CostMicros: 42_100, CostKnown: true, Model: "claude-sonnet-4-5"},
		// 1000×1.25 + 8000×0.125 + 100×10 micro-dollars.
		{InputTokens: 1000, OutputTokens: 100, CachedTokens: 8000, CostMicros: 3250, CostKnown: true, CostEstimated: true, Model: "gpt-5-codex"},
		{InputTokens: 7, Model: "unpriced"},
		// Nothing in the outcome: the last usage streamed stands.
		{InputTokens: 1},
	}
	for i, w := range want {
		e := b.endedExecution(t, i, jam.TurnSucceeded)
		require.Equal(t, w, e.Usage, "turn %d", i)
	}
}

// TestManager_cutShortTurnKeepsItsReportedUsage: a turn whose process dies
// mid-turn, and one cancelled mid-turn, store the last usage the agent
// streamed before.
func TestManager_cutShortTurnKeepsItsReportedUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cancelled := make(chan struct{})
	started := make(chan struct{}, 4)
	var calls atomic.Int32
	m := b.usageManager(t, usagePrices, func(ctx context.Context, _ string, updates func(harness.Update), h *usageHost) (harness.Outcome, error) {
		call := calls.Add(1)
		updates(harness.Update{Kind: harness.UpdateUsage, Usage: &harness.Usage{InputTokens: 10, OutputTokens: 3}})
		updates(harness.Update{Kind: harness.UpdateText, Text: "working"})
		updates(harness.Update{Kind: harness.UpdateUsage, Usage: &harness.Usage{InputTokens: 20, OutputTokens: 7, CachedTokens: 2, CostUSD: 0.0005}})
		switch call {
		case 1: // the first turn's process dies
			_ = h.Stop(ctx) // the process is gone
			return harness.Outcome{}, errors.New("the agent exited")
		case 3: // the third is cancelled
			started <- struct{}{}
			<-ctx.Done()
			close(cancelled)
			return harness.Outcome{StopReason: harness.StopCancelled}, nil
		}
		return harness.Outcome{StopReason: harness.StopCompleted, Text: "ok"}, nil
	})
	want := store.ExecutionUsage{InputTokens: 20, OutputTokens: 7, CachedTokens: 2, CostMicros: 500, CostKnown: true}

	b.deliver(t, m, msgID(0))
	e := b.endedExecution(t, 0, jam.TurnInterrupted)
	require.Equal(t, jam.ReasonProcessExited, e.Reason)
	require.Equal(t, want, e.Usage, "an interrupted turn keeps what was reported")
	// The message's next turn, on a new process, answers it.
	b.endedExecution(t, 1, jam.TurnSucceeded)

	b.deliver(t, m, msgID(1))
	<-started
	turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
	require.NoError(t, err)
	require.NoError(t, m.Cancel(t.Context(), turns[2].ID))
	<-cancelled
	e = b.endedExecution(t, 2, jam.TurnCancelled)
	require.Equal(t, want, e.Usage, "a cancelled turn keeps what was reported")
}
