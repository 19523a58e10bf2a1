package daemon_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// TestSession_messagesNoteQueueAndSteer: a person sends to an owned
// session directly. A note starts no turn; the next queued message's turn
// carries it (the demo agent restates its prompt, so the note shows in the
// turn's output) and consumes it; a steer while a turn runs is queued,
// since ACP cannot steer; and nothing is posted or settled on Band.
func TestSession_messagesNoteQueueAndSteer(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	c := o.r.client
	ctx := t.Context()
	var session wire.Session
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) == 1 {
			session = ss[0]
		}
		return len(ss) == 1
	}, 30*time.Second, 10*time.Millisecond, "the room's session")

	note, err := c.SessionSend(ctx, session.ID, wire.SessionSendRequest{Text: "prefer small commits", Routing: "note"})
	require.NoError(t, err)
	require.Equal(t, "note", note.RoutingEffective)
	require.Empty(t, note.Turn)
	turns, err := c.Turns(ctx, session.ID)
	require.NoError(t, err)
	require.Empty(t, turns, "a note starts no turn")

	first, err := c.SessionSend(ctx, session.ID, wire.SessionSendRequest{Text: "[slow] tidy the parser"})
	require.NoError(t, err)
	require.Equal(t, "queue", first.RoutingEffective, "queue is the default")
	require.NotEmpty(t, first.Turn)
	waitTurn(t, c, session.ID, first.Turn, "running", "succeeded")

	steer, err := c.SessionSend(ctx, session.ID, wire.SessionSendRequest{Text: "and the lexer", Routing: "steer"})
	require.NoError(t, err)
	require.Equal(t, "queue", steer.RoutingEffective, "ACP cannot steer a running turn: the steer is queued")
	require.Equal(t, "steer", steer.Message.Requested)
	require.NotEmpty(t, steer.Turn)

	waitTurn(t, c, session.ID, first.Turn, "succeeded")
	waitTurn(t, c, session.ID, steer.Turn, "succeeded")
	out1, out2 := turnText(t, c, first.Turn), turnText(t, c, steer.Turn)
	require.Contains(t, out1, "prefer small commits", "the note reached the next turn")
	require.Contains(t, out1, "tidy the parser")
	require.Contains(t, out2, "and the lexer")
	require.NotContains(t, out2, "prefer small commits", "a note reaches one turn")

	msgs, err := c.SessionMessages(ctx, session.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	require.Equal(t, first.Turn, msgs[0].Turn, "the note was consumed by the turn that carried it")
	require.False(t, msgs[0].Consumed.IsZero())
	for _, m := range msgs {
		require.Empty(t, m.Source, "sent directly, not through Band")
	}

	// Nothing went to Band: the agent posted nothing in the room, and
	// nothing waits in its inbox.
	page, err := o.owner.ChatMessages(ctx, o.room.ID, "", 50)
	require.NoError(t, err)
	for _, m := range page.Messages {
		require.NotEqual(t, o.agent.AgentID, m.SenderID, "the agent posted %q", m.Content)
	}
	in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "demo"})
	require.NoError(t, err)
	require.Empty(t, in.Messages)

	_, err = c.SessionSend(ctx, session.ID, wire.SessionSendRequest{Text: "x", Routing: "shout"})
	require.ErrorContains(t, err, "routing")
	_, err = c.SessionSend(ctx, "sess_0000000000000000000000000", wire.SessionSendRequest{Text: "x"})
	require.Error(t, err)
}

// waitTurn waits until the session's turn is in one of states.
func waitTurn(t *testing.T, c *apiclient.Client, session, turn string, states ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		turns, err := c.Turns(t.Context(), session)
		require.NoError(t, err)
		for _, tr := range turns {
			if tr.ID == turn {
				require.NotContains(t, []string{"failed", "cancelled", "interrupted"}, tr.State, "turn %s: %s", turn, tr.Reason)
				return slices.Contains(states, tr.State)
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "turn %s %v", turn, states)
}

// turnText is the text a turn streamed.
func turnText(t *testing.T, c *apiclient.Client, turn string) string {
	t.Helper()
	out, err := c.TurnOutput(t.Context(), turn)
	require.NoError(t, err)
	require.True(t, out.Kept)
	var b strings.Builder
	for _, u := range out.Updates {
		if u.Kind == "text" {
			b.WriteString(u.Text)
		}
	}
	return b.String()
}
