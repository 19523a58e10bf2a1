package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// BenchmarkInboxPage reads the first page of an agent's inbox while a
// large backlog is queued (as during a restart's redelivery: 100,000 rows
// across 1,000 rooms, one in twenty delivered), side by side with reading
// the whole queue and picking the delivered rows out (what the inbox did
// before it was paged). Run with -benchtime 20x; the setup takes a while.
func BenchmarkInboxPage(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "jam.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ws, key, _ := benchPeer(b, st)
	const rooms, perRoom = 1000, 100
	m := jam.NewMinter(nil, nil)
	roomIDs := make([]jam.RoomID, rooms)
	for i := range roomIDs {
		roomIDs[i] = jam.RoomID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", 1_000_000+i))
		if _, err := st.BindingPut(ctx, store.Binding{ID: jam.New[jam.BindingID](m), WorkspaceID: ws, Peer: key, Room: roomIDs[i],
			Alias: fmt.Sprintf("r%d", i), SessionID: jam.New[jam.SessionID](m), Mode: jam.RuntimeAttached, CreatedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	var delivered []jam.PlatformMessageID
	n := 0
	for r := 0; r < perRoom; r++ {
		entries := make([]store.SpoolEntry, 0, rooms)
		for i := range rooms {
			n++
			entries = append(entries, store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: roomIDs[i],
				MessageID: jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", n)),
				Sealed:    make([]byte, 1024), ReceivedAt: time.Now()})
			if n%20 == 0 {
				delivered = append(delivered, entries[len(entries)-1].MessageID)
			}
		}
		for i := 0; i < len(entries); i += spoolInsertMax {
			chunk := entries[i:min(i+spoolInsertMax, len(entries))]
			res, err := st.SpoolAppend(ctx, chunk)
			if err != nil {
				b.Fatal(err)
			}
			rows := make([]store.QueueRow, len(chunk))
			for j, e := range chunk {
				rows[j] = store.QueueRow{Seq: res.Seqs[j], WorkspaceID: ws, Sealed: e.Sealed}
			}
			if _, err := st.SpoolMoveBatch(ctx, rows); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, id := range delivered {
		if err := st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: id, State: store.QueueDelivered, At: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			rows, err := st.QueueList(ctx, store.QueueListParams{WorkspaceID: ws, Peer: key, Delivered: true, Limit: 101})
			if err != nil || len(rows) != 101 {
				b.Fatal(len(rows), err)
			}
		}
	})
	b.Run("whole-queue", func(b *testing.B) {
		for b.Loop() {
			rows, err := st.QueueList(ctx, store.QueueListParams{WorkspaceID: ws, Peer: key})
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for _, r := range rows {
				if r.Binding != "" && r.State == store.QueueDelivered {
					got++
				}
			}
			if got != len(delivered) {
				b.Fatal(got)
			}
		}
	})
}
