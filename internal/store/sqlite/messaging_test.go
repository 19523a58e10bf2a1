package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Cases of SpoolMove that the API cannot produce (SpoolAppend refuses a
// message that is queued or settled), set up here with raw SQL: a leftover
// entry must still leave the spool without a second queue row.
func TestStore_SpoolMove_leftoverEntry(t *testing.T) {
	t.Parallel()
	const (
		room = jam.RoomID("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
		msg  = jam.PlatformMessageID("0190a1b2-c3d4-7e5f-8a9b-000000000001")
	)
	at := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	key := jam.PeerKey{Profile: "p", Scope: "a"}
	tests := []struct {
		name     string
		prepare  func(t *testing.T, st *Store, ws jam.WorkspaceID) store.QueueRow
		wantRows int
	}{
		{"already queued", func(t *testing.T, st *Store, ws jam.WorkspaceID) store.QueueRow {
			e := spoolOne(t, st, ws, key, room, msg, at)
			row, err := st.SpoolMove(t.Context(), e.Seq, store.QueueRow{WorkspaceID: ws, Sealed: []byte("first")})
			require.NoError(t, err)
			return row
		}, 1},
		{"already settled", func(t *testing.T, st *Store, ws jam.WorkspaceID) store.QueueRow {
			e := spoolOne(t, st, ws, key, room, msg, at)
			require.NoError(t, st.SpoolDrop(t.Context(), e.Seq, at))
			return store.QueueRow{}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := setup(t).st
			ctx := t.Context()
			ws := jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil))
			_, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: ws, Name: "w", At: at})
			require.NoError(t, err)
			want := tt.prepare(t, st, ws)

			// The leftover: the same message in the spool again.
			res, err := st.writer.ExecContext(ctx, `INSERT INTO spool (workspace_id, profile, scope, room_id, message_id, sealed, received_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, ws, key.Profile, key.Scope, room, msg, []byte("again"), at.UnixMicro())
			require.NoError(t, err)
			seq, err := res.LastInsertId()
			require.NoError(t, err)

			got, err := st.SpoolMove(ctx, seq, store.QueueRow{WorkspaceID: ws, Sealed: []byte("second")})
			require.NoError(t, err)
			// The existing row, unchanged; or a zero row for a settled one.
			require.Equal(t, want.Seq, got.Seq)
			require.Equal(t, want.Sealed, got.Sealed)
			usage, err := st.SpoolUsage(ctx)
			require.NoError(t, err)
			require.Empty(t, usage, "the leftover entry is gone")
			rows, err := st.QueueList(ctx, store.QueueListParams{WorkspaceID: ws})
			require.NoError(t, err)
			require.Len(t, rows, tt.wantRows, "no second row")
		})
	}
}

func spoolOne(t *testing.T, st *Store, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, msg jam.PlatformMessageID, at time.Time) store.SpoolEntry {
	t.Helper()
	e := store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room, MessageID: msg, Sealed: []byte("sealed"), ReceivedAt: at}
	res, err := st.SpoolAppend(t.Context(), []store.SpoolEntry{e})
	require.NoError(t, err)
	require.True(t, res.Appended[0])
	e.Seq = res.Seqs[0]
	return e
}

// TestQueries_useIndexes keeps the hot statements of the pipeline off full
// table scans: a plan that scans a table costs O(rows) per message.
func TestQueries_useIndexes(t *testing.T) {
	t.Parallel()
	st := setup(t).st
	args := func(n int) []any {
		a := make([]any, n)
		for i := range a {
			a[i] = "x"
		}
		return a
	}
	tables := map[string]bool{}
	for _, name := range []string{"accounts", "peers", "bindings", "spool", "queue", "settled", "reply_intents"} {
		tables[name] = true
	}
	tests := []struct {
		name  string
		query string
		args  int
	}{
		{"spool append", spoolInsertHead + spoolInsertRow + ", " + spoolInsertRow + spoolInsertTail, 18},
		{"spool next", spoolSelectLane, 5},
		{"spool append read-back", spoolSelectRange, 2},
		{"spool append duplicate check", spoolDupProbe, 5},
		{"spool append spooled check", spoolSpooledProbe, 5},
		{"spool move read", spoolSelectSeqOfWS, 2},
		{"retire spool usage", retiredSpoolUsage, 4},
		{"retire spool delete", retiredSpoolDelete, 4},
		{"queue get", queueSelect, 4},
		{"queue list binding", queueSelectOfBinding, 7},
		{"queue list binding delivered", queueSelectDeliveredOfBinding, 7},
		{"queue list unrouted", queueSelectUnrouted, 7},
		{"queue list peer", queueSelectOfPeer, 7},
		{"queue list peer delivered", queueSelectDeliveredOfPeer, 7},
		{"queue rehome room", queueRehomeRoom, 5},
		{"queue rooms of a peer", queueRoomsOfPeer, 3},
		{"queue unroute binding", queueUnrouteBinding, 2},
		{"queue settle", queueDelete, 4},
		{"binding of room", bindingSelectIDOfRoom, 4},
		{"settled probe", settledCount, 4},
		{"prune by age", queuePruneUnroutedBefore, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plan := explain(t.Context(), t, st, tt.query, args(tt.args)...)
			for _, line := range plan {
				// A scan of a table, as opposed to one through an index,
				// of constant rows or of a statement's own batch (b).
				fields := strings.Fields(line)
				if len(fields) >= 2 && fields[0] == "SCAN" && tables[fields[1]] && !strings.Contains(line, "USING") {
					t.Fatalf("full scan in plan of %s:\n%s", tt.name, strings.Join(plan, "\n"))
				}
			}
		})
	}
}

func explain(ctx context.Context, t *testing.T, st *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := st.writer.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}

// TestQueries_inboxPageNeedsNoSort keeps an inbox page at the cost of
// the page: its rows come from a partial index in order, neither a scan
// of the queue nor a sort of every delivered row.
func TestQueries_inboxPageNeedsNoSort(t *testing.T) {
	t.Parallel()
	st := setup(t).st
	for name, q := range map[string]string{"peer": queueSelectDeliveredOfPeer, "workspace": queueSelectDeliveredOfWorkspace, "binding": queueSelectDeliveredOfBinding} {
		plan := strings.Join(explain(t.Context(), t, st, q, "x", "x", "x", "x", "x", 5, 0), "\n")
		require.NotContains(t, plan, "TEMP B-TREE", name)
		require.Contains(t, plan, "USING INDEX", name)
	}
}
