package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestEngine_noticeIsDeliveredAndAckedWithoutBand(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	id, err := b.eng.Notice(ctx, NoticeParams{WorkspaceID: b.ws, Peer: b.peer, Room: b.room, Text: "task 7 was assigned to you"})
	require.NoError(t, err)
	require.True(t, id.IsNotice(), "%s", id)

	d := b.delivered(t)
	require.Equal(t, id, d.Row.MessageID)
	b.waitEvent(t, EventDelivered, string(id))
	pg, err := b.eng.Inbox(ctx, InboxParams{WorkspaceID: b.ws})
	items := pg.Items
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "task 7 was assigned to you", items[0].Content)
	require.Equal(t, noticeSender, items[0].SenderName)

	_, err = b.eng.Reply(ctx, ReplyParams{WorkspaceID: b.ws, Peer: b.peer, MessageID: id, Text: "ok"})
	require.ErrorIs(t, err, ErrNoticeReply)
	require.NoError(t, b.eng.Ack(ctx, b.ws, b.peer, id))
	_, err = b.st.QueueGet(ctx, b.ws, b.peer, id)
	require.ErrorIs(t, err, jam.ErrNotFound, "settled locally")
	for _, c := range b.agent.Calls() {
		require.NotContains(t, c, string(id), "a notice touched Band: %v", b.agent.Calls())
	}

	_, err = b.eng.Notice(ctx, NoticeParams{WorkspaceID: b.ws, Peer: b.peer, Room: b.room, Text: "  "})
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = b.eng.Notice(ctx, NoticeParams{WorkspaceID: b.ws, Peer: jam.PeerKey{Profile: "local", Scope: "nobody"}, Room: b.room, Text: "x"})
	require.ErrorIs(t, err, jam.ErrUnavailable)
}

func TestEngine_retireRoomDropsItsMessagesAndLateOnes(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	queued := b.inbound(t, 1, "one")
	b.delivered(t)
	b.waitEvent(t, EventDelivered, queued)

	res, err := b.eng.RetireRoom(ctx, b.ws, b.peer, b.room)
	require.NoError(t, err)
	require.Equal(t, 1, res.Queued)
	require.NotEmpty(t, res.Binding)
	_, err = b.st.QueueGet(ctx, b.ws, b.peer, jam.PlatformMessageID(queued))
	require.ErrorIs(t, err, jam.ErrNotFound)
	_, err = b.st.BindingGet(ctx, b.ws, res.Binding)
	require.ErrorIs(t, err, jam.ErrNotFound, "the binding is retired with the room")

	// A message of the retired room arriving later is dropped: no queue
	// row, no claim, and its spool budget comes back.
	late := b.inbound(t, 2, "late")
	b.waitEvent(t, EventDroppedRetired, late)
	_, err = b.st.QueueGet(ctx, b.ws, b.peer, jam.PlatformMessageID(late))
	require.ErrorIs(t, err, jam.ErrNotFound)
	for _, c := range b.agent.Calls() {
		require.False(t, strings.HasSuffix(c, late), "a late message was claimed: %v", b.agent.Calls())
	}
	rows, err := b.st.QueueList(ctx, store.QueueListParams{WorkspaceID: b.ws, Peer: b.peer})
	require.NoError(t, err)
	require.Empty(t, rows)

	// Added again: the room's messages queue again (unrouted, since the
	// binding went with the retirement).
	require.NoError(t, b.eng.RestoreRoom(ctx, b.ws, b.peer, b.room))
	again := b.inbound(t, 3, "again")
	b.waitEvent(t, EventQueuedUnrouted, again)
}

