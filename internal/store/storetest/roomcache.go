package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// cacheItem builds a sealed item of message id at seq, inserted at epoch
// plus n seconds.
func cacheItem(id jam.PlatformMessageID, seq int64, n int) store.RoomCacheItem {
	return store.RoomCacheItem{MessageID: id, Seq: seq, InsertedAt: epoch.Add(time.Duration(n) * time.Second), Sealed: []byte("sealed-" + string(id))}
}

func (b *msgBundle) apply(ws jam.WorkspaceID, room jam.RoomID, seq int64, upserts ...store.RoomCacheItem) store.RoomCacheApplyParams {
	return store.RoomCacheApplyParams{WorkspaceID: ws, AccountID: b.acct.ID, Room: room, Seq: seq, Upserts: upserts, At: epoch}
}

func (b *msgBundle) itemIDs(t *testing.T, room jam.RoomID, limit int) []jam.PlatformMessageID {
	t.Helper()
	items, err := b.st.RoomCacheItems(t.Context(), b.ws, b.acct.ID, room, limit)
	require.NoError(t, err)
	out := make([]jam.PlatformMessageID, len(items))
	for i, it := range items {
		out[i] = it.MessageID
	}
	return out
}

func (b *msgBundle) watermark(t *testing.T, room jam.RoomID) int64 {
	t.Helper()
	states, err := b.st.RoomCacheStates(t.Context(), b.ws, b.acct.ID)
	require.NoError(t, err)
	for _, s := range states {
		if s.Room == room {
			return s.Seq
		}
	}
	return 0
}

func attentionFor(room jam.RoomID, msg jam.PlatformMessageID) store.AttentionItem {
	return store.AttentionItem{Room: room, MessageID: msg, SenderID: newUUID[jam.IdentityID](), Kind: store.AttentionMention, MessageAt: epoch, StagedAt: epoch}
}

// system builds a local system row of room, inserted at epoch plus n
// seconds.
func (b *msgBundle) system(room jam.RoomID, n int) store.RoomSystemMessage {
	id := newUUID[jam.PlatformMessageID]()
	return store.RoomSystemMessage{
		WorkspaceID: b.ws, AccountID: b.acct.ID, Room: room, MessageID: id, ParticipantID: newUUID[jam.IdentityID](),
		InsertedAt: epoch.Add(time.Duration(n) * time.Second), Sealed: []byte("sealed-" + string(id)), CreatedAt: epoch,
	}
}

