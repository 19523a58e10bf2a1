package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// normalize puts times in UTC so records compare with require.Equal.
func normalize(recs []store.QuarantinedRecord) []store.QuarantinedRecord {
	for i := range recs {
		recs[i].QuarantinedAt = recs[i].QuarantinedAt.UTC()
	}
	return recs
}

// quarantineCases covers [store.Quarantine]: spool and queue records move to
// quarantine on request. Rows with invalid columns can only be written by
// hand, in SQL of the dialect, so each dialect's own tests cover
// QuarantineInvalid finding them.
func quarantineCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }
	at := epoch.Add(time.Hour)

	t.Run("QuarantineSpool_movesTheEntry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		es := b.spool(t, entry(b.ws, b.peer.Key, room), entry(b.ws, b.peer.Key, room))

		rec, err := b.st.QuarantineSpool(ctx, es[0].Seq, "open: message authentication failed", at)
		require.NoError(t, err)
		require.Positive(t, rec.ID)
		require.Equal(t, store.QuarantineFromSpool, rec.Source)
		require.Equal(t, es[0].Seq, rec.Seq)
		require.Equal(t, b.ws, rec.WorkspaceID)
		require.Equal(t, b.peer.Key, rec.Peer)
		require.Equal(t, room, rec.Room)
		require.Equal(t, es[0].MessageID, rec.MessageID)
		require.Equal(t, es[0].Sealed, rec.Sealed, "the raw bytes are kept")
		require.Equal(t, "open: message authentication failed", rec.Reason)
		require.True(t, at.Truncate(time.Microsecond).Equal(rec.QuarantinedAt), "times at microsecond precision")
		var row map[string]any
		require.NoError(t, json.Unmarshal(rec.Row, &row), "the row is a JSON object")
		require.Equal(t, string(es[0].MessageID), row["message_id"])

		// The entry left the spool and the rest of the lane is intact.
		next, err := b.st.SpoolNext(ctx, b.ws, b.peer.Key, room, 10)
		require.NoError(t, err)
		require.Len(t, next, 1)
		require.Equal(t, es[1].MessageID, next[0].MessageID)
		usage, err := b.st.SpoolUsage(ctx)
		require.NoError(t, err)
		require.Len(t, usage, 1)
		require.Equal(t, 1, usage[0].Entries)

		list, err := b.st.QuarantineList(ctx, b.ws, 0)
		require.NoError(t, err)
		require.Equal(t, []store.QuarantinedRecord{rec}, normalize(list))

		// Quarantining again finds nothing.
		_, err = b.st.QuarantineSpool(ctx, es[0].Seq, "again", at)
		require.ErrorIs(t, err, jam.ErrNotFound)
		// The message may arrive again: its copy on Band is still good.
		res, err := b.st.SpoolAppend(ctx, []store.SpoolEntry{es[0]})
		require.NoError(t, err)
		require.True(t, res.Appended[0], "a quarantined message is not a duplicate")
	})

	t.Run("QuarantineQueue_movesTheRow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		first := b.queue(t, b.ws, b.peer.Key, room)
		second := b.queue(t, b.ws, b.peer.Key, room)

		rec, err := b.st.QuarantineQueue(ctx, b.ws, b.peer.Key, first.MessageID, "decode: unexpected end of JSON input", at)
		require.NoError(t, err)
		require.Equal(t, store.QuarantineFromQueue, rec.Source)
		require.Equal(t, first.Seq, rec.Seq)
		require.Equal(t, first.MessageID, rec.MessageID)
		require.Equal(t, first.Sealed, rec.Sealed)

		_, err = b.st.QueueGet(ctx, b.ws, b.peer.Key, first.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)
		require.Equal(t, ids(second), b.list(t, store.QueueListParams{WorkspaceID: b.ws}))

		_, err = b.st.QuarantineQueue(ctx, b.ws, b.peer.Key, first.MessageID, "again", at)
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("QuarantineList_workspaceIsolationAndLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		es := b.spool(t, entry(b.ws, b.peer.Key, room), entry(b.ws, b.peer.Key, room))
		for _, e := range es {
			_, err := b.st.QuarantineSpool(ctx, e.Seq, "test", at)
			require.NoError(t, err)
		}
		list, err := b.st.QuarantineList(ctx, b.ws, 1)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, es[0].MessageID, list[0].MessageID, "oldest first")
		other, err := b.st.QuarantineList(ctx, b.other, 0)
		require.NoError(t, err)
		require.Empty(t, other)
	})

	t.Run("QuarantineInvalid_cleanStoreMovesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room := newUUID[jam.RoomID]()
		b.spool(t, entry(b.ws, b.peer.Key, room))
		b.queue(t, b.ws, b.peer.Key, room)
		recs, err := b.st.QuarantineInvalid(t.Context(), at)
		require.NoError(t, err)
		require.Empty(t, recs)
	})

	t.Run("Quarantine_invalidParams", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		msg := newUUID[jam.PlatformMessageID]()
		for name, err := range map[string]error{
			"spool seq zero":    func() error { _, err := b.st.QuarantineSpool(ctx, 0, "r", at); return err }(),
			"spool no reason":   func() error { _, err := b.st.QuarantineSpool(ctx, 1, " ", at); return err }(),
			"spool zero time":   func() error { _, err := b.st.QuarantineSpool(ctx, 1, "r", time.Time{}); return err }(),
			"queue bad peer":    func() error { _, err := b.st.QuarantineQueue(ctx, b.ws, jam.PeerKey{}, msg, "r", at); return err }(),
			"queue bad message": func() error { _, err := b.st.QuarantineQueue(ctx, b.ws, b.peer.Key, "x", "r", at); return err }(),
			"invalid zero time": func() error { _, err := b.st.QuarantineInvalid(ctx, time.Time{}); return err }(),
			"list bad ws":       func() error { _, err := b.st.QuarantineList(ctx, "nope", 0); return err }(),
			"list negative":     func() error { _, err := b.st.QuarantineList(ctx, b.ws, -1); return err }(),
		} {
			require.ErrorIs(t, err, jam.ErrInvalid, name)
		}
	})
}
