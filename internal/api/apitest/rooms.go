package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

func (f Backend) RoomMessages(ctx context.Context, room, account string, limit int) (wire.RoomMessages, error) {
	if f.RoomMessagesFunc == nil {
		return wire.RoomMessages{}, ErrUnset
	}
	return f.RoomMessagesFunc(ctx, room, account, limit)
}

func (f Backend) RoomPost(ctx context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error) {
	if f.RoomPostFunc == nil {
		return wire.RoomPostResult{}, ErrUnset
	}
	return f.RoomPostFunc(ctx, room, r)
}

func (f Backend) RoomParticipants(ctx context.Context, room, account string) ([]wire.Participant, error) {
	if f.RoomParticipantsFunc == nil {
		return nil, ErrUnset
	}
	return f.RoomParticipantsFunc(ctx, room, account)
}
