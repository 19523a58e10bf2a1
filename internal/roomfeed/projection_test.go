package roomfeed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
)

func upsertMut(seq int64, m protocol.Message) Mutation {
	return Mutation{Seq: seq, Kind: MutationUpsert, MessageID: jam.PlatformMessageID(m.ID), Message: &m}
}

func deleteMut(seq int64, n int) Mutation {
	return Mutation{Seq: seq, Kind: MutationDelete, MessageID: jam.PlatformMessageID(msgID(n))}
}

func msgIDs(ms []protocol.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestMerge(t *testing.T) {
	t.Parallel()
	edited := text(2, "edited")
	cases := []struct {
		name     string
		snapshot []protocol.Message
		live     []Mutation
		want     []string
		check    func(t *testing.T, got []protocol.Message)
	}{
		{name: "snapshot only, newest first", snapshot: []protocol.Message{text(3, "c"), text(2, "b"), text(1, "a")}, want: []string{msgID(3), msgID(2), msgID(1)}},
		{name: "unordered snapshot is ordered", snapshot: []protocol.Message{text(1, "a"), text(3, "c"), text(2, "b")}, want: []string{msgID(3), msgID(2), msgID(1)}},
		{name: "live message the snapshot lacks", snapshot: []protocol.Message{text(1, "a")}, live: []Mutation{upsertMut(5, text(2, "b"))}, want: []string{msgID(2), msgID(1)}},
		{
			name: "live edit replaces the snapshot's version", snapshot: []protocol.Message{text(2, "b"), text(1, "a")}, live: []Mutation{upsertMut(5, edited)},
			want: []string{msgID(2), msgID(1)},
			check: func(t *testing.T, got []protocol.Message) {
				require.Equal(t, "edited", got[0].Content)
			},
		},
		{name: "live delete removes a snapshot message", snapshot: []protocol.Message{text(2, "b"), text(1, "a")}, live: []Mutation{deleteMut(5, 2)}, want: []string{msgID(1)}},
		{name: "delete then re-create in order", snapshot: nil, live: []Mutation{upsertMut(4, text(1, "a")), deleteMut(5, 1), upsertMut(6, text(1, "again"))}, want: []string{msgID(1)}},
		{name: "create then delete in order", snapshot: nil, live: []Mutation{upsertMut(4, text(1, "a")), deleteMut(5, 1)}, want: []string{}},
		{name: "delivery status from live", snapshot: []protocol.Message{text(1, "a")}, live: []Mutation{upsertMut(2, withDelivery(text(1, "a"), protocol.DeliveryProcessed))}, want: []string{msgID(1)},
			check: func(t *testing.T, got []protocol.Message) {
				require.Equal(t, protocol.DeliveryProcessed, got[0].Metadata.DeliveryStatus[agentID].Status)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := merge(tc.snapshot, tc.live)
			require.Equal(t, tc.want, msgIDs(got))
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestJournal_floorAndSince(t *testing.T) {
	t.Parallel()
	j := newJournal(3)
	add := func(room jam.RoomID, seq int64) (journalEntry, bool) {
		return j.add(journalEntry{room: room, mut: Mutation{Seq: seq}})
	}
	for i, tc := range []struct {
		room    jam.RoomID
		seq     int64
		evicted bool
	}{{roomA, 1, false}, {roomB, 1, false}, {roomA, 2, false}, {roomA, 3, true}, {roomB, 2, true}} {
		_, ev := add(tc.room, tc.seq)
		require.Equal(t, tc.evicted, ev, "add %d", i)
	}
	seqs := func(ms []Mutation) []int64 {
		out := []int64{}
		for _, m := range ms {
			out = append(out, m.Seq)
		}
		return out
	}
	require.Equal(t, []int64{2, 3}, seqs(j.since(roomA, 0)), "room A's entries in order; A@1 was evicted")
	require.Equal(t, []int64{3}, seqs(j.since(roomA, 2)))
	require.Equal(t, []int64{2}, seqs(j.since(roomB, 1)))
	require.Empty(t, j.since(roomB, 2))
}

func TestRoomState_applyUpsert(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		window   int
		seed     []protocol.Message
		upsert   protocol.Message
		wantOK   bool
		wantNew  bool
		wantSeq  int64
		wantGone string
	}{
		{name: "new message", window: 3, upsert: text(1, "a"), wantOK: true, wantNew: true, wantSeq: 1},
		{name: "identical is ignored", window: 3, seed: []protocol.Message{text(1, "a")}, upsert: text(1, "a"), wantSeq: 1},
		{name: "edit is accepted", window: 3, seed: []protocol.Message{text(1, "a")}, upsert: text(1, "b"), wantOK: true, wantSeq: 2},
		{name: "delivery status change is accepted", window: 3, seed: []protocol.Message{withDelivery(text(1, "a"), protocol.DeliveryDelivered)},
			upsert: withDelivery(text(1, "a"), protocol.DeliveryProcessing), wantOK: true, wantSeq: 2},
		{name: "full window evicts the oldest", window: 2, seed: []protocol.Message{text(1, "a"), text(2, "b")}, upsert: text(3, "c"), wantOK: true, wantNew: true, wantSeq: 3, wantGone: msgID(1)},
		{name: "older than a full window is ignored", window: 2, seed: []protocol.Message{text(2, "b"), text(3, "c")}, upsert: text(1, "a"), wantSeq: 2},
		{name: "update of a retained row in a full window", window: 2, seed: []protocol.Message{text(2, "b"), text(3, "c")}, upsert: text(2, "B"), wantOK: true, wantSeq: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRoomState()
			for _, m := range tc.seed {
				_, _, _, ok := r.applyUpsert(&m, parseTime(m.InsertedAt, time.Time{}), tc.window)
				require.True(t, ok)
			}
			u := tc.upsert
			row, isNew, evicted, ok := r.applyUpsert(&u, parseTime(u.InsertedAt, time.Time{}), tc.window)
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.wantNew, isNew)
			require.Equal(t, tc.wantSeq, r.seq)
			if ok {
				require.Equal(t, r.seq, row.Seq)
			}
			if tc.wantGone != "" {
				require.NotNil(t, evicted)
				require.Equal(t, tc.wantGone, evicted.Message.ID)
				require.NotContains(t, r.rows, jam.PlatformMessageID(tc.wantGone))
			} else {
				require.Nil(t, evicted)
			}
			require.LessOrEqual(t, len(r.rows), tc.window)
		})
	}
}
