package store_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

func TestBoundTurnOutput(t *testing.T) {
	t.Parallel()
	text := func(s string) store.OutputUpdate { return store.OutputUpdate{Kind: "text", Text: s} }
	call := store.OutputUpdate{Kind: "tool_call", ToolCallID: "c1", Title: "ls"}
	for _, tt := range []struct {
		name      string
		batch     []store.OutputUpdate
		used      store.OutputUsage
		want      []store.OutputUpdate
		truncated bool
	}{
		{name: "fits", batch: []store.OutputUpdate{text("hi"), call}, want: []store.OutputUpdate{text("hi"), call}},
		{name: "textCutOnRuneBoundary", batch: []store.OutputUpdate{text("aé€")}, used: store.OutputUsage{Text: store.TurnOutputMaxText - 4},
			want: []store.OutputUpdate{text("aé")}, truncated: true},
		{name: "textFullKeepsToolCalls", batch: []store.OutputUpdate{text("x"), call, text("y")}, used: store.OutputUsage{Text: store.TurnOutputMaxText},
			want: []store.OutputUpdate{call}, truncated: true},
		{name: "toolCallWithTextKeptWithout", batch: []store.OutputUpdate{{Kind: "tool_call_update", ToolCallID: "c1", Text: "log"}},
			used: store.OutputUsage{Text: store.TurnOutputMaxText}, want: []store.OutputUpdate{{Kind: "tool_call_update", ToolCallID: "c1"}}, truncated: true},
		{name: "bytesFullKeepsNothing", batch: []store.OutputUpdate{call}, used: store.OutputUsage{Bytes: store.TurnOutputMaxBytes - 10},
			want: []store.OutputUpdate{}, truncated: true},
		{name: "bytesFullDropsTheRestOfTheBatch", batch: []store.OutputUpdate{text("ok"), text(strings.Repeat("z", 200)), call},
			used: store.OutputUsage{Bytes: store.TurnOutputMaxBytes - 200}, want: []store.OutputUpdate{text("ok")}, truncated: true},
		{name: "noTextAfterTheCut", batch: []store.OutputUpdate{text("€"), call, text("y")}, used: store.OutputUsage{Text: store.TurnOutputMaxText - 1},
			want: []store.OutputUpdate{call}, truncated: true},
		{name: "alreadyTruncatedStaysSo", batch: []store.OutputUpdate{call}, used: store.OutputUsage{Truncated: true},
			want: []store.OutputUpdate{call}, truncated: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, u := store.BoundTurnOutput(tt.batch, tt.used)
			if len(tt.want) == 0 {
				require.Empty(t, got)
			} else {
				require.Equal(t, tt.want, got)
			}
			require.Equal(t, tt.truncated, u.Truncated)
			require.LessOrEqual(t, u.Text, int64(store.TurnOutputMaxText))
			require.LessOrEqual(t, u.Bytes, int64(store.TurnOutputMaxBytes))
		})
	}
}

// FuzzBoundTurnOutput checks the bounds hold for any batch and usage: the
// usage never passes them, counts exactly what was kept, keeps order, and
// cuts text only on rune boundaries.
func FuzzBoundTurnOutput(f *testing.F) {
	f.Add("hello", "tool", int64(0), int64(0), false)
	f.Add("aé€😀", "", int64(store.TurnOutputMaxText-5), int64(0), false)
	f.Add("x", "t", int64(0), int64(store.TurnOutputMaxBytes-70), true)
	f.Add("\xff\xfe", "c", int64(store.TurnOutputMaxText-1), int64(100), false)
	f.Fuzz(func(t *testing.T, text, title string, usedText, usedBytes int64, truncated bool) {
		if usedText < 0 || usedText > store.TurnOutputMaxText || usedBytes < 0 || usedBytes > store.TurnOutputMaxBytes {
			t.Skip()
		}
		batch := []store.OutputUpdate{{Kind: "thought", Text: text}, {Kind: "tool_call", ToolCallID: "c", Title: title}, {Kind: "text", Text: text + text}}
		used := store.OutputUsage{Text: usedText, Bytes: usedBytes, Truncated: truncated}
		kept, u := store.BoundTurnOutput(batch, used)
		require.LessOrEqual(t, u.Text, int64(store.TurnOutputMaxText))
		require.LessOrEqual(t, u.Bytes, int64(store.TurnOutputMaxBytes))
		require.True(t, u.Truncated || !truncated, "truncation is never forgotten")
		var addText, addBytes int64
		j := 0
		for _, k := range kept {
			for j < len(batch) && batch[j].Kind != k.Kind {
				j++
			}
			require.Less(t, j, len(batch), "kept updates keep their order")
			require.True(t, strings.HasPrefix(batch[j].Text, k.Text), "text is only ever cut at its end")
			if utf8.ValidString(batch[j].Text) {
				require.True(t, utf8.ValidString(k.Text), "text is cut on a rune boundary")
			}
			if k.Text != batch[j].Text {
				require.True(t, u.Truncated)
			}
			j++
			raw, err := json.Marshal(k)
			require.NoError(t, err)
			addText += int64(len(k.Text))
			addBytes += int64(len(raw))
		}
		if u.Text == store.TurnOutputMaxText {
			require.LessOrEqual(t, usedText+addText, u.Text)
		} else {
			require.Equal(t, usedText+addText, u.Text, "every kept byte of text is counted")
		}
		if len(kept) < len(batch) {
			require.True(t, u.Truncated, "a dropped update is recorded")
		}
		if u.Bytes != store.TurnOutputMaxBytes && len(kept) > 0 {
			require.Greater(t, u.Bytes, usedBytes+addBytes-1, "every kept byte is counted")
		}
	})
}
