package daemon

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

// fakeRetention counts prune passes and hands each to the test.
type fakeRetention struct {
	calls chan store.RuntimePruneParams
	err   error
}

func (f *fakeRetention) RuntimePrune(ctx context.Context, p store.RuntimePruneParams) (store.RuntimePruned, error) {
	select {
	case f.calls <- p:
	case <-ctx.Done():
		return store.RuntimePruned{}, ctx.Err()
	}
	return store.RuntimePruned{Turns: 1}, f.err
}

func TestPruner_passesAtStartAndEveryInterval(t *testing.T) {
	t.Parallel()
	f := &fakeRetention{calls: make(chan store.RuntimePruneParams), err: errors.New("disk on fire")}
	p := &pruner{st: f, params: runtimeRetention, every: time.Millisecond, log: slog.New(slog.DiscardHandler)}
	p.start()
	for range 3 {
		select {
		case got := <-f.calls:
			require.Equal(t, runtimeRetention, got)
		case <-time.After(30 * time.Second):
			t.Fatal("no prune pass")
		}
	}
	// A failed pass does not end the loop (it went on above), and stop
	// waits for the goroutine even while a pass is blocked.
	require.NoError(t, p.stop(t.Context()))
}

func TestRuntimeRetention_boundsAreValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, runtimeRetention.Validate())
}