// roomCacheCases covers [store.RoomCache].
func roomCacheCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *msgBundle { t.Helper(); return setupMessaging(t, open) }

	t.Run("RoomCache_applyAndRead", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		m1, m2 := newUUID[jam.PlatformMessageID](), newUUID[jam.PlatformMessageID]()
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 1, cacheItem(m1, 1, 1))))
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 2, cacheItem(m2, 2, 2))))

		items, err := b.st.RoomCacheItems(ctx, b.ws, b.acct.ID, room, 0)
		require.NoError(t, err)
		require.Len(t, items, 2)
		require.Equal(t, m2, items[0].MessageID, "newest first")
		require.Equal(t, int64(2), items[0].Seq)
		require.Equal(t, []byte("sealed-"+string(m2)), items[0].Sealed)
		requireTime(t, epoch.Add(2*time.Second), items[0].InsertedAt)

		states, err := b.st.RoomCacheStates(ctx, b.ws, b.acct.ID)
		require.NoError(t, err)
		require.Len(t, states, 1)
		require.Equal(t, store.RoomCacheState{Room: room, Seq: 2, UpdatedAt: epoch.Truncate(time.Microsecond).UTC()}, states[0])

		// An update replaces the item; a delete removes it; a missing
		// delete is fine.
		up := cacheItem(m1, 3, 1)
		up.Sealed = []byte("edited")
		p := b.apply(b.ws, room, 3, up)
		p.Deletes = []jam.PlatformMessageID{m2, newUUID[jam.PlatformMessageID]()}
		require.NoError(t, b.st.RoomCacheApply(ctx, p))
		items, err = b.st.RoomCacheItems(ctx, b.ws, b.acct.ID, room, 0)
		require.NoError(t, err)
		require.Len(t, items, 1)
		require.Equal(t, []byte("edited"), items[0].Sealed)
		require.Equal(t, int64(3), items[0].Seq)

		// An upper-case id finds the same room.
		items, err = b.st.RoomCacheItems(ctx, b.ws, b.acct.ID, jam.RoomID(strings.ToUpper(string(room))), 1)
		require.NoError(t, err)
		require.Len(t, items, 1)
	})

	t.Run("RoomCache_watermarkNeverRegresses", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 5, cacheItem(newUUID[jam.PlatformMessageID](), 5, 5))))
		for _, seq := range []int64{5, 4, 1} {
			stale := newUUID[jam.PlatformMessageID]()
			p := b.apply(b.ws, room, seq, cacheItem(stale, seq, 9))
			p.Attention = []store.AttentionItem{attentionFor(room, stale)}
			err := b.st.RoomCacheApply(ctx, p)
			require.ErrorIs(t, err, jam.ErrConflict, "seq %d", seq)
			require.NotContains(t, b.itemIDs(t, room, 0), stale, "a rejected write writes nothing")
		}
		att, err := b.st.AttentionList(ctx, b.ws, b.acct.ID, 0)
		require.NoError(t, err)
		require.Empty(t, att, "a rejected write stages no attention")
		require.Equal(t, int64(5), b.watermark(t, room))

		// Any newer sequence is accepted, gaps included.
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 9)))
		require.Equal(t, int64(9), b.watermark(t, room))
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 10)))
		require.Equal(t, int64(10), b.watermark(t, room))
	})

	t.Run("RoomCache_concurrentWritersOfOneSequence", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room := newUUID[jam.RoomID]()
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				errs[i] = b.st.RoomCacheApply(t.Context(), b.apply(b.ws, room, 1, cacheItem(newUUID[jam.PlatformMessageID](), 1, i)))
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.ErrorIs(t, err, jam.ErrConflict)
		}
		require.Equal(t, 1, won, "exactly one write of sequence 1 wins")
		require.Len(t, b.itemIDs(t, room, 0), 1)
	})

	t.Run("RoomCache_windowKeepsNewest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		var all []jam.PlatformMessageID
		seq := int64(0)
		// Written newest first in batches, so trimming must go by time,
		// not by write order.
		for batch := range 3 {
			var items []store.RoomCacheItem
			seq++
			for i := range 40 {
				id := newUUID[jam.PlatformMessageID]()
				n := 1000 - batch*40 - i
				all = append(all, id)
				items = append(items, cacheItem(id, seq, n))
			}
			require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, seq, items...)))
		}
		got := b.itemIDs(t, room, 0)
		require.Len(t, got, store.RoomCacheWindow)
		require.Equal(t, all[:store.RoomCacheWindow], got)
		require.Equal(t, all[:3], b.itemIDs(t, room, 3))
		require.Len(t, b.itemIDs(t, room, 1000), store.RoomCacheWindow, "a limit is clamped to the window")
	})

	t.Run("RoomCache_replace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room, other := newUUID[jam.RoomID](), newUUID[jam.RoomID]()
		old, kept := newUUID[jam.PlatformMessageID](), newUUID[jam.PlatformMessageID]()
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 1, cacheItem(old, 1, 1), cacheItem(kept, 1, 2))))
		otherMsg := newUUID[jam.PlatformMessageID]()
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, other, 1, cacheItem(otherMsg, 1, 1))))

		fresh := newUUID[jam.PlatformMessageID]()
		p := b.apply(b.ws, room, 7, cacheItem(kept, 1, 2), cacheItem(fresh, 7, 3))
		p.Replace = true
		require.NoError(t, b.st.RoomCacheApply(ctx, p))
		require.Equal(t, []jam.PlatformMessageID{fresh, kept}, b.itemIDs(t, room, 0))
		require.Equal(t, []jam.PlatformMessageID{otherMsg}, b.itemIDs(t, other, 0), "other rooms are untouched")

		// Replacing with nothing empties the window.
		p = b.apply(b.ws, room, 8)
		p.Replace = true
		require.NoError(t, b.st.RoomCacheApply(ctx, p))
		require.Empty(t, b.itemIDs(t, room, 0))
		require.Equal(t, int64(8), b.watermark(t, room))
	})

	t.Run("RoomCache_attentionStagedWithTheWrite", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		msg := newUUID[jam.PlatformMessageID]()
		p := b.apply(b.ws, room, 1, cacheItem(msg, 1, 1))
		a := attentionFor(room, msg)
		p.Attention = []store.AttentionItem{a}
		require.NoError(t, b.st.RoomCacheApply(ctx, p))

		// Staging the same message again is a no-op.
		p = b.apply(b.ws, room, 2, cacheItem(msg, 2, 1))
		again := a
		again.StagedAt = epoch.Add(time.Hour)
		p.Attention = []store.AttentionItem{again}
		require.NoError(t, b.st.RoomCacheApply(ctx, p))

		list, err := b.st.AttentionList(ctx, b.ws, b.acct.ID, 0)
		require.NoError(t, err)
		require.Len(t, list, 1)
		got := list[0]
		require.Equal(t, b.ws, got.WorkspaceID)
		require.Equal(t, b.acct.ID, got.AccountID)
		require.Equal(t, room, got.Room)
		require.Equal(t, msg, got.MessageID)
		require.Equal(t, a.SenderID, got.SenderID)
		require.Equal(t, store.AttentionMention, got.Kind)
		requireTime(t, epoch, got.StagedAt)
		requireTime(t, epoch, got.MessageAt)

		// A write that fails validation stages nothing either.
		bad := b.apply(b.ws, room, 3, cacheItem(newUUID[jam.PlatformMessageID](), 3, 1))
		bad.Attention = []store.AttentionItem{attentionFor(room, newUUID[jam.PlatformMessageID]())}
		bad.Upserts[0].Sealed = nil
		require.ErrorIs(t, b.st.RoomCacheApply(ctx, bad), jam.ErrInvalid)
		list, err = b.st.AttentionList(ctx, b.ws, b.acct.ID, 0)
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("RoomCache_attentionIsBounded", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room := newUUID[jam.RoomID]()
		p := b.apply(b.ws, room, 1)
		for i := range store.MaxAttentionItems + 5 {
			a := attentionFor(room, newUUID[jam.PlatformMessageID]())
			a.StagedAt = epoch.Add(time.Duration(i) * time.Millisecond)
			p.Attention = append(p.Attention, a)
		}
		require.NoError(t, b.st.RoomCacheApply(t.Context(), p))
		list, err := b.st.AttentionList(t.Context(), b.ws, b.acct.ID, 0)
		require.NoError(t, err)
		require.Len(t, list, store.MaxAttentionItems)
		require.Equal(t, p.Attention[len(p.Attention)-1].MessageID, list[0].MessageID, "newest staged first")
		list, err = b.st.AttentionList(t.Context(), b.ws, b.acct.ID, 2)
		require.NoError(t, err)
		require.Len(t, list, 2)
	})

	t.Run("RoomCache_retireKeepsTheWatermark", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 4, cacheItem(newUUID[jam.PlatformMessageID](), 4, 1))))
		require.NoError(t, b.st.RoomSystemAppend(ctx, b.system(room, 1)))
		require.NoError(t, b.st.RoomCacheRetire(ctx, b.ws, b.acct.ID, room))
		require.Empty(t, b.itemIDs(t, room, 0))
		sys, err := b.st.RoomSystemList(ctx, b.ws, b.acct.ID, room, 0)
		require.NoError(t, err)
		require.Empty(t, sys)
		require.Equal(t, int64(4), b.watermark(t, room))
		require.ErrorIs(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 4)), jam.ErrConflict)
		require.NoError(t, b.st.RoomCacheRetire(ctx, b.ws, b.acct.ID, newUUID[jam.RoomID]()), "nothing cached")
	})

	t.Run("RoomSystem_appendListCap", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		first := b.system(room, 0)
		require.NoError(t, b.st.RoomSystemAppend(ctx, first))
		require.NoError(t, b.st.RoomSystemAppend(ctx, first), "appending the same row twice is a no-op")
		list, err := b.st.RoomSystemList(ctx, b.ws, b.acct.ID, room, 0)
		require.NoError(t, err)
		require.Len(t, list, 1)
		got := list[0]
		require.Equal(t, first.MessageID, got.MessageID)
		require.Equal(t, first.ParticipantID, got.ParticipantID)
		require.Equal(t, first.Sealed, got.Sealed)
		require.Equal(t, b.ws, got.WorkspaceID)
		require.Equal(t, b.acct.ID, got.AccountID)
		requireTime(t, first.InsertedAt, got.InsertedAt)
		requireTime(t, first.CreatedAt, got.CreatedAt)

		var last store.RoomSystemMessage
		for i := 1; i <= store.MaxRoomSystemMessages+10; i++ {
			last = b.system(room, i)
			require.NoError(t, b.st.RoomSystemAppend(ctx, last))
		}
		list, err = b.st.RoomSystemList(ctx, b.ws, b.acct.ID, room, 0)
		require.NoError(t, err)
		require.Len(t, list, store.MaxRoomSystemMessages)
		require.Equal(t, last.MessageID, list[0].MessageID, "newest first")
		for _, m := range list {
			require.NotEqual(t, first.MessageID, m.MessageID, "the oldest rows go first")
		}
	})

	t.Run("RoomCache_unknownAccountAndIsolation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		room := newUUID[jam.RoomID]()
		msg := newUUID[jam.PlatformMessageID]()
		require.NoError(t, b.st.RoomCacheApply(ctx, b.apply(b.ws, room, 1, cacheItem(msg, 1, 1))))

		// The account exists only in b.ws.
		require.ErrorIs(t, b.st.RoomCacheApply(ctx, b.apply(b.other, room, 1)), jam.ErrNotFound)
		sys := b.system(room, 1)
		sys.WorkspaceID = b.other
		require.ErrorIs(t, b.st.RoomSystemAppend(ctx, sys), jam.ErrNotFound)
		p := b.apply(b.ws, room, 2)
		p.AccountID = jam.New[jam.AccountID](b.minter)
		require.ErrorIs(t, b.st.RoomCacheApply(ctx, p), jam.ErrNotFound)

		items, err := b.st.RoomCacheItems(ctx, b.other, b.acct.ID, room, 0)
		require.NoError(t, err)
		require.Empty(t, items)
		states, err := b.st.RoomCacheStates(ctx, b.other, b.acct.ID)
		require.NoError(t, err)
		require.Empty(t, states)
		att, err := b.st.AttentionList(ctx, b.other, b.acct.ID, 0)
		require.NoError(t, err)
		require.Empty(t, att)
	})

	t.Run("RoomCache_invalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		room := newUUID[jam.RoomID]()
		msg := newUUID[jam.PlatformMessageID]()
		cases := []struct {
			name   string
			mutate func(p *store.RoomCacheApplyParams)
		}{
			{"zero sequence", func(p *store.RoomCacheApplyParams) { p.Seq = 0 }},
			{"bad workspace", func(p *store.RoomCacheApplyParams) { p.WorkspaceID = "ws_x" }},
			{"bad account", func(p *store.RoomCacheApplyParams) { p.AccountID = "acct_x" }},
			{"bad room", func(p *store.RoomCacheApplyParams) { p.Room = "room" }},
			{"zero time", func(p *store.RoomCacheApplyParams) { p.At = time.Time{} }},
			{"bad message id", func(p *store.RoomCacheApplyParams) { p.Upserts[0].MessageID = "m" }},
			{"item above the write", func(p *store.RoomCacheApplyParams) { p.Upserts[0].Seq = p.Seq + 1 }},
			{"item without time", func(p *store.RoomCacheApplyParams) { p.Upserts[0].InsertedAt = time.Time{} }},
			{"empty sealed", func(p *store.RoomCacheApplyParams) { p.Upserts[0].Sealed = nil }},
			{"written twice", func(p *store.RoomCacheApplyParams) { p.Upserts = append(p.Upserts, p.Upserts[0]) }},
			{"upserted and deleted", func(p *store.RoomCacheApplyParams) { p.Deletes = []jam.PlatformMessageID{msg} }},
			{"bad delete", func(p *store.RoomCacheApplyParams) { p.Deletes = []jam.PlatformMessageID{"x"} }},
			{"attention of another room", func(p *store.RoomCacheApplyParams) {
				p.Attention = []store.AttentionItem{attentionFor(newUUID[jam.RoomID](), msg)}
			}},
			{"attention without kind", func(p *store.RoomCacheApplyParams) {
				a := attentionFor(room, msg)
				a.Kind = ""
				p.Attention = []store.AttentionItem{a}
			}},
			{"too many items", func(p *store.RoomCacheApplyParams) {
				for range store.MaxRoomCacheApplyItems {
					p.Deletes = append(p.Deletes, newUUID[jam.PlatformMessageID]())
				}
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				p := b.apply(b.ws, room, 1, cacheItem(msg, 1, 1))
				tc.mutate(&p)
				require.ErrorIs(t, b.st.RoomCacheApply(t.Context(), p), jam.ErrInvalid)
			})
		}
		_, err := b.st.RoomCacheItems(t.Context(), b.ws, b.acct.ID, room, -1)
		require.ErrorIs(t, err, jam.ErrInvalid)
		bad := b.system(room, 1)
		bad.ParticipantID = "p"
		require.ErrorIs(t, b.st.RoomSystemAppend(t.Context(), bad), jam.ErrInvalid)
	})
}
