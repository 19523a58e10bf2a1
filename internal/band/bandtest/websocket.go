package bandtest

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
)

func testWebSocket(t *testing.T, newEnv func(*testing.T) *env) {
	t.Run("UpgradeRefusals", func(t *testing.T) {
		t.Parallel()
		testUpgradeRefusals(t, newEnv(t))
	})
	t.Run("JoinAuthorization", func(t *testing.T) {
		t.Parallel()
		testJoinAuthorization(t, newEnv(t))
	})
	t.Run("Heartbeat", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		a := e.RegisterAgent(t, "hb")
		s := e.socketFor(t, "agent", a.Key, nil)
		for range 3 { // replies are per heartbeat, not once per socket
			r, _ := s.request(t, nil, phoenix.TopicPhoenix, phoenix.EventHeartbeat)
			require.Equal(t, phoenix.StatusOK, r.Status, "heartbeat reply: %s", r.Response)
		}
	})
	t.Run("MalformedFrame", func(t *testing.T) {
		t.Parallel()
		testMalformedFrame(t, newEnv)
	})
	t.Run("Leave", func(t *testing.T) {
		t.Parallel()
		testLeave(t, newEnv(t))
	})
	t.Run("SecondSocketSupersedesFirst", func(t *testing.T) {
		t.Parallel()
		testSupersede(t, newEnv(t))
	})
}

