package hub_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

func TestSocketHandshake(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	other := b.register("Other")
	ownerID := b.ownerID()

	t.Run("vsn required", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.dial(url.Values{"api_key": {a.Key}}, nil)
		require.NoError(t, err)
		c.closed(websocket.StatusInternalError)
	})
	refused := []struct {
		name   string
		query  url.Values
		header http.Header
		status int
		code   string
	}{
		{name: "no key", query: url.Values{"vsn": {"2.0.0"}}, status: 401, code: "unauthorized"},
		{name: "bad key", query: url.Values{"vsn": {"2.0.0"}, "api_key": {"band_a_nope"}}, status: 401, code: "unauthorized"},
		{name: "header wins over query", query: url.Values{"vsn": {"2.0.0"}, "api_key": {a.Key}}, header: http.Header{"X-Api-Key": {"band_a_nope"}}, status: 401, code: "unauthorized"},
		{name: "agent_id of another agent", query: url.Values{"vsn": {"2.0.0"}, "api_key": {a.Key}, "agent_id": {other.ID}}, status: 403, code: "forbidden"},
		{name: "agent_id not a uuid", query: url.Values{"vsn": {"2.0.0"}, "api_key": {b.owner}, "agent_id": {"x"}}, status: 403, code: "forbidden"},
		{name: "bad on_conflict", query: url.Values{"vsn": {"2.0.0"}, "api_key": {a.Key}, "on_conflict": {"maybe"}}, status: 400, code: "invalid_on_conflict"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, resp, err := b.dial(tt.query, tt.header)
			require.Error(t, err)
			require.NotNil(t, resp)
			require.Equal(t, tt.status, resp.StatusCode)
			var e protocol.ErrorBody
			raw, _ := io.ReadAll(resp.Body)
			require.NoError(t, json.Unmarshal(raw, &e), string(raw))
			require.Equal(t, tt.code, e.Error.Code)
		})
	}
	t.Run("header key alone", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.dial(url.Values{"vsn": {"2.0.0"}}, http.Header{"X-Api-Key": {a.Key}})
		require.NoError(t, err)
		require.Equal(t, "ok", c.join(protocol.Topic(protocol.TopicAgentRooms, a.ID)).Status)
	})
	t.Run("owner key with agent_id acts as the agent", func(t *testing.T) {
		t.Parallel()
		c, _, err := b.dial(url.Values{"vsn": {"2.0.0"}, "api_key": {b.owner}, "agent_id": {other.ID}}, nil)
		require.NoError(t, err)
		require.Equal(t, "ok", c.join(protocol.Topic(protocol.TopicAgentControl, other.ID)).Status)
		require.Equal(t, "error", c.join(protocol.Topic(protocol.TopicUserRooms, ownerID)).Status)
	})
}

func TestSocketJoin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb := b.register("Alpha"), b.register("Beta")
	room := b.room(a)
	ownerID := b.ownerID()
	agent := b.socket(a.Key)
	user := b.socket(b.owner)

	tests := []struct {
		name   string
		c      *wsClient
		topic  string
		reason string // "" means the join succeeds
	}{
		{"agent chat_room of its room", agent, chatTopic(room), ""},
		{"agent room_participants", agent, protocol.Topic(protocol.TopicRoomParticipants, room), ""},
		{"agent room_activity", agent, protocol.Topic(protocol.TopicRoomActivity, room), ""},
		{"agent own agent_rooms", agent, protocol.Topic(protocol.TopicAgentRooms, a.ID), ""},
		{"agent own agent_contacts", agent, protocol.Topic(protocol.TopicAgentContacts, a.ID), ""},
		{"agent other agent_control", agent, protocol.Topic(protocol.TopicAgentControl, bb.ID), "unauthorized"},
		{"agent user_rooms", agent, protocol.Topic(protocol.TopicUserRooms, ownerID), "unauthorized"},
		{"agent user_contacts", agent, protocol.Topic(protocol.TopicUserContacts, ownerID), "unauthorized"},
		{"user own user_rooms", user, protocol.Topic(protocol.TopicUserRooms, ownerID), ""},
		{"user tasks", user, protocol.Topic(protocol.TopicTasks, ownerID), ""},
		{"user agent_rooms", user, protocol.Topic(protocol.TopicAgentRooms, a.ID), "unauthorized"},
		{"user chat_room", user, chatTopic(room), ""},
		{"non-participant chat_room", b.socket(bb.Key), chatTopic(room), "unauthorized"},
		{"unknown room", user, chatTopic("00000000-0000-4000-8000-000000000000"), "unauthorized"},
		{"unknown prefix", user, "lobby:1", "unmatched topic"},
		{"no id", user, "chat_room", "unmatched topic"},
	}
	for _, tt := range tests {
		r := tt.c.join(tt.topic)
		if tt.reason == "" {
			require.Equal(t, phoenix.StatusOK, r.Status, tt.name)
			require.JSONEq(t, `{}`, string(r.Response), tt.name)
			continue
		}
		require.Equal(t, phoenix.StatusError, r.Status, tt.name)
		require.JSONEq(t, `{"reason":"`+tt.reason+`"}`, string(r.Response), tt.name)
	}

	// Heartbeats are answered on the phoenix topic with a null join_ref.
	require.Equal(t, phoenix.StatusOK, user.request(nil, "phoenix", "heartbeat").Status)

	// After a leave, the channel gets no pushes and refuses events.
	ref := "1"
	require.Equal(t, phoenix.StatusOK, user.request(&ref, chatTopic(room), phoenix.EventLeave).Status)
	require.Equal(t, phoenix.StatusError, user.request(&ref, chatTopic(room), "shout").Status, "events on unjoined topics are refused")
	b.send(b.owner, "/api/v1/me", room, "unseen", a.Handle)
	agent.expect(chatTopic(room), protocol.EventMessageCreated)
	// The next frame the user socket sees is the reply to this heartbeat,
	// not the message.
	require.Equal(t, phoenix.StatusOK, user.request(nil, "phoenix", "heartbeat").Status)
}

