package hub_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb := b.register("Alpha"), b.register("Beta")
	room := b.room(a, bb)
	base := "/api/v1/agent/chats/" + room + "/messages/"
	status := func(id, verb string, body any, want int) protocol.MessageStatus {
		t.Helper()
		var out protocol.Data[protocol.MessageStatus]
		b.call("POST", base+id+"/"+verb, a.Key, body, want, &out)
		return out.Data
	}

	b.call("GET", base+"next", a.Key, nil, 204, nil)
	m1 := b.send(b.owner, "/api/v1/me", room, "one", a.Handle).ID
	m2 := b.send(b.owner, "/api/v1/me", room, "two", a.Handle).ID
	mine := b.send(a.Key, "/api/v1/agent", room, "not queued for its sender", bb.Handle).ID

	var next protocol.Data[protocol.Message]
	b.call("GET", base+"next", a.Key, nil, 200, &next)
	require.Equal(t, m1, next.Data.ID, "oldest first")

	require.Equal(t, "no_active_attempt", b.apiErr("POST", base+m1+"/processed", a.Key, nil, 422).Code)
	require.Equal(t, "no_active_attempt", b.apiErr("POST", base+m1+"/failed", a.Key, map[string]any{"error": "x"}, 422).Code)
	require.Equal(t, "not_found", b.apiErr("POST", base+mine+"/processing", a.Key, nil, 404).Code, "own message is not in the queue")
	require.Equal(t, "not_found", b.apiErr("POST", base+m1+"/processing", bb.Key, nil, 404).Code, "B was not mentioned")
	require.Equal(t, "not_found", b.apiErr("POST", base+"nope/processing", a.Key, nil, 404).Code)

	require.Equal(t, protocol.MessageStatus{ID: m1, Status: "processing", AttemptNumber: 1, Success: true}, status(m1, "processing", nil, 200))
	// A crash: the claim is stuck, /next returns it again, and a new claim
	// opens attempt 2.
	b.call("GET", base+"next", a.Key, nil, 200, &next)
	require.Equal(t, m1, next.Data.ID)
	require.Equal(t, 2, status(m1, "processing", nil, 200).AttemptNumber)
	require.Equal(t, "validation_error", b.apiErr("POST", base+m1+"/failed", a.Key, map[string]any{"error": "  "}, 422).Code)
	require.Equal(t, protocol.MessageStatus{ID: m1, Status: "failed", AttemptNumber: 2, Success: true}, status(m1, "failed", map[string]any{"error": "boom"}, 200))

	// Failed stays actionable.
	b.call("GET", base+"next", a.Key, nil, 200, &next)
	require.Equal(t, m1, next.Data.ID)
	require.Equal(t, 3, status(m1, "processing", nil, 200).AttemptNumber)
	require.Equal(t, protocol.MessageStatus{ID: m1, Status: "processed", AttemptNumber: 3, Success: true}, status(m1, "processed", nil, 200))
	require.Equal(t, "validation_error", b.apiErr("POST", base+m1+"/processing", a.Key, nil, 422).Code, "processed is final")
	status(m2, "processing", nil, 200)

	filters := []struct {
		filter string
		want   []string
	}{
		{"", []string{m2}},
		{"all", []string{m1, m2}},
		{"processed", []string{m1}},
		{"processing", []string{m2}},
		{"pending", nil},
		{"failed", nil},
	}
	for _, f := range filters {
		got := b.list("/api/v1/agent/chats/"+room+"/messages?status="+f.filter, a.Key)
		require.Equal(t, f.want, idsOrNil(got.Data), "status=%q", f.filter)
	}
	require.Equal(t, "validation_error", b.apiErr("GET", "/api/v1/agent/chats/"+room+"/messages?status=done", a.Key, nil, 422).Code)

	hist := b.list("/api/v1/me/chats/"+room+"/messages", b.owner)
	var rec protocol.DeliveryRecord
	for _, m := range hist.Data {
		if m.ID == m1 {
			rec = m.Metadata.DeliveryStatus[a.ID]
		}
	}
	require.Equal(t, "processed", rec.Status)
	require.Equal(t, 3, rec.CurrentAttempt)
	require.Len(t, rec.Attempts, 3)
	require.Equal(t, []string{"failed", "failed", "success"}, []string{rec.Attempts[0].Status, rec.Attempts[1].Status, rec.Attempts[2].Status})
	require.Contains(t, *rec.Attempts[0].Error, "superseded by attempt 2")
	require.Equal(t, "boom", *rec.Attempts[1].Error)
}

