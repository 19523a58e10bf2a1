package hub_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/mention"
)

func TestAuthAndEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	tests := []struct {
		name      string
		method    string
		path      string
		key       string
		header    http.Header
		body      any
		status    int
		code      string
		msgSubstr string
	}{
		{name: "missing key", method: "GET", path: "/api/v1/agent/me", status: 401, code: "unauthorized"},
		{name: "unknown key", method: "GET", path: "/api/v1/me/profile", key: "band_u_nope", status: 401, code: "unauthorized"},
		{name: "agent key on /me", method: "GET", path: "/api/v1/me/profile", key: a.Key, status: 403, code: "forbidden", msgSubstr: "Agent authentication not allowed"},
		{name: "user key on /agent", method: "GET", path: "/api/v1/agent/me", key: b.owner, status: 403, code: "forbidden", msgSubstr: "Agent authentication required"},
		{name: "bearer works", method: "GET", path: "/api/v1/agent/me", header: http.Header{"Authorization": {"Bearer " + a.Key}}, status: 200},
		{name: "unknown route", method: "GET", path: "/api/v1/nope", key: b.owner, status: 404, code: "not_found"},
		{name: "wrong method", method: "DELETE", path: "/api/v1/me/profile", key: b.owner, status: 405, code: "method_not_allowed"},
		{name: "contacts not implemented", method: "GET", path: "/api/v1/me/contacts", key: b.owner, status: 501, code: "not_implemented"},
		{name: "memories not implemented", method: "POST", path: "/api/v1/agent/memories", key: a.Key, status: 501, code: "not_implemented"},
		{name: "tasks not implemented", method: "GET", path: "/api/v1/agent/chats/x/tasks/1", key: a.Key, status: 501, code: "not_implemented"},
		{name: "malformed json", method: "POST", path: "/api/v1/me/chats", key: b.owner, body: `{"chat":`, status: 400, code: "invalid_json"},
		{name: "wrong type", method: "POST", path: "/api/v1/me/chats", key: b.owner, body: `{"chat":{"title":5}}`, status: 422, code: "validation_error"},
		{name: "body too large", method: "POST", path: "/api/v1/me/chats", key: b.owner, body: `{"chat":{"title":"` + strings.Repeat("x", 1<<20) + `"}}`, status: 413, code: "payload_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			header := tt.header
			if tt.key != "" {
				header = http.Header{"X-Api-Key": {tt.key}}
			}
			resp := b.doResp(tt.method, tt.path, "", tt.body, header)
			defer resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode)
			require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
			if tt.code == "" {
				return
			}
			var e protocol.ErrorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.Equal(t, tt.code, e.Error.Code)
			require.NotEmpty(t, e.Error.RequestID)
			require.Contains(t, e.Error.Message, tt.msgSubstr)
		})
	}
}

func TestAgentProfileAndPeers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb, c := b.register("Alpha Bot"), b.register("Beta"), b.register("Charlie")
	ownerID := b.ownerID()

	var me protocol.Data[protocol.AgentMe]
	b.call("GET", "/api/v1/agent/me", a.Key, nil, 200, &me)
	require.Equal(t, "owner/alpha-bot", me.Data.Handle)
	require.Equal(t, ownerID, me.Data.OwnerUUID)
	require.Equal(t, "Alpha Bot", me.Data.Name)

	var peers struct {
		Data     []protocol.Peer `json:"data"`
		Metadata map[string]int  `json:"metadata"`
	}
	b.call("GET", "/api/v1/agent/peers", a.Key, nil, 200, &peers)
	require.Equal(t, []string{ownerID, bb.ID, c.ID}, peerIDs(peers.Data), "owner first, then siblings by name, never itself")
	require.Equal(t, map[string]int{"page": 1, "page_size": 20, "total_count": 3, "total_pages": 1}, peers.Metadata)

	b.call("GET", "/api/v1/agent/peers?page=2&page_size=2", a.Key, nil, 200, &peers)
	require.Equal(t, []string{c.ID}, peerIDs(peers.Data))
	require.Equal(t, map[string]int{"page": 2, "page_size": 2, "total_count": 3, "total_pages": 2}, peers.Metadata)

	room := b.room(a, bb)
	b.call("GET", "/api/v1/agent/peers?not_in_chat="+room, a.Key, nil, 200, &peers)
	require.Equal(t, []string{c.ID}, peerIDs(peers.Data), "owner and Beta are in the room")
	b.apiErr("GET", "/api/v1/agent/peers?not_in_chat="+room, c.Key, nil, 404)

	b.call("GET", "/api/v1/me/peers?type=Agent", b.owner, nil, 200, &peers)
	require.Equal(t, []string{a.ID, bb.ID, c.ID}, peerIDs(peers.Data))
	b.call("GET", "/api/v1/me/peers?type=User", b.owner, nil, 200, &peers)
	require.Empty(t, peers.Data)
	require.Equal(t, "validation_error", b.apiErr("GET", "/api/v1/me/peers?type=Robot", b.owner, nil, 422).Code)
}

