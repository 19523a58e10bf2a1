package session

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// endedTurn waits for the session's only turn to end and returns it.
func (b *bundle) endedTurn(t *testing.T) store.Turn {
	t.Helper()
	var got store.Turn
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
		require.NoError(t, err)
		if len(turns) == 0 || !turns[0].State.Terminal() {
			return false
		}
		got = turns[0]
		return true
	}, 30*time.Second, 10*time.Millisecond)
	return got
}

func TestManager_launchFailureFailsTheTurnWithItsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var launches atomic.Int32
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			launches.Add(1)
			return nil, errors.New(`exec: "frobnicator-7": executable file not found in $PATH`)
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000001")

	tr := b.endedTurn(t)
	require.Equal(t, jam.TurnFailed, tr.State)
	require.Equal(t, jam.ReasonHarnessError, tr.Reason)
	require.Equal(t, `start agent local/demo: exec: "frobnicator-7": executable file not found in $PATH`, tr.Detail)
	journal, err := b.st.TurnJournal(t.Context(), b.ws, tr.ID)
	require.NoError(t, err)
	require.Equal(t, tr.Detail, journal[len(journal)-1].Detail)
	require.Equal(t, int32(1), launches.Load(), "the turn failed; the launch was not retried")
	execs, err := b.st.ExecutionList(t.Context(), b.ws, tr.ID)
	require.NoError(t, err)
	require.Empty(t, execs, "no process, no attempt")
	b.set.waitFailed(t, "0190a1b2-0000-4000-8000-000000000001", "turn failed (harness_error): "+tr.Detail)
}

func TestManager_harnessErrorFailsTheTurnWithItsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.manager(t, func(string) (harness.Outcome, error) {
		return harness.Outcome{}, errors.New("acp: session/prompt: model \"gpt-9\" refused; offered sonnet, opus")
	})
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000001")

	tr := b.endedTurn(t)
	require.Equal(t, jam.TurnFailed, tr.State)
	require.Equal(t, jam.ReasonHarnessError, tr.Reason)
	require.Equal(t, "acp: session/prompt: model \"gpt-9\" refused; offered sonnet, opus", tr.Detail)
	execs, err := b.st.ExecutionList(t.Context(), b.ws, tr.ID)
	require.NoError(t, err)
	require.Len(t, execs, 1)
	require.Equal(t, jam.TurnFailed, execs[0].Outcome)
}

// TestManager_failedOutcomeFailsTheTurn: a turn the harness reports failed
// (StopFailed, with its own reason) fails with that reason as its detail
// and settles nothing, whatever text came with it.
func TestManager_failedOutcomeFailsTheTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.manager(t, func(string) (harness.Outcome, error) {
		return harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "error_during_execution", Text: "half an answer"}, nil
	})
	b.deliver(t, m, "0190a1b2-0000-4000-8000-000000000001")

	tr := b.endedTurn(t)
	require.Equal(t, jam.TurnFailed, tr.State)
	require.Equal(t, jam.ReasonHarnessError, tr.Reason)
	require.Equal(t, "the agent reports the turn failed (error_during_execution)", tr.Detail)
	b.set.mu.Lock()
	defer b.set.mu.Unlock()
	require.Empty(t, b.set.replies, "nothing is settled")
}
