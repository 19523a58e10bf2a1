package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// quarantineBundle is a store with one peer and a room holding spooled and
// queued messages, to corrupt by hand.
type quarantineBundle struct {
	*testBundle
	ws    jam.WorkspaceID
	peer  jam.PeerKey
	room  jam.RoomID
	spool []store.SpoolEntry
	queue []store.QueueRow
}

func setupQuarantine(t *testing.T, spooled, queued int) *quarantineBundle {
	t.Helper()
	b := &quarantineBundle{testBundle: setup(t), peer: jam.PeerKey{Profile: "p", Scope: "a"}, room: "5f0c6c8e-2f6b-4d8a-9b1e-0a4c7e2d9f31"}
	ctx := t.Context()
	m := jam.NewMinter(nil, nil)
	w, err := b.st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: time.Now()})
	require.NoError(t, err)
	b.ws = w.ID
	msg := func(i int) jam.PlatformMessageID {
		return jam.PlatformMessageID(strings.Replace("00000000-0000-4000-8000-0000000000nn", "nn", string(rune('a'+i/16))+string("0123456789abcdef"[i%16]), 1))
	}
	for i := range spooled + queued {
		e := store.SpoolEntry{WorkspaceID: b.ws, Peer: b.peer, Room: b.room, MessageID: msg(i), Sealed: []byte("sealed"), ReceivedAt: time.Now()}
		res, err := b.st.SpoolAppend(ctx, []store.SpoolEntry{e})
		require.NoError(t, err)
		e.Seq = res.Seqs[0]
		if i < queued {
			row, err := b.st.SpoolMove(ctx, e.Seq, store.QueueRow{WorkspaceID: b.ws, Sealed: []byte("rendered"), State: store.QueueQueued})
			require.NoError(t, err)
			b.queue = append(b.queue, row)
		} else {
			b.spool = append(b.spool, e)
		}
	}
	return b
}

func (b *quarantineBundle) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	res, err := b.st.writer.ExecContext(t.Context(), query, args...)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "%s changes one row", query)
}

// TestQuarantineInvalid_findsCorruptColumns corrupts one column of a row
// at a time, the way a damaged file or a hand edit would, and checks that
// reads meeting the row fail with store.ErrCorrupt (or skip nothing
// silently), that QuarantineInvalid moves exactly that row with a reason
// naming the column, and that the rest flows again.
func TestQuarantineInvalid_findsCorruptColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		table    string // "spool" or "queue"
		set      string // the SET clause
		reason   string
		readFail bool // whether SpoolNext/QueueList fail on the row
	}{
		{"spool time is text", "spool", "received_at = 'yesterday'", "received_at yesterday is not a positive integer", true},
		{"spool sealed is empty", "spool", "sealed = x''", "sealed is empty", true},
		{"spool sealed is text", "spool", "sealed = 'plain'", "sealed is text, not a blob", false},
		{"spool room is not a uuid", "spool", "room_id = 'lobby'", "room_id:", false},
		{"spool message is not an id", "spool", "message_id = 'm1'", "message_id:", false},
		{"spool workspace is blob", "spool", "workspace_id = x'00ff'", "workspace_id is a blob, not text", false},
		{"queue state unknown", "queue", "state = 'lost'", `state "lost" is unknown`, false},
		{"queue attempts negative", "queue", "attempts = -1", "attempts -1 is not a count", false},
		{"queue claimed is text", "queue", "claimed_at = 'soon'", "claimed_at soon is not a positive integer", true},
		{"queue sealed empty", "queue", "sealed = x''", "sealed is empty", true},
		{"queue peer invalid", "queue", "scope = 'NO SPACES'", "peer:", false},
		{"queue binding invalid", "queue", "binding_id = 'bind'", "binding_id:", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupQuarantine(t, 3, 3)
			ctx := t.Context()
			var victim int64
			if tt.table == "spool" {
				victim = b.spool[1].Seq
				b.exec(t, "UPDATE spool SET "+tt.set+" WHERE seq = ?", victim)
				_, err := b.st.SpoolNext(ctx, b.ws, b.peer, b.room, 10)
				if tt.readFail {
					require.ErrorIs(t, err, store.ErrCorrupt)
				}
			} else {
				victim = b.queue[1].Seq
				b.exec(t, "UPDATE queue SET "+tt.set+" WHERE seq = ?", victim)
				_, err := b.st.QueueList(ctx, store.QueueListParams{WorkspaceID: b.ws})
				if tt.readFail {
					require.ErrorIs(t, err, store.ErrCorrupt)
				}
			}

			at := time.Now()
			recs, err := b.st.QuarantineInvalid(ctx, at)
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.Equal(t, tt.table, recs[0].Source)
			require.Equal(t, victim, recs[0].Seq)
			require.Contains(t, recs[0].Reason, tt.reason)
			require.NotEmpty(t, recs[0].Row)

			// The others flow, in order.
			next, err := b.st.SpoolNext(ctx, b.ws, b.peer, b.room, 10)
			require.NoError(t, err)
			rows, err := b.st.QueueList(ctx, store.QueueListParams{WorkspaceID: b.ws})
			require.NoError(t, err)
			if tt.table == "spool" {
				require.Len(t, next, 2)
				require.Equal(t, []int64{b.spool[0].Seq, b.spool[2].Seq}, []int64{next[0].Seq, next[1].Seq})
				require.Len(t, rows, 3)
			} else {
				require.Len(t, next, 3)
				require.Len(t, rows, 2)
				require.Equal(t, []int64{b.queue[0].Seq, b.queue[2].Seq}, []int64{rows[0].Seq, rows[1].Seq})
			}
			usage, err := b.st.SpoolUsage(ctx)
			require.NoError(t, err)
			total := 0
			for _, u := range usage {
				total += u.Entries
			}
			require.Equal(t, len(next), total)

			// Listed with the workspace (or as unattributable).
			list, err := b.st.QuarantineList(ctx, b.ws, 0)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, recs[0].ID, list[0].ID)

			again, err := b.st.QuarantineInvalid(ctx, at)
			require.NoError(t, err)
			require.Empty(t, again, "nothing is left to move")
		})
	}
}

func TestCutReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", store.MaxQuarantineReasonLen)
	tests := []struct{ name, in, want string }{
		{"plain", "open: failed", "open: failed"},
		{"nul removed", "a\x00b", "ab"},
		{"invalid utf-8 replaced", "a\xffb", "a\uFFFDb"},
		{"cut at a rune", long, long[:store.MaxQuarantineReasonLen]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, store.CutQuarantineReason(tt.in))
		})
	}
}

func FuzzCutReason(f *testing.F) {
	f.Add("open: failed")
	f.Add("a\x00\xffb")
	f.Add(strings.Repeat("é", store.MaxQuarantineReasonLen))
	f.Fuzz(func(t *testing.T, in string) {
		out := store.CutQuarantineReason(in)
		require.LessOrEqual(t, len(out), store.MaxQuarantineReasonLen)
		require.NotContains(t, out, "\x00")
		require.True(t, strings.ToValidUTF8(out, "") == out, "valid UTF-8")
	})
}

// FuzzJudgeRow feeds arbitrary column values to the judge of inspected
// spool rows: it never panics, and a row it passes reads back as a valid
// entry.
func FuzzJudgeRow(f *testing.F) {
	f.Add(int64(1), "ws_01m8nfjpttaacc0vj0wmp4qj0z", "p", "a", "5f0c6c8e-2f6b-4d8a-9b1e-0a4c7e2d9f31", "00000000-0000-4000-8000-000000000001", "blob", int64(10), int64(1))
	f.Add(int64(0), "", "", "", "lobby", "m1", "text", int64(0), int64(-1))
	f.Fuzz(func(t *testing.T, seq int64, ws, profile, scope, room, msg, typ string, n, received int64) {
		problem := judgeRow(spoolTable, []any{seq, ws, profile, scope, room, msg, typ, n, received})
		if problem != "" {
			return
		}
		e := store.SpoolEntry{Seq: seq, WorkspaceID: jam.WorkspaceID(ws), Peer: jam.PeerKey{Profile: profile, Scope: scope},
			Room: jam.RoomID(room), MessageID: jam.PlatformMessageID(msg), Sealed: []byte("x"), ReceivedAt: fromMicros(received)}
		_, err := e.Canonical()
		require.NoError(t, err, "a row the judge passes is a valid entry")
	})
}