func peerIDs(ps []protocol.Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func TestRooms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb, c := b.register("Alpha"), b.register("Beta"), b.register("Gamma")

	var created protocol.Data[protocol.ChatRoom]
	b.call("POST", "/api/v1/agent/chats", a.Key, map[string]any{"chat": map[string]any{"title": "  Plans  "}}, 201, &created)
	room := created.Data.ID
	require.Equal(t, "Plans", *created.Data.Title)
	var parts protocol.Data[[]protocol.Participant]
	b.call("GET", "/api/v1/agent/chats/"+room+"/participants", a.Key, nil, 200, &parts)
	require.Len(t, parts.Data, 1)
	require.Equal(t, protocol.RoleOwner, parts.Data[0].Role)
	require.Equal(t, a.ID, parts.Data[0].ID)
	b.add(a.Key, "/api/v1/agent", room, bb.ID)

	t.Run("existence hiding", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/api/v1/agent/chats/" + room, "/api/v1/agent/chats/" + room + "/messages", "/api/v1/agent/chats/00000000-0000-4000-8000-000000000000", "/api/v1/agent/chats/not-a-uuid"} {
			require.Equal(t, "not_found", b.apiErr("GET", path, c.Key, nil, 404).Code, path)
		}
		require.Equal(t, "not_found", b.apiErr("GET", "/api/v1/me/chats/"+room, b.owner, nil, 404).Code, "the owner user is not in this room")
	})

	rename := func(title any) map[string]any { return map[string]any{"chat": map[string]any{"title": title}} }
	tests := []struct {
		name   string
		key    string
		body   any
		status int
		code   string
	}{
		{name: "owner renames", key: a.Key, body: rename(" New name "), status: 200},
		{name: "same title is idempotent", key: a.Key, body: rename("New name"), status: 200},
		{name: "member may not", key: bb.Key, body: rename("x"), status: 403, code: "forbidden"},
		{name: "non-participant sees nothing", key: c.Key, body: rename("x"), status: 404, code: "not_found"},
		{name: "blank", key: a.Key, body: rename("   "), status: 422, code: "validation_error"},
		{name: "missing", key: a.Key, body: map[string]any{"chat": map[string]any{}}, status: 422, code: "validation_error"},
		{name: "newline", key: a.Key, body: rename("a\nb"), status: 422, code: "validation_error"},
		{name: "NUL", key: a.Key, body: rename("a\x00b"), status: 422, code: "validation_error"},
		{name: "too long", key: a.Key, body: rename(strings.Repeat("é", 121)), status: 422, code: "validation_error"},
		{name: "120 is fine", key: a.Key, body: rename(strings.Repeat("é", 120)), status: 200},
	}
	for _, tt := range tests {
		// Sequential: the cases rename one room in order.
		status, raw := b.do("PATCH", "/api/v1/agent/chats/"+room, tt.key, tt.body)
		require.Equal(t, tt.status, status, "%s: %s", tt.name, raw)
		if tt.code != "" {
			var e protocol.ErrorBody
			require.NoError(t, json.Unmarshal(raw, &e))
			require.Equal(t, tt.code, e.Error.Code, tt.name)
		}
	}
	var got protocol.Data[protocol.ChatRoom]
	b.call("GET", "/api/v1/agent/chats/"+room, bb.Key, nil, 200, &got)
	require.Equal(t, strings.Repeat("é", 120), *got.Data.Title)

	var chats struct {
		Data     []protocol.ChatRoom `json:"data"`
		Metadata map[string]int      `json:"metadata"`
	}
	b.call("GET", "/api/v1/agent/chats", bb.Key, nil, 200, &chats)
	require.Len(t, chats.Data, 1)
	require.Equal(t, map[string]int{"page": 1, "page_size": 20, "total_count": 1, "total_pages": 1}, chats.Metadata)
	require.Equal(t, "validation_error", b.apiErr("POST", "/api/v1/agent/chats", a.Key, map[string]any{"chat": map[string]any{"task_id": "nope"}}, 422).Code)
	require.Equal(t, "validation_error", b.apiErr("POST", "/api/v1/agent/chats", a.Key, map[string]any{}, 422).Code)
}

