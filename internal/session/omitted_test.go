package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
)

// TestManager_replyCountsWhatTheHarnessOmitted: the bytes of an answer a
// harness did not keep reach the reply, which notes them.
func TestManager_replyCountsWhatTheHarnessOmitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.manager(t, func(string) (harness.Outcome, error) {
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "the start of a long answer", Omitted: 951_425}, nil
	})
	msg := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000001")
	b.deliver(t, m, msg)
	require.Equal(t, msg, <-b.set.done)
	b.set.mu.Lock()
	defer b.set.mu.Unlock()
	require.Equal(t, "the start of a long answer", b.set.replies[msg])
	require.Equal(t, 951_425, b.set.omitted[msg])
}
