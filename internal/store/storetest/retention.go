package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// retentionCases covers [store.Retention].
func retentionCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("RetentionPrune_keepsReplyLinks", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		row := b.queue(t, b.ws, b.peer.Key, newUUID[jam.RoomID]())
		posted := newUUID[jam.PlatformMessageID]()
		require.NoError(t, b.st.ReplyIntentPut(ctx, store.ReplyIntent{WorkspaceID: b.ws, Peer: b.peer.Key, Room: row.Room, MessageID: row.MessageID,
			Sealed: []byte("r"), Parts: 1, Posted: 1, PostedIDs: []jam.PlatformMessageID{posted}, State: store.ReplyPosted, CreatedAt: epoch}))
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, row.MessageID, epoch))
		n, err := b.st.RetentionPrune(ctx, epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, n.Intents, "the settled message's intent is pruned")
		links, err := b.st.ReplyLinks(ctx, b.ws, []jam.PlatformMessageID{posted})
		require.NoError(t, err)
		require.Len(t, links, 1, "its reply's link stays: the room still shows the reply")
		require.Equal(t, row.MessageID, links[0].ReplyTo)
	})

	t.Run("RetentionPrune", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		settled := b.queue(t, b.ws, b.peer.Key, room)
		queued := b.queue(t, b.ws, b.peer.Key, room)
		for _, row := range []store.QueueRow{settled, queued} {
			require.NoError(t, b.st.ReplyIntentPut(ctx, store.ReplyIntent{WorkspaceID: b.ws, Peer: b.peer.Key, Room: room, MessageID: row.MessageID,
				Sealed: []byte("r"), Parts: 1, State: store.ReplyPending, CreatedAt: epoch}))
		}
		require.NoError(t, b.st.QueueSettle(ctx, b.ws, b.peer.Key, settled.MessageID, epoch))

		n, err := b.st.RetentionPrune(ctx, epoch)
		require.NoError(t, err)
		require.Equal(t, store.RetentionPruned{}, n, "nothing is older than the cut")

		n, err = b.st.RetentionPrune(ctx, epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, store.RetentionPruned{Settled: 1, Intents: 1}, n)
		_, err = b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, settled.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound, "the settled message's intent went")
		_, err = b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, queued.MessageID)
		require.NoError(t, err, "a queued message keeps its intent however old")

		_, err = b.st.RetentionPrune(ctx, time.Time{})
		require.ErrorIs(t, err, jam.ErrInvalid)
	})
}