func idsOrNil(msgs []protocol.Message) []string {
	if len(msgs) == 0 {
		return nil
	}
	return ids(msgs)
}

func TestPagination(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	room := b.room(a)
	var sent []string
	for i := range 5 {
		sent = append(sent, b.send(b.owner, "/api/v1/me", room, "m"+string(rune('0'+i)), a.Handle).ID)
	}
	var ev protocol.Data[protocol.EventCreated]
	b.call("POST", "/api/v1/agent/chats/"+room+"/events", a.Key,
		map[string]any{"event": map[string]any{"content": "thinking", "message_type": "thought"}}, 201, &ev)

	type page struct {
		Data     []protocol.Message `json:"data"`
		Metadata map[string]any     `json:"metadata"`
		Meta     map[string]any     `json:"meta"`
	}
	walk := func(path, key string) []string {
		var got []string
		sep := "&"
		if !strings.Contains(path, "?") {
			sep = "?"
		}
		next := path + sep + "limit=2"
		for {
			var p page
			b.call("GET", next, key, nil, 200, &p)
			got = append(got, ids(p.Data)...)
			require.EqualValues(t, 2, p.Metadata["limit"])
			if p.Metadata["has_more"] != true {
				require.Nil(t, p.Metadata["next_cursor"])
				require.Contains(t, p.Metadata, "next_cursor", "next_cursor is required, null at the end")
				return got
			}
			next = path + sep + "limit=2&cursor=" + url.QueryEscape(p.Metadata["next_cursor"].(string))
		}
	}
	require.Equal(t, sent, walk("/api/v1/agent/chats/"+room+"/messages", a.Key), "queue: oldest first")
	history := walk("/api/v1/me/chats/"+room+"/messages", b.owner)
	require.Equal(t, []string{ev.Data.ID, sent[4], sent[3], sent[2], sent[1], sent[0]}, history, "history: newest first, every type")
	require.Equal(t, append(append([]string{}, sent...), ev.Data.ID), walk("/api/v1/agent/chats/"+room+"/context", a.Key), "context: mentions and own events, oldest first")

	var queue, ctxPage, p page
	b.call("GET", "/api/v1/agent/chats/"+room+"/messages?status=all", a.Key, nil, 200, &queue)
	require.Equal(t, "all", queue.Metadata["status_filter"])
	b.call("GET", "/api/v1/agent/chats/"+room+"/context", a.Key, nil, 200, &ctxPage)
	require.EqualValues(t, 50, ctxPage.Metadata["limit"])
	require.Equal(t, ctxPage.Metadata, ctxPage.Meta, "context keeps the deprecated meta copy")

	resp := b.doResp("GET", "/api/v1/me/chats/"+room+"/messages?page=2&page_size=2", b.owner, nil, nil)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Deprecation"))
	require.NotEmpty(t, resp.Header.Get("Sunset"))
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	require.Equal(t, []string{sent[3], sent[2]}, ids(p.Data))
	require.EqualValues(t, 6, p.Metadata["total_count"])
	require.EqualValues(t, 3, p.Metadata["total_pages"])
	require.Equal(t, true, p.Metadata["has_more"])

	var typed page
	b.call("GET", "/api/v1/me/chats/"+room+"/messages?message_type=thought", b.owner, nil, 200, &typed)
	require.Equal(t, []string{ev.Data.ID}, ids(typed.Data))

	since := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	b.call("GET", "/api/v1/me/chats/"+room+"/messages?since="+since, b.owner, nil, 200, &typed)
	require.Len(t, typed.Data, 6)
	future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	b.call("GET", "/api/v1/me/chats/"+room+"/messages?since="+future, b.owner, nil, 200, &typed)
	require.Empty(t, typed.Data)

	var first page
	b.call("GET", "/api/v1/me/chats/"+room+"/messages?limit=1", b.owner, nil, 200, &first)
	cur := url.QueryEscape(first.Metadata["next_cursor"].(string))
	errs := []struct {
		name, path, code string
	}{
		{"mixed forms", "/api/v1/me/chats/" + room + "/messages?limit=2&page=1", "invalid_pagination"},
		{"since with cursor", "/api/v1/me/chats/" + room + "/messages?since=" + since + "&cursor=" + cur, "invalid_pagination"},
		{"garbage cursor", "/api/v1/me/chats/" + room + "/messages?cursor=not-a-cursor", "invalid_cursor"},
		{"cursor of another listing", "/api/v1/agent/chats/" + room + "/context?cursor=" + cur, "invalid_cursor"},
		{"bad since", "/api/v1/me/chats/" + room + "/messages?since=yesterday", "validation_error"},
		{"bad type", "/api/v1/me/chats/" + room + "/messages?message_type=system", "validation_error"},
	}
	for _, e := range errs {
		key := b.owner
		if strings.Contains(e.path, "/agent/") {
			key = a.Key
		}
		require.Equal(t, e.code, b.apiErr("GET", e.path, key, nil, 422).Code, e.name)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb := b.register("Alpha"), b.register("Beta")
	room := b.room(a, bb)
	owner := b.socket(b.owner, chatTopic(room))
	agentB := b.socket(bb.Key, chatTopic(room))
	path := "/api/v1/agent/chats/" + room + "/events"
	ev := func(content, typ string, md any) map[string]any {
		return map[string]any{"event": map[string]any{"content": content, "message_type": typ, "metadata": md}}
	}

	var out protocol.Data[protocol.EventCreated]
	md := map[string]any{"function": map[string]any{"name": "get_weather", "arguments": map[string]any{"city": "NYC"}}, "id": "call_1", "type": "function"}
	b.call("POST", path, a.Key, ev("Calling get_weather", "tool_call", md), 201, &out)
	require.Equal(t, "tool_call", out.Data.MessageType)
	require.True(t, out.Data.Success)

	got := owner.expectMessage(chatTopic(room), protocol.EventEventCreated)
	require.Equal(t, out.Data.ID, got.ID)
	require.Equal(t, room, got.ChatRoomID)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(got.Metadata.Extra, &raw))
	require.Equal(t, "call_1", raw["id"])

	tests := []struct {
		name string
		body any
	}{
		{"blank content", ev(" ", "thought", nil)},
		{"text type", ev("x", "text", nil)},
		{"internal type", ev("x", "system", nil)},
		{"too long", ev(strings.Repeat("x", protocol.MaxEventContentChars+1), "thought", nil)},
		{"metadata not an object", ev("x", "thought", []int{1})},
		{"metadata too big", ev("x", "thought", map[string]any{"blob": strings.Repeat("x", protocol.MaxEventMetadataBytes)})},
		{"attention without kind", ev("x", "attention", map[string]any{})},
		{"no event", map[string]any{}},
	}
	for _, tt := range tests {
		require.Equal(t, "validation_error", b.apiErr("POST", path, a.Key, tt.body, 422).Code, tt.name)
	}
	b.call("POST", path, a.Key, ev(strings.Repeat("é", protocol.MaxEventContentChars), "attention", map[string]any{"kind": "question", "blocking": true}), 201, nil)
	owner.expect(chatTopic(room), protocol.EventEventCreated)

	// Agents never get events: B's next frame is the text that mentions it.
	sentinel := b.send(a.Key, "/api/v1/agent", room, "sentinel", bb.Handle)
	require.Equal(t, sentinel.ID, agentB.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)
	require.Equal(t, sentinel.ID, owner.expectMessage(chatTopic(room), protocol.EventMessageCreated).ID)
}

