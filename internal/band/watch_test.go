package band

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWatchSet_Rooms(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	w := NewWatchSet()
	dir := map[string]time.Time{}
	for i := range 100 {
		dir[fmt.Sprintf("d%03d", i)] = base.Add(time.Duration(i) * time.Minute)
	}
	w.SetDirectory(dir)

	rooms := w.Rooms()
	require.Len(t, rooms, MaxWatchedRooms)
	require.Equal(t, "d099", rooms[0], "the directory ranks by last activity")
	require.Equal(t, "d052", rooms[MaxWatchedRooms-1])

	w.Observe("d000", base.Add(time.Hour))
	require.Equal(t, "d000", w.Rooms()[0], "observed traffic outranks the directory")

	for i := range 10 {
		w.Pin(fmt.Sprintf("p%d", i), base.Add(time.Duration(i)*time.Second))
	}
	rooms = w.Rooms()
	require.Equal(t, []string{"p9", "p8", "p7", "p6", "p5", "p4", "p3", "p2"}, rooms[:MaxPinnedRooms], "at most 8 pins, newest first; the oldest pins drop")
	require.Equal(t, "d000", rooms[MaxPinnedRooms])
	require.Len(t, rooms, MaxWatchedRooms)

	w.Unpin("p9")
	w.Forget("p8")
	w.Forget("d000")
	rooms = w.Rooms()
	require.Equal(t, "p7", rooms[0])
	require.NotContains(t, rooms, "d000")
	seen := map[string]bool{}
	for _, r := range rooms {
		require.False(t, seen[r], "room %s listed twice", r)
		seen[r] = true
	}
}
