package mcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBoundHistory: a history keeps the latest messages that fit in
// MaxHistoryBytes, oldest first, counts the ones it left out, and clips a
// message longer than MaxMessageBytes, saying so.
func TestBoundHistory(t *testing.T) {
	t.Parallel()
	var ms []Message
	for i := range 100 {
		ms = append(ms, Message{ID: fmt.Sprint(i), Text: strings.Repeat("x", 10<<10)})
	}
	ms[99].Text = strings.Repeat("y", 20<<10)
	out := boundHistory(ms)
	require.Len(t, out.Messages, 12, "16 KiB + 11 × 10 KiB fit in 128 KiB")
	require.Equal(t, 88, out.Omitted)
	require.Equal(t, "88", out.Messages[0].ID, "oldest first")
	last := out.Messages[11]
	require.Equal(t, "99", last.ID)
	require.True(t, last.Clipped)
	require.LessOrEqual(t, len(last.Text), MaxMessageBytes+len("…"))
	require.False(t, out.Messages[0].Clipped)

	small := boundHistory([]Message{{ID: "a", Text: "hi"}, {ID: "b", Text: "there"}})
	require.Len(t, small.Messages, 2)
	require.Zero(t, small.Omitted)
	require.NotNil(t, boundHistory(nil).Messages, "an empty history is an empty list")
}
