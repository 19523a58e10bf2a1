package apiclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

func TestClient_roomRoundTrips(t *testing.T) {
	t.Parallel()
	msgs := wire.RoomMessages{Room: "r/1", Account: "local", Seq: 3, Messages: []wire.RoomMessage{{
		ID: "m1", Seq: 3, MessageType: "text", Content: "hi", Text: "hi", SenderID: "u1", SenderType: "User",
		Delivery: []wire.AgentDelivery{{AgentID: "a1", Status: wire.DeliveryFailed, Attempt: 2, Error: "boom"}}, InsertedAt: "t",
	}}}
	cases := []struct {
		name    string
		backend backend
		call    func(ctx context.Context, c *apiclient.Client) (any, error)
		want    any
	}{
		{
			name: "messages escape the room and pass the query",
			backend: backend{RoomMessagesFunc: func(_ context.Context, room, account string, limit int) (wire.RoomMessages, error) {
				assert.Equal(t, []any{"r/1 ?#", "work & play", 7}, []any{room, account, limit})
				return msgs, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.RoomMessages(ctx, "r/1 ?#", apiclient.RoomMessagesQuery{Account: "work & play", Limit: 7})
			},
			want: msgs,
		},
		{
			name: "messages with defaults",
			backend: backend{RoomMessagesFunc: func(_ context.Context, _, account string, limit int) (wire.RoomMessages, error) {
				assert.Equal(t, []any{"", wire.MaxRoomMessages}, []any{account, limit})
				return wire.RoomMessages{Room: "r1"}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.RoomMessages(ctx, "r1", apiclient.RoomMessagesQuery{})
			},
			want: wire.RoomMessages{Room: "r1", Messages: []wire.RoomMessage{}},
		},
		{
			name: "post",
			backend: backend{RoomPostFunc: func(_ context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error) {
				assert.Equal(t, "r1", room)
				assert.Equal(t, wire.RoomPostRequest{Account: "local", Text: "go", Mentions: []string{"coder"}}, r)
				return wire.RoomPostResult{ID: "m2", Body: "@[[a1]] go", Mentions: []string{"a1"}, Warnings: []string{"w"}}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.RoomPost(ctx, "r1", wire.RoomPostRequest{Account: "local", Text: "go", Mentions: []string{"coder"}})
			},
			want: wire.RoomPostResult{ID: "m2", Body: "@[[a1]] go", Mentions: []string{"a1"}, Warnings: []string{"w"}},
		},
		{
			name: "participants",
			backend: backend{RoomParticipantsFunc: func(_ context.Context, room, account string) ([]wire.Participant, error) {
				assert.Equal(t, []string{"r1", ""}, []string{room, account})
				return []wire.Participant{{ID: "a1", Type: "Agent", Role: "member", Name: "Coder", Handle: "owner/coder"}}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) { return c.RoomParticipants(ctx, "r1", "") },
			want: []wire.Participant{{ID: "a1", Type: "Agent", Role: "member", Name: "Coder", Handle: "owner/coder"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, tc.backend)
			got, err := tc.call(t.Context(), c)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestClient_roomPostRefusedAtTheEdge(t *testing.T) {
	t.Parallel()
	c := newClient(t, backend{})
	_, err := c.RoomPost(t.Context(), "r1", wire.RoomPostRequest{})
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.Equal(t, wire.CodeInvalidArgument, ae.Code)
	require.Contains(t, ae.Message, "text is required")
}