func TestRegisterAndDeleteAgent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb := b.register("Alpha"), b.register("Beta")
	room := b.room(a, bb)

	reg := func(name any) map[string]any {
		return map[string]any{"agent": map[string]any{"name": name, "description": "d"}}
	}
	for name, body := range map[string]any{
		"duplicate":     reg("alpha"),
		"same slug":     reg("ALPHA!"),
		"blank":         reg("  "),
		"no slug chars": reg("!!!"),
		"newline":       reg("a\nb"),
		"missing":       map[string]any{},
	} {
		require.Equal(t, "validation_error", b.apiErr("POST", "/api/v1/me/agents/register", b.owner, body, 422).Code, name)
	}

	var agents struct {
		Data     []protocol.MyAgent `json:"data"`
		Metadata map[string]any     `json:"metadata"`
	}
	b.call("GET", "/api/v1/me/agents", b.owner, nil, 200, &agents)
	require.Equal(t, []string{bb.ID, a.ID}, []string{agents.Data[0].ID, agents.Data[1].ID}, "newest first")
	require.Contains(t, agents.Metadata, "available_filters")
	require.Contains(t, agents.Metadata, "sortable_fields")
	b.call("GET", "/api/v1/me/agents?sort=name&order=asc&limit=1", b.owner, nil, 200, &agents)
	require.Equal(t, a.ID, agents.Data[0].ID)
	b.call("GET", "/api/v1/me/agents?sort=name&order=asc&limit=1&cursor="+agents.Metadata["next_cursor"].(string), b.owner, nil, 200, &agents)
	require.Equal(t, bb.ID, agents.Data[0].ID)
	require.Equal(t, false, agents.Metadata["has_more"])
	b.call("GET", "/api/v1/me/agents?name=bet", b.owner, nil, 200, &agents)
	require.Len(t, agents.Data, 1)

	// Beta has processing history: deleting it needs force.
	sockB := b.socket(bb.Key, chatTopic(room))
	m := b.send(b.owner, "/api/v1/me", room, "work", bb.Handle)
	sockB.expect(chatTopic(room), protocol.EventMessageCreated)
	b.call("POST", "/api/v1/agent/chats/"+room+"/messages/"+m.ID+"/processing", bb.Key, nil, 200, nil)
	require.Equal(t, "has_execution_history", b.apiErr("DELETE", "/api/v1/me/agents/"+bb.ID, b.owner, nil, 422).Code)
	owner := b.socket(b.owner, protocol.Topic(protocol.TopicRoomParticipants, room))
	var deleted protocol.Data[protocol.DeletedAgent]
	b.call("DELETE", "/api/v1/me/agents/"+bb.ID+"?force=true", b.owner, nil, 200, &deleted)
	require.Equal(t, protocol.DeletedAgent{ID: bb.ID, Name: "Beta", Description: ptr("test agent Beta"), ExecutionsDeleted: 1}, deleted.Data)
	b.apiErr("GET", "/api/v1/agent/me", bb.Key, nil, 401)
	removed := owner.expect(protocol.Topic(protocol.TopicRoomParticipants, room), protocol.EventParticipantRemoved)
	require.JSONEq(t, `{"id":"`+bb.ID+`","type":"Agent"}`, string(removed.Payload))
	sockB.closed(1008)
	b.apiErr("DELETE", "/api/v1/me/agents/"+bb.ID, b.owner, nil, 404)

	// Alpha has none: no force needed. Old messages still name Beta.
	b.call("DELETE", "/api/v1/me/agents/"+a.ID, b.owner, nil, 200, &deleted)
	require.Equal(t, 0, deleted.Data.ExecutionsDeleted)
	hist := b.list("/api/v1/me/chats/"+room+"/messages", b.owner)
	require.Len(t, hist.Data, 1)
	require.Equal(t, "owner", hist.Data[0].SenderName)
	b.call("GET", "/api/v1/me/agents", b.owner, nil, 200, &agents)
	require.Empty(t, agents.Data)
	b.register("Beta") // the name is free again
}