func TestEngine_reconcileRetiresRoomsTheAgentLeft(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	id := b.inbound(t, 1, "one")
	b.waitEvent(t, EventDelivered, id)

	gone, err := b.eng.ReconcileRooms(ctx, b.ws, b.peer, []jam.RoomID{b.room}, time.Now())
	require.NoError(t, err)
	require.Empty(t, gone, "the agent is still in the room")
	// A list that began before the room was bound and its message came in
	// does not judge the room: it may predate the agent joining it.
	gone, err = b.eng.ReconcileRooms(ctx, b.ws, b.peer, nil, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Empty(t, gone, "local state newer than the list is kept")
	_, err = b.st.QueueGet(ctx, b.ws, b.peer, jam.PlatformMessageID(id))
	require.NoError(t, err)
	gone, err = b.eng.ReconcileRooms(ctx, b.ws, b.peer, nil, time.Now())
	require.NoError(t, err)
	require.Equal(t, []jam.RoomID{b.room}, gone)
	_, err = b.st.QueueGet(ctx, b.ws, b.peer, jam.PlatformMessageID(id))
	require.ErrorIs(t, err, jam.ErrNotFound)

	// Present again at the next connect: restored before the catch-up.
	_, err = b.eng.ReconcileRooms(ctx, b.ws, b.peer, []jam.RoomID{b.room}, time.Now())
	require.NoError(t, err)
	retired, err := b.st.RoomRetiredList(ctx, b.ws, b.peer)
	require.NoError(t, err)
	require.Empty(t, retired)
}

// TestEngine_batchKeepsOrderAroundMarkers: a run of messages with system
// markers among them is moved in batches and still delivered in order.
func TestEngine_batchKeepsOrderAroundMarkers(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var want []string
	for i := 1; i <= 40; i++ {
		if i%7 == 0 {
			b.inbound(t, i, "[system:joined]")
			continue
		}
		want = append(want, b.inbound(t, i, "m"))
	}
	for _, w := range want {
		require.Equal(t, w, string(b.delivered(t).Row.MessageID))
	}
}

func TestEngine_directedSendWakesOnlyExplicitRecipients(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := "0190a1b2-0000-4000-8000-00000000000c"
	h := "owner/reviewer"
	b.agent.Roster = append(b.agent.Roster, protocol.Participant{ID: other, Type: "Agent", Handle: &h})

	res, err := b.eng.Send(t.Context(), SendParams{WorkspaceID: b.ws, Peer: b.peer, Room: b.room,
		Text: "should @reviewer look at this?", Recipients: []string{ownerID}, Directed: true})
	require.NoError(t, err)
	require.Equal(t, []protocol.Mention{{ID: ownerID}}, res.Mentions, "the agent named in the text is not woken")
	require.Equal(t, "@[["+ownerID+"]] should @reviewer look at this?", res.Body)

	// The same text undirected resolves the handle.
	res, err = b.eng.Send(t.Context(), SendParams{WorkspaceID: b.ws, Peer: b.peer, Room: b.room,
		Text: "should @reviewer look at this?", Recipients: []string{ownerID}})
	require.NoError(t, err)
	require.Equal(t, []protocol.Mention{{ID: ownerID}, {ID: other}}, res.Mentions)

	_, err = b.eng.Send(t.Context(), SendParams{WorkspaceID: b.ws, Peer: b.peer, Room: b.room, Text: "@reviewer?", Directed: true})
	require.ErrorIs(t, err, ErrNoRecipient)
}

// TestEngine_attachedActivityFollowsTakenMessages: taking messages from
// the inbox opens the working indicator of their room; it closes when the
// last one taken is settled, not before.
func TestEngine_attachedActivityFollowsTakenMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := t.Context()
	b.agent.Activity = make(chan bool, 16)
	first, second := b.inbound(t, 1, "one"), b.inbound(t, 2, "two")
	b.waitEvent(t, EventDelivered, first)
	b.waitEvent(t, EventDelivered, second)
	select {
	case w := <-b.agent.Activity:
		t.Fatalf("activity %v before the agent took anything", w)
	default:
	}
	pg, err := b.eng.Wait(ctx, InboxParams{WorkspaceID: b.ws})
	items := pg.Items
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.True(t, <-b.agent.Activity, "taking messages opens the indicator")

	require.NoError(t, b.eng.Ack(ctx, b.ws, b.peer, jam.PlatformMessageID(first)))
	_, err = b.eng.Reply(ctx, ReplyParams{WorkspaceID: b.ws, Peer: b.peer, MessageID: jam.PlatformMessageID(second), Text: "done"})
	require.NoError(t, err)
	// Refreshes may come meanwhile (the interval is 3 s); the clear comes
	// once, after the last settlement.
	for w := range b.agent.Activity {
		if !w {
			break
		}
	}
	calls := b.agent.Calls()
	last := -1
	for i, c := range calls {
		if c == "activity false" {
			last = i
		}
	}
	require.Greater(t, last, indexOf(calls, "processed "+second), "cleared after the last settlement: %v", calls)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
