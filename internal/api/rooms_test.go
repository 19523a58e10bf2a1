package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestRooms_routes(t *testing.T) {
	t.Parallel()
	msgs := wire.RoomMessages{Room: "r1", Account: "local", Seq: 7, Messages: []wire.RoomMessage{{
		ID: "m1", Seq: 7, MessageType: "text", Content: "@[[a1]] go", Text: "@coder go", SenderID: "u1", SenderType: "User",
		Mentions: []string{"a1"}, Delivery: []wire.AgentDelivery{{AgentID: "a1", Status: wire.DeliveryProcessing, Attempt: 1}},
		InsertedAt: "2026-01-02T03:04:05.000000Z",
	}}}
	cases := []struct {
		name       string
		method     string
		path       string
		body       string
		backend    func(t *testing.T) fakeBackend
		wantStatus int
		wantBody   string
	}{
		{
			name: "messages with account and limit", method: "GET", path: "/v1/rooms/r1/messages?account=local&limit=5",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomMessagesFunc: func(_ context.Context, room, account string, limit int) (wire.RoomMessages, error) {
					assert.Equal(t, []any{"r1", "local", 5}, []any{room, account, limit})
					return msgs, nil
				}}
			},
			wantStatus: 200,
			wantBody: `{"room":"r1","account":"local","seq":7,"messages":[{"id":"m1","seq":7,"message_type":"text","content":"@[[a1]] go","text":"@coder go",
				"sender_id":"u1","sender_type":"User","mentions":["a1"],"delivery":[{"agent_id":"a1","status":"processing","attempt":1}],"inserted_at":"2026-01-02T03:04:05.000000Z"}]}`,
		},
		{
			name: "messages default to the whole window", method: "GET", path: "/v1/rooms/r1/messages",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomMessagesFunc: func(_ context.Context, _, account string, limit int) (wire.RoomMessages, error) {
					assert.Equal(t, "", account)
					assert.Equal(t, wire.MaxRoomMessages, limit)
					return wire.RoomMessages{Room: "r1", Account: "local"}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"room":"r1","account":"local","seq":0,"messages":[]}`,
		},
		{
			name: "unknown room", method: "GET", path: "/v1/rooms/r9/messages",
			backend: func(*testing.T) fakeBackend {
				return fakeBackend{RoomMessagesFunc: func(context.Context, string, string, int) (wire.RoomMessages, error) {
					return wire.RoomMessages{}, fmt.Errorf("band 404: %w", jam.ErrNotFound)
				}}
			},
			wantStatus: 404, wantBody: `{"error":{"code":"not_found","message":"messages of room r9: band 404: not found"}}`,
		},
		{
			name: "post", method: "POST", path: "/v1/rooms/r1/messages", body: `{"text":"@coder go","mentions":["a2"],"account":"local"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomPostFunc: func(_ context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error) {
					assert.Equal(t, "r1", room)
					assert.Equal(t, wire.RoomPostRequest{Account: "local", Text: "@coder go", Mentions: []string{"a2"}}, r)
					return wire.RoomPostResult{ID: "m2", Body: "@[[a2]] @[[a1]] go", Mentions: []string{"a2", "a1"}}, nil
				}}
			},
			wantStatus: 201, wantBody: `{"id":"m2","body":"@[[a2]] @[[a1]] go","mentions":["a2","a1"]}`,
		},
		{
			name: "participants", method: "GET", path: "/v1/rooms/r1/participants?account=local",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomParticipantsFunc: func(_ context.Context, room, account string) ([]wire.Participant, error) {
					assert.Equal(t, []string{"r1", "local"}, []string{room, account})
					return []wire.Participant{{ID: "a1", Type: "Agent", Role: "member", Name: "Coder", Handle: "owner/coder"}}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"participants":[{"id":"a1","type":"Agent","role":"member","name":"Coder","handle":"owner/coder"}]}`,
		},
		{
			name: "no participants is an empty list", method: "GET", path: "/v1/rooms/r1/participants",
			backend: func(*testing.T) fakeBackend {
				return fakeBackend{RoomParticipantsFunc: func(context.Context, string, string) ([]wire.Participant, error) { return nil, nil }}
			},
			wantStatus: 200, wantBody: `{"participants":[]}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.backend(t), "")
			status, hdr, body := call(t, b, tc.method, tc.path, tc.body)
			require.Equal(t, tc.wantStatus, status, body)
			require.Equal(t, "application/json", hdr.Get("Content-Type"))
			require.JSONEq(t, tc.wantBody, body)
		})
	}
}

func TestRooms_invalidInput(t *testing.T) {
	t.Parallel()
	b := setup(t, fakeBackend{}, "")
	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		wantMsg string
	}{
		{name: "limit zero", method: "GET", path: "/v1/rooms/r1/messages?limit=0", wantMsg: "limit=0 is not a number from 1 to 100"},
		{name: "limit too big", method: "GET", path: "/v1/rooms/r1/messages?limit=101", wantMsg: "limit=101"},
		{name: "limit not a number", method: "GET", path: "/v1/rooms/r1/messages?limit=ten", wantMsg: "limit=ten"},
		{name: "unknown parameter", method: "GET", path: "/v1/rooms/r1/messages?acount=x", wantMsg: `unknown query parameter "acount"`},
		{name: "post without text", method: "POST", path: "/v1/rooms/r1/messages", body: `{"text":" "}`, wantMsg: "text is required"},
		{name: "post with an empty mention", method: "POST", path: "/v1/rooms/r1/messages", body: `{"text":"x","mentions":[""]}`, wantMsg: "mentions[0] is empty"},
		{name: "participants unknown parameter", method: "GET", path: "/v1/rooms/r1/participants?limit=1", wantMsg: `unknown query parameter "limit"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, _, body := call(t, b, tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, status, body)
			var eb wire.ErrorBody
			require.NoError(t, jsonUnmarshal(body, &eb))
			require.Equal(t, wire.CodeInvalidArgument, eb.Error.Code)
			require.Contains(t, eb.Error.Message, tc.wantMsg)
		})
	}
}