func TestMyChats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var rooms []string
	for range 5 {
		rooms = append(rooms, b.room())
	}
	type page struct {
		Data     []protocol.MeChatRoom `json:"data"`
		Metadata struct {
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
			Limit      int     `json:"limit"`
		} `json:"metadata"`
	}
	var got []string
	path := "/api/v1/me/chats?limit=2"
	for {
		var p page
		b.call("GET", path, b.owner, nil, 200, &p)
		for _, r := range p.Data {
			got = append(got, r.ID)
			require.Equal(t, "direct", r.Type)
			require.Equal(t, "active", r.Status)
			require.Nil(t, r.LastMessageAt)
		}
		require.Equal(t, 2, p.Metadata.Limit)
		if !p.Metadata.HasMore {
			require.Nil(t, p.Metadata.NextCursor)
			break
		}
		path = "/api/v1/me/chats?limit=2&cursor=" + *p.Metadata.NextCursor
	}
	require.Equal(t, []string{rooms[4], rooms[3], rooms[2], rooms[1], rooms[0]}, got, "newest first by default")

	var asc page
	b.call("GET", "/api/v1/me/chats?order=asc&sort_by=updated_at", b.owner, nil, 200, &asc)
	require.Equal(t, rooms[0], asc.Data[0].ID)

	var first page
	b.call("GET", "/api/v1/me/chats?limit=1", b.owner, nil, 200, &first)
	require.Equal(t, "invalid_cursor", b.apiErr("GET", "/api/v1/me/chats?order=asc&cursor="+*first.Metadata.NextCursor, b.owner, nil, 422).Code,
		"a cursor is valid only for the order it was issued under")
	for _, q := range []string{"status=gone", "type=x", "sort_by=title", "order=up", "limit=0", "limit=x"} {
		require.Equal(t, "validation_error", b.apiErr("GET", "/api/v1/me/chats?"+q, b.owner, nil, 422).Code, q)
	}
	require.Equal(t, "invalid_pagination", b.apiErr("GET", "/api/v1/me/chats?limit=1&page=1", b.owner, nil, 422).Code)

	var one protocol.Data[protocol.MeChatRoom]
	b.call("GET", "/api/v1/me/chats/"+rooms[0], b.owner, nil, 200, &one)
	require.Equal(t, rooms[0], one.Data.ID)
}

