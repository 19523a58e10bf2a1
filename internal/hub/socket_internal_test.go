package hub

import (
	"log/slog"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
)

// TestSocketOverflow shows a full outbound queue closes the socket (1013)
// instead of blocking the pusher. No writer runs, so the queue only fills.
func TestSocketOverflow(t *testing.T) {
	t.Parallel()
	s := newSocket(nil, principal{}, 2, slog.New(slog.DiscardHandler))
	ref := "1"
	s.joins["chat_room:r"] = &ref
	for range 2 {
		s.push("chat_room:r", "message_created", []byte(`{}`))
	}
	require.False(t, s.isClosing())
	s.push("chat_room:r", "message_created", []byte(`{}`))
	require.True(t, s.isClosing())
	require.Equal(t, websocket.StatusTryAgainLater, s.code)
	select {
	case <-s.closeCh:
	default:
		t.Fatal("close was not signalled to the writer")
	}
	s.push("chat_room:r", "message_created", []byte(`{}`)) // ignored once closing
	require.Len(t, s.out, 2)

	// Pushes carry the join_ref and a null ref.
	f, err := phoenix.Decode(<-s.out)
	require.NoError(t, err)
	require.Equal(t, "1", phoenix.RefString(f.JoinRef))
	require.Nil(t, f.Ref)
	require.Equal(t, "chat_room:r", f.Topic)
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Alpha":           "alpha",
		"Report Bot":      "report-bot",
		"  --Weird__Name": "weird-name",
		"Zoë 2":           "zo-2",
		"!!!":             "",
	} {
		require.Equal(t, want, slugify(in), in)
	}
}

func TestBlank(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"":                   true,
		" \t\n":              true,
		"\u200b\u200d\ufeff": true,
		"\u2800\u3164":       true,
		"x":                  false,
		" a ":                false,
		"😀":                  false,
	} {
		require.Equal(t, want, blank(in), "%q", in)
	}
}
