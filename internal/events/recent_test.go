package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func seqsOf(evs []*Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestRecent(t *testing.T) {
	t.Parallel()
	mk := func(seqs ...int64) []*Event {
		var out []*Event
		for _, s := range seqs {
			out = append(out, &Event{Seq: s, Kind: "k", Data: json.RawMessage(`{"x":1}`)})
		}
		return out
	}
	r := newRecent(4, 1<<20, 10)
	page, ok := r.after(10, 100, 10)
	require.True(t, ok, "everything after the start is held: nothing yet")
	require.Empty(t, page)
	_, ok = r.after(9, 100, 10)
	require.False(t, ok, "before the start is the store's")

	r.add(mk(11, 13, 14)) // gaps: sequences of other workspaces
	page, ok = r.after(10, 100, 10)
	require.True(t, ok)
	require.Equal(t, []int64{11, 13, 14}, seqsOf(page))
	page, _ = r.after(12, 13, 10)
	require.Equal(t, []int64{13}, seqsOf(page), "up to the floor only")
	page, _ = r.after(10, 100, 2)
	require.Equal(t, []int64{11, 13}, seqsOf(page), "at most limit")

	r.add(mk(15, 16)) // evicts 11
	_, ok = r.after(10, 100, 10)
	require.False(t, ok)
	page, ok = r.after(11, 100, 10)
	require.True(t, ok, "11 was evicted, so everything after it is held")
	require.Equal(t, []int64{13, 14, 15, 16}, seqsOf(page))

	// The byte bound evicts too, and never leaves the cache claiming
	// events it does not hold.
	big := &Event{Seq: 17, Kind: "k", Data: json.RawMessage(`{"x":"` + strings.Repeat("x", 100) + `"}`)}
	small := newRecent(100, 50, 0)
	small.add(mk(1, 2))
	small.add([]*Event{big})
	_, ok = small.after(1, 100, 10)
	require.False(t, ok)
	page, ok = small.after(17, 100, 10)
	require.True(t, ok)
	require.Empty(t, page)

	off := newRecent(-1, 1<<20, 5)
	off.add(mk(6, 7))
	_, ok = off.after(6, 100, 10)
	require.False(t, ok)
	page, ok = off.after(7, 100, 10)
	require.True(t, ok, "a disabled cache still knows nothing follows the last")
	require.Empty(t, page)
}
