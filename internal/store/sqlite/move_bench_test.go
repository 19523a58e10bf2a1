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

// BenchmarkSpoolMove moves spooled messages to the queue one transaction
// per message (SpoolMove, what the engine did before batching) and one
// transaction per lane batch of 64 (SpoolMoveBatch), side by side. Each
// transaction is a durable commit (synchronous=FULL), so the figure that
// matters is moves/s; run with -benchtime 5000x for comparable sizes.
func BenchmarkSpoolMove(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			st, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "jam.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ws, key, room := benchPeer(b, st)
			entries := make([]store.SpoolEntry, b.N)
			for i := range entries {
				entries[i] = store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room,
					MessageID: jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", i)),
					Sealed:    make([]byte, 1024), ReceivedAt: time.Now()}
			}
			var seqs []int64
			for i := 0; i < len(entries); i += spoolInsertMax {
				res, err := st.SpoolAppend(ctx, entries[i:min(i+spoolInsertMax, len(entries))])
				if err != nil {
					b.Fatal(err)
				}
				seqs = append(seqs, res.Seqs...)
			}
			rows := make([]store.QueueRow, len(entries))
			for i, e := range entries {
				rows[i] = store.QueueRow{Seq: seqs[i], WorkspaceID: ws, Sealed: e.Sealed}
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(rows); i += batch {
				chunk := rows[i:min(i+batch, len(rows))]
				if batch == 1 {
					_, err = st.SpoolMove(ctx, chunk[0].Seq, chunk[0])
				} else {
					_, err = st.SpoolMoveBatch(ctx, chunk)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(rows))/time.Since(start).Seconds(), "moves/s")
		})
	}
}

func benchPeer(tb testing.TB, st *Store) (jam.WorkspaceID, jam.PeerKey, jam.RoomID) {
	tb.Helper()
	ctx := context.Background()
	m := jam.NewMinter(nil, nil)
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "bench", At: time.Now()})
	if err != nil {
		tb.Fatal(err)
	}
	key := jam.PeerKey{Profile: "p", Scope: "a"}
	acct, err := st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](m), WorkspaceID: w.ID, Profile: "p", BandURL: "http://band",
		UserID: "0190a1b2-0000-4000-8000-00000000000b", Handle: "owner", KeySealed: []byte("k"), CreatedAt: time.Now()})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.PeerPut(ctx, store.Peer{WorkspaceID: w.ID, Key: key, AccountID: acct.ID, AgentID: "0190a1b2-0000-4000-8000-00000000000a",
		Handle: "owner/a", Name: "a", KeySealed: []byte("k"), CreatedAt: time.Now()}); err != nil {
		tb.Fatal(err)
	}
	return w.ID, key, "0190a1b2-0000-4000-8000-0000000000aa"
}
