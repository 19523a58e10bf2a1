package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// replyCases covers [store.Replies].
func replyCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("ReplyIntent_roundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		row := b.queue(t, b.ws, b.peer.Key, newUUID[jam.RoomID]())
		_, err := b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound)

		r := store.ReplyIntent{
			WorkspaceID: b.ws, Peer: b.peer.Key, Room: row.Room, MessageID: row.MessageID,
			Sealed: []byte("sealed-reply"), Parts: 2, State: store.ReplyPending, CreatedAt: epoch,
		}
		require.NoError(t, b.st.ReplyIntentPut(ctx, r))
		got, err := b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.NoError(t, err)
		r.UpdatedAt = epoch // defaults to CreatedAt
		requireReplyIntent(t, r, got)
		require.Empty(t, got.PostedIDs)

		// Advance part by part.
		p1, p2 := newUUID[jam.PlatformMessageID](), newUUID[jam.PlatformMessageID]()
		step := r
		step.Posted, step.PostedIDs, step.UpdatedAt = 1, []jam.PlatformMessageID{p1}, epoch.Add(time.Second)
		step.Sealed = []byte("resealed") // ignored: the first sealed reply stays
		require.NoError(t, b.st.ReplyIntentPut(ctx, step))
		step.Posted, step.PostedIDs, step.State, step.UpdatedAt = 2, []jam.PlatformMessageID{p1, p2}, store.ReplyPosted, epoch.Add(2*time.Second)
		require.NoError(t, b.st.ReplyIntentPut(ctx, step))
		require.NoError(t, b.st.ReplyIntentPut(ctx, step), "the same put again is fine")
		got, err = b.st.ReplyIntentGet(ctx, b.ws, b.peer.Key, row.MessageID)
		require.NoError(t, err)
		want := step
		want.Sealed = r.Sealed
		requireReplyIntent(t, want, got)

		// Anything that would unpost a part is a conflict.
		tests := []struct {
			name   string
			mutate func(r *store.ReplyIntent)
		}{
			{"fewer posted", func(r *store.ReplyIntent) {
				r.Posted, r.PostedIDs, r.State = 1, []jam.PlatformMessageID{p1}, store.ReplyPending
			}},
			{"other posted ids", func(r *store.ReplyIntent) { r.PostedIDs = []jam.PlatformMessageID{p2, p1} }},
			{"other parts", func(r *store.ReplyIntent) {
				r.Parts, r.State = 3, store.ReplyPending
			}},
			{"other room", func(r *store.ReplyIntent) { r.Room = newUUID[jam.RoomID]() }},
			{"back to pending", func(r *store.ReplyIntent) { r.State = store.ReplyPending }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := step
				r.PostedIDs = append([]jam.PlatformMessageID(nil), step.PostedIDs...)
				tt.mutate(&r)
				require.ErrorIs(t, b.st.ReplyIntentPut(t.Context(), r), jam.ErrConflict)
			})
		}

		_, err = b.st.ReplyIntentGet(ctx, b.other, b.peer.Key, row.MessageID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's intent")
	})
	t.Run("ReplyLinks_recordedWithPostedIDs", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		row := b.queue(t, b.ws, b.peer.Key, newUUID[jam.RoomID]())
		turn := jam.TurnID("turn_links")
		r := store.ReplyIntent{WorkspaceID: b.ws, Peer: b.peer.Key, Room: row.Room, MessageID: row.MessageID,
			Sealed: []byte("sealed-reply"), Parts: 2, State: store.ReplyPending, CreatedAt: epoch, Turn: turn}
		require.NoError(t, b.st.ReplyIntentPut(ctx, r))
		p1, p2, other := newUUID[jam.PlatformMessageID](), newUUID[jam.PlatformMessageID](), newUUID[jam.PlatformMessageID]()
		links, err := b.st.ReplyLinks(ctx, b.ws, []jam.PlatformMessageID{p1, p2})
		require.NoError(t, err)
		require.Empty(t, links, "nothing posted yet")

		r.Posted, r.PostedIDs, r.UpdatedAt = 1, []jam.PlatformMessageID{p1}, epoch.Add(time.Second)
		require.NoError(t, b.st.ReplyIntentPut(ctx, r))
		// A resumed reply's put carries no turn: the recorded link keeps it.
		r.Turn = ""
		r.Posted, r.PostedIDs, r.State, r.UpdatedAt = 2, []jam.PlatformMessageID{p1, p2}, store.ReplyPosted, epoch.Add(2*time.Second)
		require.NoError(t, b.st.ReplyIntentPut(ctx, r))
		require.NoError(t, b.st.ReplyIntentPut(ctx, r), "the same put again is fine")

		links, err = b.st.ReplyLinks(ctx, b.ws, []jam.PlatformMessageID{p2, other, p1, "not-a-uuid"})
		require.NoError(t, err)
		want := map[jam.PlatformMessageID]store.ReplyLink{
			p1: {MessageID: p1, Peer: b.peer.Key, Room: row.Room, ReplyTo: row.MessageID, Turn: turn},
			p2: {MessageID: p2, Peer: b.peer.Key, Room: row.Room, ReplyTo: row.MessageID},
		}
		got := map[jam.PlatformMessageID]store.ReplyLink{}
		for _, l := range links {
			got[l.MessageID] = l
		}
		require.Equal(t, want, got, "a link per posted id; other ids left out")

		links, err = b.st.ReplyLinks(ctx, b.other, []jam.PlatformMessageID{p1, p2})
		require.NoError(t, err)
		require.Empty(t, links, "another workspace's links")

		_, err = b.st.PeerRemove(ctx, b.ws, b.peer.Key)
		require.NoError(t, err)
		links, err = b.st.ReplyLinks(ctx, b.ws, []jam.PlatformMessageID{p1, p2})
		require.NoError(t, err)
		require.Empty(t, links, "removing the peer removes its links")
	})
	messagingInvalid(t, setup, "Reply_invalidParams", "reply ")
}
