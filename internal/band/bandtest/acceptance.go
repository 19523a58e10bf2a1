package bandtest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func chatRoom(room string) string { return "chat_room:" + room }

// testAcceptance is the end-to-end scenario: an owner sets up two agents
// in a room, mentions one, and that agent processes the message and
// replies. With Target.Restart set, the server restarts between every pair
// of steps; the steps then check that REST state survived and that the
// server closed the old sockets and accepts new ones.
//
// The negative check that B is not pushed A's message is one step (post to
// A, then to B, and B's first push must be the second message), because a
// restart in between would close B's socket and prove nothing.
func testAcceptance(t *testing.T, e *env) {
	var (
		a, b                     Agent
		room                     string
		original, probe, reply   string
		sa, sb                   *socket
		restarts, socketRestarts int
	)
	owner := e.Owner

	// connect opens the agents' sockets and joins their topics, again after
	// each restart. Sockets of an earlier server must have been closed by it.
	connect := func() {
		if sa != nil && socketRestarts == restarts {
			return
		}
		if sa != nil {
			sa.awaitClosed(t)
			sb.awaitClosed(t)
			sa.close()
			sb.close()
		}
		sa = e.socketFor(t, "agent A", a.Key, nil)
		sa.mustJoin(t, chatRoom(room))
		sa.mustJoin(t, "agent_rooms:"+a.ID)
		sb = e.socketFor(t, "agent B", b.Key, nil)
		sb.mustJoin(t, chatRoom(room))
		socketRestarts = restarts
	}

	steps := []struct {
		name string
		run  func()
	}{
		{"owner registers agent A; its key is shown once", func() {
			a = e.RegisterAgent(t, "a")
			r := e.owner.do(t, http.MethodGet, "/api/v1/me/agents", nil).expect(t, http.StatusOK)
			require.NotContains(t, string(r.Body), a.Key, "GET /me/agents must not show an agent's key again")
		}},
		{"owner registers agent B", func() { b = e.RegisterAgent(t, "b") }},
		{"owner creates a room", func() { room = e.CreateRoom(t, "acceptance") }},
		{"owner adds A", func() { e.AddParticipant(t, room, a.ID) }},
		{"owner adds B", func() { e.AddParticipant(t, room, b.ID) }},
		{"owner and A list the participants", func() {
			ps, _ := list[participant](t, e.owner.do(t, http.MethodGet, meRoom(room)+"/participants", nil).expect(t, http.StatusOK))
			requireParticipants(t, ps, owner.ID, a.ID, b.ID)
			agentView := data[[]participant](t, e.agent(a).do(t, http.MethodGet, agentRoom(room)+"/participants", nil).expect(t, http.StatusOK))
			requireParticipants(t, agentView, owner.ID, a.ID, b.ID)
		}},
		{"A and B connect and join", connect},
		{"owner mentions A by handle; A is pushed the message and B is not", func() {
			connect()
			sent := send(t, e.owner, meMessages(room), "@"+a.Handle+" hi", Mention{Handle: a.Handle})
			original = sent.ID
			require.Len(t, sent.Recipients, 1, "recipients of a message mentioning A")
			require.Equal(t, a.ID, sent.Recipients[0].ID, "recipient id")
			require.Equal(t, a.Handle, sent.Recipients[0].Handle, "recipient handle")

			m := sa.awaitMessage(t, chatRoom(room), original)
			require.Contains(t, m.Content, "@[["+a.ID+"]]", "delivered content must carry A's mention token")
			require.Equal(t, owner.ID, m.SenderID, "sender_id")
			require.Equal(t, "User", m.SenderType, "sender_type")
			require.True(t, m.mentions(a.ID), "metadata.mentions must hold A: %+v", m.Metadata.Mentions)
			if m.ChatRoomID != "" {
				require.Equal(t, room, m.ChatRoomID, "chat_room_id")
			}

			probe = send(t, e.owner, meMessages(room), "@"+b.Handle+" probe", Mention{ID: b.ID}).ID
			first := sb.checkMessagePush(t, sb.nextPush(t), chatRoom(room))
			require.Equal(t, probe, first.ID, "B's first push must be the message that mentions B, not A's (%q)", first.Content)
		}},
		{"A claims the message (attempt 1)", func() {
			st := data[messageStatus](t, e.agent(a).do(t, http.MethodPost, agentMessage(room, original, "processing"), nil).expect(t, http.StatusOK))
			require.Equal(t, messageStatus{ID: original, Status: "processing", AttemptNumber: 1, Success: true}, st)
		}},
		{"A replies mentioning the owner", func() {
			sent := send(t, e.agent(a), agentMessages(room), "@"+owner.Handle+" done", Mention{ID: owner.ID})
			reply = sent.ID
			require.Len(t, sent.Recipients, 1, "recipients of A's reply")
			require.Equal(t, owner.ID, sent.Recipients[0].ID, "recipient of A's reply")
		}},
		{"A marks the message processed", func() {
			st := data[messageStatus](t, e.agent(a).do(t, http.MethodPost, agentMessage(room, original, "processed"), nil).expect(t, http.StatusOK))
			require.Equal(t, messageStatus{ID: original, Status: "processed", AttemptNumber: 1, Success: true}, st)
		}},
		{"A's queue is empty and /next is 204", func() {
			ms, _ := list[message](t, e.agent(a).do(t, http.MethodGet, agentMessages(room), nil).expect(t, http.StatusOK))
			require.Empty(t, ids(ms), "A's default queue after processing")
			r := e.agent(a).do(t, http.MethodGet, agentMessages(room)+"/next", nil).expect(t, http.StatusNoContent)
			require.Empty(t, strings.TrimSpace(string(r.Body)), "204 has no body")
		}},
		{"owner's history is newest first and shows the delivery status", func() {
			ms, _ := list[message](t, e.owner.do(t, http.MethodGet, meMessages(room), nil).expect(t, http.StatusOK))
			require.Equal(t, []string{reply, probe, original}, ids(ms), "owner history, newest first: A's reply, the probe to B, the original")
			d, ok := ms[2].Metadata.DeliveryStatus[a.ID]
			require.True(t, ok, "the original's metadata.delivery_status must have A: %+v", ms[2].Metadata)
			require.Equal(t, "processed", d.Status, "delivery_status[A].status")
			require.Equal(t, a.ID, ms[0].SenderID, "the reply's sender")
			require.Equal(t, "Agent", ms[0].SenderType, "the reply's sender_type")
		}},
		{"A's context holds the mention and its reply, oldest first", func() {
			ms, _ := list[message](t, e.agent(a).do(t, http.MethodGet, agentRoom(room)+"/context", nil).expect(t, http.StatusOK))
			require.Equal(t, []string{original, reply}, ids(ms), "A's context")
		}},
	}
	for i, s := range steps {
		if i > 0 && e.target.Restart != nil {
			e.target.Restart(t)
			restarts++
			// A POST is not retried on a pooled connection the old server
			// closed, so start afresh rather than race its FIN.
			e.owner.hc.CloseIdleConnections()
		}
		t.Logf("step %d/%d: %s", i+1, len(steps), s.name)
		s.run()
	}
}

// requireParticipants checks the room's participants: the owner with role
// owner, and the agents as agents.
func requireParticipants(t *testing.T, ps []participant, owner string, agents ...string) {
	t.Helper()
	byID := map[string]participant{}
	for _, p := range ps {
		byID[p.ID] = p
	}
	o, ok := byID[owner]
	require.True(t, ok, "the owner must be a participant: %+v", ps)
	require.Equal(t, "User", o.Type, "owner participant type")
	require.Equal(t, "owner", o.Role, "owner participant role")
	for _, id := range agents {
		p, ok := byID[id]
		require.True(t, ok, "agent %s must be a participant: %+v", id, ps)
		require.Equal(t, "Agent", p.Type, "agent participant type")
	}
	require.Len(t, ps, 1+len(agents), "participants: %+v", ps)
}