// testUpgradeRefusals checks sockets the server must not serve.
func testUpgradeRefusals(t *testing.T, e *env) {
	a := e.RegisterAgent(t, "upgrade")
	base := socketBase(e.URL())
	t.Run("missing vsn", func(t *testing.T) {
		t.Parallel()
		// Band fails such a connection with close code 1011; refusing the
		// upgrade outright is as good.
		s, res, err := dialSocket(t, "no vsn", base+"?"+url.Values{"api_key": {a.Key}}.Encode(), nil)
		if err != nil {
			require.NotNil(t, res, "dial without vsn: %v", err)
			require.True(t, res.StatusCode >= 400 && res.StatusCode < 500, "upgrade without vsn: want a 4xx refusal, got %s", describeResponse(res))
			return
		}
		// The server may close the socket before the heartbeat is written:
		// then the write fails and the close code below says why.
		hb, err := phoenix.Frame{Ref: phoenix.Ref("1"), Topic: phoenix.TopicPhoenix, Event: phoenix.EventHeartbeat}.Encode()
		require.NoError(t, err)
		wctx, wcancel := context.WithTimeout(t.Context(), waitTimeout)
		_ = s.conn.Write(wctx, websocket.MessageText, hb)
		wcancel()
		deadline := time.After(waitTimeout)
		for {
			f, ok := s.next(t, deadline, "close of a socket without vsn")
			if !ok {
				require.Equal(t, websocket.StatusCode(1011), websocket.CloseStatus(s.readErr), "a socket without vsn must close with 1011 (got %v)", s.readErr)
				return
			}
			require.NotEqual(t, phoenix.EventReply, f.Event, "a socket without vsn=2.0.0 was served: %s", describe([]phoenix.Frame{f}))
		}
	})
	cases := []struct {
		name  string
		query url.Values
	}{
		{name: "unknown key", query: url.Values{"api_key": {"band_a_bandtest_not_a_key"}, "vsn": {"2.0.0"}}},
		{name: "no key", query: url.Values{"vsn": {"2.0.0"}}},
		{name: "agent_id without a key", query: url.Values{"agent_id": {a.ID}, "vsn": {"2.0.0"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, res, err := dialSocket(t, tc.name, base+"?"+tc.query.Encode(), nil)
			require.Error(t, err, "the upgrade must be refused")
			require.NotNil(t, res, "the refusal must be an HTTP response: %v", err)
			require.True(t, res.StatusCode >= 400 && res.StatusCode < 500, "want a 4xx refusal, got %s", describeResponse(res))
		})
	}
}

// testJoinAuthorization checks Band's topic isolation table. The cases share
// three sockets and run in order, not in parallel: Band keeps one socket per
// agent, so a socket per case would supersede its siblings.
func testJoinAuthorization(t *testing.T, e *env) {
	a := e.RegisterAgent(t, "join-a")
	c := e.RegisterAgent(t, "join-c")
	r := e.CreateRoom(t, "joins")
	e.AddParticipant(t, r, a.ID)
	e.AddParticipant(t, r, c.ID)
	x := e.CreateRoom(t, "joins-other")
	const stranger = "00000000-0000-4000-8000-000000000000"
	owner := e.Owner
	sockets := map[string]*socket{
		"agent": e.socketFor(t, "agent A", a.Key, nil),
		"user":  e.socketFor(t, "owner", e.target.OwnerKey, nil),
		"owner-as-agent": e.socketFor(t, "owner as agent C", e.target.OwnerKey,
			url.Values{"agent_id": {c.ID}}),
	}
	cases := []struct {
		name   string
		socket string
		topic  string
		ok     bool
	}{
		{name: "agent joins a room it is in", socket: "agent", topic: chatRoom(r), ok: true},
		{name: "agent joins the room's participants", socket: "agent", topic: "room_participants:" + r, ok: true},
		{name: "agent joins its agent_rooms", socket: "agent", topic: "agent_rooms:" + a.ID, ok: true},
		{name: "agent joins its agent_control", socket: "agent", topic: "agent_control:" + a.ID, ok: true},
		{name: "agent joins another agent's agent_rooms", socket: "agent", topic: "agent_rooms:" + c.ID},
		{name: "agent joins another agent's agent_control", socket: "agent", topic: "agent_control:" + c.ID},
		{name: "agent joins its owner's user_rooms", socket: "agent", topic: "user_rooms:" + owner.ID},
		{name: "agent joins a room it is not in", socket: "agent", topic: chatRoom(x)},
		{name: "agent joins a room that does not exist", socket: "agent", topic: chatRoom(stranger)},
		{name: "user joins its user_rooms", socket: "user", topic: "user_rooms:" + owner.ID, ok: true},
		{name: "user joins a room it owns", socket: "user", topic: chatRoom(x), ok: true},
		{name: "user joins an agent's agent_rooms", socket: "user", topic: "agent_rooms:" + a.ID},
		{name: "user joins another user's user_rooms", socket: "user", topic: "user_rooms:" + stranger},
		{name: "owner key with agent_id joins the agent's agent_rooms", socket: "owner-as-agent", topic: "agent_rooms:" + c.ID, ok: true},
		{name: "owner key with agent_id joins the owner's user_rooms", socket: "owner-as-agent", topic: "user_rooms:" + owner.ID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { //nolint:paralleltest // shared sockets, see above
			s := sockets[tc.socket]
			rep := s.join(t, tc.topic)
			if tc.ok {
				require.Equal(t, phoenix.StatusOK, rep.Status, "join %s: %s", tc.topic, rep.Response)
				return
			}
			require.Equal(t, phoenix.StatusError, rep.Status, "join %s must be refused: %s", tc.topic, rep.Response)
			require.NotEmpty(t, rep.reason(), "a refused join carries response.reason: %s", rep.Response)
		})
	}
}

// testMalformedFrame sends garbage on one socket: the server closes that
// socket and keeps serving another.
func testMalformedFrame(t *testing.T, newEnv func(*testing.T) *env) {
	cases := []struct {
		name  string
		frame string
	}{
		{name: "not JSON", frame: `hello`},
		{name: "JSON object", frame: `{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"1"}`},
		{name: "four elements", frame: `[null,"1","phoenix","heartbeat"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.RegisterAgent(t, "bad")
			b := e.RegisterAgent(t, "good")
			room := e.CreateRoom(t, "malformed")
			e.AddParticipant(t, room, a.ID)
			e.AddParticipant(t, room, b.ID)
			sa := e.socketFor(t, "sender of garbage", a.Key, nil)
			sa.mustJoin(t, chatRoom(room))
			sb := e.socketFor(t, "bystander", b.Key, nil)
			sb.mustJoin(t, chatRoom(room))

			sa.sendRaw(t, []byte(tc.frame))
			sa.awaitClosed(t)

			id := e.Post(t, room, "still there?", Mention{ID: b.ID})
			sb.awaitMessage(t, chatRoom(room), id)
			r, _ := sb.request(t, nil, phoenix.TopicPhoenix, phoenix.EventHeartbeat)
			require.Equal(t, phoenix.StatusOK, r.Status, "the bystander's heartbeat")
		})
	}
}

// testLeave leaves a room channel: the reply is ok, nothing is pushed on
// the topic until it is joined again, and then pushes carry the new
// join_ref.
func testLeave(t *testing.T, e *env) {
	a := e.RegisterAgent(t, "leave")
	room := e.CreateRoom(t, "leave")
	e.AddParticipant(t, room, a.ID)
	s := e.socketFor(t, "agent", a.Key, nil)
	s.mustJoin(t, chatRoom(room))
	first := e.Post(t, room, "before leaving", Mention{ID: a.ID})
	s.awaitMessage(t, chatRoom(room), first)

	rep := s.leave(t, chatRoom(room))
	require.Equal(t, phoenix.StatusOK, rep.Status, "leave reply: %s", rep.Response)
	e.Post(t, room, "while away", Mention{ID: a.ID})
	s.mustJoin(t, chatRoom(room))
	back := e.Post(t, room, "after rejoining", Mention{ID: a.ID})

	f := s.await(t, "message_created after rejoining", func(f phoenix.Frame) bool {
		return f.Event == "message_created"
	})
	m := s.checkMessagePush(t, f, chatRoom(room))
	require.Equal(t, back, m.ID, "the first push after leaving must be the message posted after rejoining (%q)", m.Content)
}

// testSupersede opens a second socket for the same agent: the first gets a
// supersede push on agent_control and is closed; the second works.
func testSupersede(t *testing.T, e *env) {
	a := e.RegisterAgent(t, "twice")
	room := e.CreateRoom(t, "supersede")
	e.AddParticipant(t, room, a.ID)
	control := "agent_control:" + a.ID
	first := e.socketFor(t, "first socket", a.Key, nil)
	first.mustJoin(t, control)
	first.mustJoin(t, chatRoom(room))

	second := e.socketFor(t, "second socket", a.Key, nil)

	f := first.await(t, "supersede on "+control, func(f phoenix.Frame) bool {
		return f.Topic == control && f.Event == "supersede"
	})
	require.Nil(t, f.Ref, "supersede is a push: ref null")
	require.NotNil(t, f.JoinRef, "supersede must carry the agent_control join_ref")
	require.Equal(t, first.joins[control], *f.JoinRef, "supersede join_ref")
	var sup struct {
		Reason    *string `json:"reason"`
		Message   *string `json:"message"`
		Retryable *bool   `json:"retryable"`
	}
	require.NoError(t, json.Unmarshal(f.Payload, &sup), "supersede payload")
	require.NotNil(t, sup.Reason, "supersede.reason is required: %s", f.Payload)
	require.NotEmpty(t, *sup.Reason, "supersede.reason: %s", f.Payload)
	require.NotNil(t, sup.Message, "supersede.message is required: %s", f.Payload)
	require.NotNil(t, sup.Retryable, "supersede.retryable is required: %s", f.Payload)
	first.awaitClosed(t)

	second.mustJoin(t, chatRoom(room))
	id := e.Post(t, room, "for the new socket", Mention{ID: a.ID})
	second.awaitMessage(t, chatRoom(room), id)
}
