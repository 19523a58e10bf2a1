package postgres

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestQuarantineInvalid_movesRowsOutOfDomain: a spool entry whose room is
// not a UUID and a queue row whose state is unknown, written by hand, are
// moved to the quarantine with their bytes; a valid entry stays.
func TestQuarantineInvalid_movesRowsOutOfDomain(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	room := newUUID[jam.RoomID]()
	good := w.spool(t, 1, room)
	_, err := w.a.pool.Exec(ctx, `INSERT INTO spool (workspace_id, profile, scope, room_id, message_id, sealed, received_at, lane_key)
VALUES ($1, 'p', 'a', 'not-a-room', $2, '\x0102'::bytea, 1, 0)`, w.ws, newUUID[jam.PlatformMessageID]())
	require.NoError(t, err)
	_, err = w.a.pool.Exec(ctx, `INSERT INTO queue (workspace_id, profile, scope, message_id, seq, room_id, binding_id, sender_id,
addressed_to_user, sealed, state, attempts, received_at) VALUES ($1, 'p', 'a', $2, 99, $3, '', '', false, '\x03'::bytea, 'lost', 0, 1)`,
		w.ws, newUUID[jam.PlatformMessageID](), room)
	require.NoError(t, err)

	recs, err := w.b.QuarantineInvalid(ctx, at)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, store.QuarantineFromSpool, recs[0].Source)
	require.Contains(t, recs[0].Reason, "room_id")
	require.Equal(t, []byte{1, 2}, recs[0].Sealed)
	var row map[string]any
	require.NoError(t, json.Unmarshal(recs[0].Row, &row))
	require.Equal(t, "not-a-room", row["room_id"])
	require.Equal(t, "AQI=", row["sealed"], "bytea in base64")
	require.Equal(t, store.QuarantineFromQueue, recs[1].Source)
	require.Contains(t, recs[1].Reason, `state "lost" is unknown`)

	left, err := w.a.SpoolNext(ctx, w.ws, w.peer.Key, room, 10)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, good[0], left[0].Seq)
	list, err := w.a.QuarantineList(ctx, w.ws, 0)
	require.NoError(t, err)
	require.Len(t, list, 2)
	again, err := w.a.QuarantineInvalid(ctx, at)
	require.NoError(t, err)
	require.Empty(t, again)
}
