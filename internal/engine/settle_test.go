package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

// TestEngine_replyPostsAtMostMaxReplyParts: a 2 MB answer once became 125
// posts; now the room gets MaxReplyParts, the last ending with a note of
// what was not posted, counting what the harness had already dropped.
func TestEngine_replyPostsAtMostMaxReplyParts(t *testing.T) {
	t.Parallel()
	for _, omitted := range []int{0, 951_425} {
		t.Run(fmt.Sprint("omitted ", omitted), func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			id := b.inbound(t, 1, "task")
			b.delivered(t)
			text := strings.Repeat("word é ", 2_000_000/8) // 2,000,000 bytes, no line breaks
			_, err := b.eng.Reply(t.Context(), ReplyParams{WorkspaceID: b.ws, Peer: b.peer, MessageID: jam.PlatformMessageID(id), Text: text, Omitted: omitted})
			require.NoError(t, err)
			var sent []string
			for _, c := range b.agent.Calls() {
				if s, ok := strings.CutPrefix(c, "send "); ok {
					sent = append(sent, s)
				}
			}
			require.LessOrEqual(t, len(sent), MaxReplyParts, "posts for one reply")
			require.Len(t, sent, MaxReplyParts)
			posted := 0
			for i, s := range sent {
				require.LessOrEqual(t, len(s), MaxPartBytes)
				require.True(t, utf8.ValidString(s))
				if i < len(sent)-1 {
					posted += len(s)
				}
			}
			last := sent[len(sent)-1]
			body, note, ok := strings.Cut(last, "\n\n[answer truncated: ")
			require.True(t, ok, "the last part carries the note: %q", last[max(len(last)-80, 0):])
			posted += len(body)
			require.Equal(t, fmt.Sprintf("%d bytes more]", len(text)-posted+omitted), note)
			require.Equal(t, text[:posted], strings.Join(sent[:len(sent)-1], "")+body, "what is posted is the answer's start")
		})
	}
}

func TestReplyParts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"short"}, replyParts("short", 0), "no note when nothing is cut")
	require.Equal(t, []string{"short\n\n[answer truncated: 10 bytes more]"}, replyParts("short", 10), "bytes dropped before are noted")
	exact := strings.Repeat("x", MaxReplyParts*MaxPartBytes)
	require.Len(t, replyParts(exact, 0), MaxReplyParts)
	require.NotContains(t, strings.Join(replyParts(exact, 0), ""), "truncated", "a reply that fits is posted whole")
	over := replyParts(exact+"y", 0)
	require.Len(t, over, MaxReplyParts)
	// The last part gave up room for the note: that too is counted.
	require.True(t, strings.HasSuffix(over[MaxReplyParts-1], fmt.Sprintf("\n\n[answer truncated: %d bytes more]", 1+len(truncationNote(math.MaxInt)))), "%q", over[MaxReplyParts-1][MaxPartBytes-100:])
	for _, p := range over {
		require.LessOrEqual(t, len(p), MaxPartBytes)
	}
}

func FuzzReplyParts(f *testing.F) {
	f.Add("hello\nworld", 0, 20)
	f.Add(strings.Repeat("é", 20), 3, 9)
	f.Fuzz(func(t *testing.T, s string, omitted, repeat int) {
		if repeat < 1 || repeat > 200_000 || omitted < 0 {
			return
		}
		text := strings.Repeat(s, repeat)
		if len(text) > 512<<10 {
			return
		}
		parts := replyParts(text, omitted)
		if len(parts) > MaxReplyParts || len(parts) == 0 {
			t.Fatalf("%d parts", len(parts))
		}
		joined := strings.Join(parts, "")
		if joined != text || omitted > 0 {
			i := strings.LastIndex(joined, "\n\n[answer truncated: ")
			if i < 0 {
				t.Fatalf("a reply cut short has no note")
			}
			body, note := joined[:i], joined[i:]
			if !strings.HasPrefix(text, body) || note != truncationNote(len(text)-len(body)+omitted) {
				t.Fatalf("cut reply: body is no prefix, or the note %q is wrong", note)
			}
		}
		for _, p := range parts {
			if len(p) > MaxPartBytes {
				t.Fatalf("part of %d bytes", len(p))
			}
		}
	})
}