func TestParticipants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb, c := b.register("Alpha"), b.register("Beta"), b.register("Gamma")
	ownerID := b.ownerID()
	var created protocol.Data[protocol.ChatRoom]
	b.call("POST", "/api/v1/agent/chats", a.Key, map[string]any{"chat": map[string]any{}}, 201, &created)
	room := created.Data.ID
	part := func(id, role string) protocol.ParticipantRequest {
		return protocol.ParticipantRequest{Participant: protocol.ParticipantFields{ParticipantID: id, Role: role}}
	}

	var added protocol.Data[protocol.Participant]
	b.call("POST", "/api/v1/agent/chats/"+room+"/participants", a.Key, part(bb.ID, ""), 201, &added)
	require.Equal(t, protocol.Participant{ID: bb.ID, Type: "Agent", Role: "member", Status: "active", Name: "Beta", Handle: &bb.Handle}, added.Data)
	b.call("POST", "/api/v1/agent/chats/"+room+"/participants", a.Key, part(ownerID, "admin"), 201, &added)
	require.Equal(t, "User", added.Data.Type)
	require.Equal(t, "owner", *added.Data.Handle)

	errs := []struct {
		name   string
		key    string
		body   any
		status int
		code   string
	}{
		{name: "already a participant", key: a.Key, body: part(bb.ID, ""), status: 422, code: "already_participant"},
		{name: "unknown identity", key: a.Key, body: part("00000000-0000-4000-8000-000000000000", ""), status: 404, code: "not_found"},
		{name: "bad id", key: a.Key, body: part("x", ""), status: 422, code: "validation_error"},
		{name: "bad role", key: a.Key, body: part(c.ID, "boss"), status: 422, code: "validation_error"},
		{name: "missing body", key: a.Key, body: map[string]any{}, status: 422, code: "validation_error"},
		{name: "non-participant", key: c.Key, body: part(c.ID, ""), status: 404, code: "not_found"},
	}
	for _, tt := range errs {
		require.Equal(t, tt.code, b.apiErr("POST", "/api/v1/agent/chats/"+room+"/participants", tt.key, tt.body, tt.status).Code, tt.name)
	}

	var details struct {
		Data     []protocol.Participant `json:"data"`
		Metadata map[string]any         `json:"metadata"`
	}
	b.call("GET", "/api/v1/me/chats/"+room+"/participants?participant_type=Agent", b.owner, nil, 200, &details)
	require.Len(t, details.Data, 2)
	require.NotNil(t, details.Data[0].IsExternal)
	require.Equal(t, false, details.Metadata["has_more"])
	b.call("GET", "/api/v1/me/chats/"+room+"/participants?limit=1", b.owner, nil, 200, &details)
	require.Len(t, details.Data, 1)
	require.Equal(t, true, details.Metadata["has_more"])
	b.call("GET", "/api/v1/me/chats/"+room+"/participants?limit=1&cursor="+details.Metadata["next_cursor"].(string), b.owner, nil, 200, &details)
	require.Equal(t, bb.ID, details.Data[0].ID)

	del := "/api/v1/agent/chats/" + room + "/participants/"
	require.Equal(t, "forbidden", b.apiErr("DELETE", del+ownerID, bb.Key, nil, 403).Code, "members may not remove")
	require.Equal(t, "cannot_remove_sole_owner", b.apiErr("DELETE", "/api/v1/me/chats/"+room+"/participants/"+a.ID, b.owner, nil, 403).Code)
	require.Equal(t, "not_found", b.apiErr("DELETE", del+c.ID, a.Key, nil, 404).Code)
	var removed protocol.Data[protocol.Participant]
	b.call("DELETE", "/api/v1/me/chats/"+room+"/participants/"+bb.ID, b.owner, nil, 200, &removed)
	require.Equal(t, bb.ID, removed.Data.ID)
	b.apiErr("GET", "/api/v1/agent/chats/"+room, bb.Key, nil, 404)
}

func TestSendValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, bb, c := b.register("Alpha"), b.register("Beta"), b.register("Gamma")
	room := b.room(a, bb)
	path := "/api/v1/agent/chats/" + room + "/messages"
	msg := func(content string, mentions ...map[string]any) map[string]any {
		return map[string]any{"message": map[string]any{"content": content, "mentions": mentions}}
	}
	tests := []struct {
		name string
		body any
		code string
	}{
		{name: "no mentions", body: msg("hi"), code: "mentions_required"},
		{name: "mentions missing", body: map[string]any{"message": map[string]any{"content": "hi"}}, code: "mentions_required"},
		{name: "only references", body: msg("hi", map[string]any{"id": bb.ID, "kind": "reference"}), code: "mentions_required"},
		{name: "self", body: msg("hi", map[string]any{"id": a.ID}), code: "cannot_mention_self"},
		{name: "self by handle", body: msg("hi", map[string]any{"handle": "@" + a.Handle}), code: "cannot_mention_self"},
		{name: "duplicate", body: msg("hi", map[string]any{"id": bb.ID}, map[string]any{"handle": bb.Handle}), code: "duplicate_mentions"},
		{name: "not in room", body: msg("hi", map[string]any{"id": c.ID}), code: "mentioned_participant_not_in_room"},
		{name: "null kind", body: msg("hi", map[string]any{"id": bb.ID, "kind": nil}), code: "invalid_mention_kind"},
		{name: "bad kind", body: msg("hi", map[string]any{"id": bb.ID, "kind": "shout"}), code: "invalid_mention_kind"},
		{name: "unknown handle", body: msg("hi", map[string]any{"handle": "owner/nobody"}), code: "handle_not_found"},
		{name: "handle of non-participant", body: msg("hi", map[string]any{"handle": c.Handle}), code: "handle_not_found"},
		{name: "no identifier", body: msg("hi", map[string]any{"name": "Beta"}), code: "mention_missing_identifier"},
		{name: "blank content", body: msg("  \n\t", map[string]any{"id": bb.ID}), code: "validation_error"},
		{name: "invisible content", body: msg("\u200b\u200d\ufeff", map[string]any{"id": bb.ID}), code: "validation_error"},
		{name: "no message", body: map[string]any{}, code: "validation_error"},
		{name: "bad id", body: msg("hi", map[string]any{"id": "nope"}), code: "validation_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.code, b.apiErr("POST", path, a.Key, tt.body, 422).Code)
		})
	}
	t.Run("reference does not deliver", func(t *testing.T) {
		t.Parallel()
		var out protocol.Data[protocol.MessageSent]
		b.call("POST", path, a.Key, msg("see @Beta, owner", map[string]any{"handle": "owner"}, map[string]any{"id": bb.ID, "kind": "reference"}), 201, &out)
		require.Len(t, out.Data.Recipients, 1)
		require.Equal(t, "owner", out.Data.Recipients[0].Handle)
		for _, m := range b.list("/api/v1/agent/chats/"+room+"/messages?status=all", bb.Key).Data {
			require.NotEqual(t, out.Data.ID, m.ID)
		}
	})
	t.Run("display name and id mentions are normalised", func(t *testing.T) {
		t.Parallel()
		var out protocol.Data[protocol.MessageSent]
		b.call("POST", "/api/v1/me/chats/"+room+"/messages", b.owner,
			msg("@Alpha and @"+bb.Handle+" go", map[string]any{"id": a.ID}, map[string]any{"handle": "@" + bb.Handle}), 201, &out)
		var m *protocol.Message
		for _, x := range b.list("/api/v1/me/chats/"+room+"/messages?limit=100", b.owner).Data {
			if x.ID == out.Data.ID {
				m = &x
			}
		}
		require.NotNil(t, m)
		require.Equal(t, mention.Token(a.ID)+" and "+mention.Token(bb.ID)+" go", m.Content)
		require.Equal(t, "sent", m.Metadata.Status)
		require.Len(t, m.Metadata.DeliveryStatus, 2)
		require.Equal(t, "delivered", m.Metadata.DeliveryStatus[a.ID].Status)
	})
}
