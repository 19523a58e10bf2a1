package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// TestPipeline_roomRetirementAndNotices: an agent removed from a room
// while its messages are queued loses them locally (they were never
// settled, so Band still has them) and its binding; late messages of that
// room are not queued; added back, the room's unsettled messages come
// back through the catch-up. Local notices queue and settle without Band.
func TestPipeline_roomRetirementAndNotices(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	roomA, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "a", Agents: []string{"coder"}})
	require.NoError(t, err)
	roomB, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "b", Agents: []string{"coder"}})
	require.NoError(t, err)
	bindA, err := c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: roomA.ID})
	require.NoError(t, err)

	post := func(room, text string) string {
		t.Helper()
		sent, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" "+text, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		return sent.ID
	}
	inA := []string{post(roomA.ID, "one"), post(roomA.ID, "two")}
	inB := post(roomB.ID, "unbound")
	waitInbox := func(q apiclient.InboxQuery, want int) []wire.InboxMessage {
		t.Helper()
		var got []wire.InboxMessage
		require.Eventually(t, func() bool {
			in, err := c.Inbox(ctx, q)
			require.NoError(t, err)
			got = in.Messages
			return len(got) == want
		}, 20*time.Second, 10*time.Millisecond, "want %d messages for %+v, have %d", want, q, len(got))
		return got
	}
	waitInbox(apiclient.InboxQuery{Agent: "coder", Room: roomA.ID}, 2)
	waitInbox(apiclient.InboxQuery{Agent: "coder", Unrouted: true}, 1)

	// The owner removes the agent from room A.
	require.NoError(t, owner.RemoveChatParticipant(ctx, roomA.ID, agent.AgentID))
	waitInbox(apiclient.InboxQuery{Agent: "coder", Room: roomA.ID}, 0)
	_, err = c.Reply(ctx, inA[0], wire.ReplyRequest{Text: "too late"})
	require.ErrorContains(t, err, "not found")
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	for _, b := range agents[0].Bindings {
		require.NotEqual(t, bindA.ID, b.ID, "the binding retired with the room")
	}
	unrouted := waitInbox(apiclient.InboxQuery{Agent: "coder", Unrouted: true}, 1)
	require.Equal(t, inB, unrouted[0].ID, "the unrouted bucket holds exactly the unbound room's message")

	// Added back: the two unsettled messages come back (unrouted: the
	// binding went with the retirement), nothing was lost.
	require.NoError(t, c.RoomAdd(ctx, roomA.ID, wire.RoomAddRequest{Agent: "coder"}))
	back := waitInbox(apiclient.InboxQuery{Agent: "coder", Unrouted: true, Room: roomA.ID}, 2)
	require.Equal(t, inA, []string{back[0].ID, back[1].ID})

	// A local notice for room B waits unrouted, is delivered on bind, and
	// settles with an ack; a reply to it is refused.
	notice, err := c.Notice(ctx, wire.NoticeRequest{Agent: "coder", Room: roomB.ID, Text: "task 7 is yours"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(notice.ID, "jam-notice:"), notice.ID)
	waitInbox(apiclient.InboxQuery{Agent: "coder", Unrouted: true, Room: roomB.ID}, 2)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: roomB.ID})
	require.NoError(t, err)
	inboxB := waitInbox(apiclient.InboxQuery{Agent: "coder", Room: roomB.ID}, 2)
	require.Equal(t, []string{inB, notice.ID}, []string{inboxB[0].ID, inboxB[1].ID})
	require.Equal(t, "task 7 is yours", inboxB[1].Content)
	_, err = c.Reply(ctx, notice.ID, wire.ReplyRequest{Text: "ok"})
	require.ErrorContains(t, err, "local notice cannot be replied to")
	require.NoError(t, c.Ack(ctx, notice.ID, wire.AckRequest{}))
	waitInbox(apiclient.InboxQuery{Agent: "coder", Room: roomB.ID}, 1)
	page, err := owner.ChatMessages(ctx, roomB.ID, "", 100)
	require.NoError(t, err)
	for _, m := range page.Messages {
		require.NotContains(t, m.Content, "task 7", "a notice reached Band")
	}

	// A directed question wakes only its explicit recipient.
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: roomA.ID})
	require.NoError(t, err)
	res, err := c.Send(ctx, wire.SendRequest{Agent: "coder", Room: roomA.ID, Text: "should @" + agent.Handle + " do it?", Recipients: []string{st.Band.UserID}, Directed: true})
	require.NoError(t, err)
	require.Equal(t, []string{st.Band.UserID}, res.Mentions)
}