func TestSocketPushes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb := b.register("Alpha"), b.register("Beta")
	ownerID := b.ownerID()
	user := b.socket(b.owner, protocol.Topic(protocol.TopicUserRooms, ownerID))
	agentA := b.socket(a.Key, protocol.Topic(protocol.TopicAgentRooms, a.ID))

	room := b.room()
	var ev protocol.RoomEvent
	require.NoError(t, json.Unmarshal(user.expect(protocol.Topic(protocol.TopicUserRooms, ownerID), protocol.EventRoomAdded).Payload, &ev))
	require.Equal(t, room, ev.ID)
	require.Equal(t, "direct", ev.Type)

	user2 := b.socket(b.owner, chatTopic(room), protocol.Topic(protocol.TopicRoomParticipants, room))
	b.add(b.owner, "/api/v1/me", room, a.ID)
	require.NoError(t, json.Unmarshal(agentA.expect(protocol.Topic(protocol.TopicAgentRooms, a.ID), protocol.EventRoomAdded).Payload, &ev))
	require.Equal(t, room, ev.ID)
	var p protocol.Participant
	require.NoError(t, json.Unmarshal(user2.expect(protocol.Topic(protocol.TopicRoomParticipants, room), protocol.EventParticipantAdded).Payload, &p))
	require.Equal(t, a.ID, p.ID)
	require.Equal(t, "Agent", p.Type)
	require.NotNil(t, p.IsExternal)
	b.add(b.owner, "/api/v1/me", room, bb.ID)
	user2.expect(protocol.Topic(protocol.TopicRoomParticipants, room), protocol.EventParticipantAdded)

	require.Equal(t, phoenix.StatusOK, agentA.join(chatTopic(room)).Status)
	m := b.send(b.owner, "/api/v1/me", room, "@Alpha go", a.Handle)
	require.Equal(t, m.ID, user2.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)
	require.Equal(t, m.ID, agentA.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)

	// Delivery-status changes reach users as message_updated.
	b.call("POST", "/api/v1/agent/chats/"+room+"/messages/"+m.ID+"/processing", a.Key, nil, 200, nil)
	upd := user2.expectMessage(chatTopic(room), protocol.EventMessageUpdated)
	require.Equal(t, "processing", upd.Metadata.DeliveryStatus[a.ID].Status)
	b.call("POST", "/api/v1/agent/chats/"+room+"/messages/"+m.ID+"/processed", a.Key, nil, 200, nil)
	upd = user2.expectMessage(chatTopic(room), protocol.EventMessageUpdated)
	require.Equal(t, "processed", upd.Metadata.DeliveryStatus[a.ID].Status)

	// A's own message is not pushed back to it; the user sees it.
	own := b.send(a.Key, "/api/v1/agent", room, "done", "owner")
	require.Equal(t, own.ID, user2.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)

	// Removal: participant_removed, room_removed, then phx_close on the
	// room's channels.
	b.call("DELETE", "/api/v1/me/chats/"+room+"/participants/"+a.ID, b.owner, nil, 200, nil)
	removed := user2.expect(protocol.Topic(protocol.TopicRoomParticipants, room), protocol.EventParticipantRemoved)
	require.JSONEq(t, `{"id":"`+a.ID+`","type":"Agent"}`, string(removed.Payload))
	require.NoError(t, json.Unmarshal(agentA.expect(protocol.Topic(protocol.TopicAgentRooms, a.ID), protocol.EventRoomRemoved).Payload, &ev))
	require.Equal(t, room, ev.ID)
	agentA.expect(chatTopic(room), phoenix.EventClose)
	require.Equal(t, phoenix.StatusError, agentA.join(chatTopic(room)).Status)
}

func TestSocketFaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	room := b.room(a)
	healthy := b.socket(b.owner, chatTopic(room))

	faults := []struct {
		name string
		send func(c *wsClient)
		code websocket.StatusCode
	}{
		{"malformed frame", func(c *wsClient) { c.write([]byte(`["1","1","phoenix"]`)) }, websocket.StatusPolicyViolation},
		{"not json", func(c *wsClient) { c.write([]byte(`hello`)) }, websocket.StatusPolicyViolation},
		{"binary frame", func(c *wsClient) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			require.NoError(t, c.conn.Write(ctx, websocket.MessageBinary, []byte(`[null,"1","phoenix","heartbeat",{}]`)))
		}, websocket.StatusUnsupportedData},
		{"oversize frame", func(c *wsClient) {
			c.write([]byte(`[null,"1","phoenix","heartbeat",{"x":"` + strings.Repeat("x", phoenix.MaxFrameBytes) + `"}]`))
		}, websocket.StatusMessageTooBig},
	}
	for _, f := range faults {
		c := b.socket(b.owner, chatTopic(room))
		f.send(c)
		c.closed(f.code)
		// Every other socket keeps working.
		m := b.send(b.owner, "/api/v1/me", room, f.name, a.Handle)
		require.Equal(t, m.ID, healthy.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID, f.name)
	}
}

func TestSocketHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *hub.Config) { c.HeartbeatTimeout = time.Second })
	a := b.register("Alpha")
	room := b.room(a)
	c := b.socket(a.Key, chatTopic(room))
	start := time.Now()
	_, err := c.read()
	require.Error(t, err, "a silent socket is dropped")
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "not closed at once")

	// A socket that heartbeats stays open past the timeout.
	alive := b.socket(a.Key, chatTopic(room))
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Equal(t, phoenix.StatusOK, alive.request(nil, "phoenix", "heartbeat").Status)
		hb := time.NewTimer(200 * time.Millisecond) // the client's heartbeat cadence, not a synchronisation
		<-hb.C
	}
	m := b.send(b.owner, "/api/v1/me", room, "still here", a.Handle)
	require.Equal(t, m.ID, alive.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)
}

func TestSocketSupersede(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	room := b.room(a)
	control := protocol.Topic(protocol.TopicAgentControl, a.ID)
	old := b.socket(a.Key, control, chatTopic(room))

	_, resp, err := b.dial(url.Values{"vsn": {"2.0.0"}, "api_key": {a.Key}, "on_conflict": {"reject"}}, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusConflict, resp.StatusCode)

	newer := b.socket(a.Key, chatTopic(room))
	f := old.expect(control, protocol.EventSupersede)
	var sup protocol.Supersede
	require.NoError(t, json.Unmarshal(f.Payload, &sup))
	require.False(t, sup.Retryable)
	require.NotEmpty(t, sup.Reason)
	require.NotEmpty(t, sup.Message)
	old.closed(websocket.StatusPolicyViolation)

	m := b.send(b.owner, "/api/v1/me", room, "to the new socket", a.Handle)
	require.Equal(t, m.ID, newer.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)
}

func TestStopClosesSockets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.socket(b.owner)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.hub.Stop(ctx) }()
	c.closed(websocket.StatusServiceRestart)
	require.NoError(t, <-done)
	require.NoError(t, b.hub.Stop(ctx), "stop twice")
	// Handler answers 503 once stopped.
	rec := httptest.NewRecorder()
	b.hub.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/me/profile", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	b.start() // for the cleanup's Stop
}