func ptr[T any](v T) *T { return &v }

func TestActivity(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *hub.Config) { c.ActivityTTL = time.Second })
	a := b.register("Alpha")
	room := b.room(a)
	topic := protocol.Topic(protocol.TopicRoomActivity, room)
	owner := b.socket(b.owner, topic)

	var out protocol.Data[protocol.ActivityRequest]
	b.call("POST", "/api/v1/agent/chats/"+room+"/activity", a.Key, map[string]any{"working": true}, 200, &out)
	require.True(t, out.Data.Working)
	var act protocol.Activity
	decode := func(f phoenix.Frame) protocol.Activity {
		t.Helper()
		var a protocol.Activity
		require.NoError(t, json.Unmarshal(f.Payload, &a))
		return a
	}
	act = decode(owner.expect(topic, protocol.EventActivity))
	require.Equal(t, protocol.Activity{ParticipantID: a.ID, Working: true, ExpiresAt: act.ExpiresAt}, act)
	require.NotEmpty(t, act.ExpiresAt)

	// A late joiner sees the current state.
	late := b.socket(b.owner, topic)
	act = decode(late.expect(topic, protocol.EventActivity))
	require.True(t, act.Working)

	// Nobody refreshes it: it expires.
	act = decode(owner.expect(topic, protocol.EventActivity))
	require.Equal(t, protocol.Activity{ParticipantID: a.ID}, act)

	b.call("POST", "/api/v1/agent/chats/"+room+"/activity", a.Key, map[string]any{"working": false}, 200, &out)
	require.False(t, out.Data.Working)
	act = decode(owner.expect(topic, protocol.EventActivity))
	require.False(t, act.Working)
	require.Equal(t, "validation_error", b.apiErr("POST", "/api/v1/agent/chats/"+room+"/activity", a.Key, map[string]any{}, 422).Code)
	other := b.register("Other")
	b.apiErr("POST", "/api/v1/agent/chats/"+room+"/activity", other.Key, map[string]any{"working": true}, 404)
}
