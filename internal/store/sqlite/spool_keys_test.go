package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestMigration_spoolKeys opens a database written before the spool was
// keyed (migration 0007), with entries in two lanes and a sequence
// high-water mark above the newest entry, and checks that the migration
// kept every entry, keyed it, kept the high-water mark, and that lanes,
// deduplication (from the set of spooled messages, loaded from the
// migrated table) and new appends work on the migrated rows.
func TestMigration_spoolKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	migs := embedded(t)
	before := -1
	for i, m := range migs {
		if m.Name == "spool_keys" {
			before = i
		}
	}
	require.Positive(t, before, "migration spool_keys is embedded")
	cfg := Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour}

	ws := jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil))
	key := jam.PeerKey{Profile: "p", Scope: "a"}
	roomA, roomB := jam.RoomID("0190a1b2-0000-4000-8000-0000000000aa"), jam.RoomID("0190a1b2-0000-4000-8000-0000000000bb")
	msg := func(i int) jam.PlatformMessageID {
		return jam.PlatformMessageID("0190a1b2-0000-4000-8000-00000000000" + string(rune('0'+i)))
	}
	old, err := open(ctx, cfg, migs[:before])
	require.NoError(t, err)
	for i, room := range []jam.RoomID{roomA, roomB, roomA, roomB, roomA} {
		_, err := old.writer.ExecContext(ctx, `INSERT INTO spool (workspace_id, profile, scope, room_id, message_id, sealed, received_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, ws, key.Profile, key.Scope, room, msg(i), []byte{byte(i)}, int64(i))
		require.NoError(t, err)
	}
	// The newest entry leaves: its sequence (5) must never come back.
	_, err = old.writer.ExecContext(ctx, `DELETE FROM spool WHERE seq = 5`)
	require.NoError(t, err)
	require.NoError(t, old.Close())

	st, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })

	var unkeyed int
	require.NoError(t, st.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM spool
WHERE lane_key IS NOT jam_spool_key(workspace_id, profile, scope, room_id)`).Scan(&unkeyed))
	require.Zero(t, unkeyed, "every migrated row carries its lane key")

	lane, err := st.SpoolNext(ctx, ws, key, roomA, 10)
	require.NoError(t, err)
	require.Len(t, lane, 2)
	require.Equal(t, []int64{1, 3}, []int64{lane[0].Seq, lane[1].Seq}, "the lane in seq order")
	require.Equal(t, msg(0), lane[0].MessageID)
	require.Equal(t, []byte{0}, lane[0].Sealed)

	entry := func(room jam.RoomID, id jam.PlatformMessageID) store.SpoolEntry {
		return store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room, MessageID: id, Sealed: []byte("x"), ReceivedAt: time.Now()}
	}
	res, err := st.SpoolAppend(ctx, []store.SpoolEntry{
		entry(roomB, msg(1)), // spooled before the migration
		entry(roomA, msg(9)), // new
	})
	require.NoError(t, err)
	require.Equal(t, []bool{false, true}, res.Appended)
	require.Equal(t, int64(6), res.Seqs[1], "sequences continue above the old high-water mark")

	retired, err := st.RoomRetire(ctx, ws, key, roomB, time.Now())
	require.NoError(t, err)
	require.Equal(t, 2, retired.Spooled, "a migrated lane is found by its key")
}

func TestSpoolKey(t *testing.T) {
	t.Parallel()
	// FNV-1a 64 of "w\x00p\x00s\x00m\x00", computed independently.
	require.Equal(t, int64(-0x2b41ea227bc6944c), spoolKey("w", "p", "s", "m"))
	require.NotEqual(t, spoolKey("w", "p", "s", "m"), spoolKey("w", "p", "sm", ""), "parts are delimited")
	var viaSQL int64
	st := setup(t).st
	require.NoError(t, st.reader.QueryRowContext(t.Context(), `SELECT jam_spool_key('w', 'p', 's', 'm')`).Scan(&viaSQL))
	require.Equal(t, spoolKey("w", "p", "s", "m"), viaSQL, "SQLite and Go compute the same key")
}

// TestSpoolInsertChunk_skippedRowIsNotSilent: the insert skips rows that
// break a constraint (OR IGNORE). Validation keeps such rows out of
// SpoolAppend; should one get through all the same, the batch must fail
// rather than report the entry as a duplicate, which would acknowledge a
// message that was never written.
func TestSpoolInsertChunk_skippedRowIsNotSilent(t *testing.T) {
	t.Parallel()
	st := setup(t).st
	ctx := t.Context()
	ws := jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil))
	key := jam.PeerKey{Profile: "p", Scope: "a"}
	mk := func(id string, sealed []byte) spoolRow {
		e := store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: "0190a1b2-0000-4000-8000-0000000000aa",
			MessageID: jam.PlatformMessageID(id), Sealed: sealed, ReceivedAt: time.Now()}
		return spoolRow{entry: e, id: spoolIdentity{ws, "p", "a", e.MessageID}, laneKey: spoolKey(string(ws), "p", "a", string(e.Room))}
	}
	chunk := []spoolRow{mk("0190a1b2-0000-4000-8000-000000000001", []byte("x")), mk("0190a1b2-0000-4000-8000-000000000002", nil)}
	chunk[1].index = 1
	stmt, err := st.spoolInserts.get(ctx, st.writer, len(chunk))
	require.NoError(t, err)
	res := store.SpoolAppendResult{Appended: make([]bool, 2), Seqs: make([]int64, 2)}
	err = inTx(ctx, st.writer, func(tx *sql.Tx) error {
		return spoolInsertChunk(ctx, tx, tx.StmtContext(ctx, stmt), chunk, res)
	})
	require.ErrorContains(t, err, "skipped message 0190a1b2-0000-4000-8000-000000000002, which is not a duplicate")
	usage, err := st.SpoolUsage(ctx)
	require.NoError(t, err)
	require.Empty(t, usage, "the failed batch wrote nothing")
}

// TestSpoolAppend_setFollowsTheTable: whether a message is spooled is
// decided from the store's set of spooled messages, which must never
// claim a message the table no longer holds: after a move, a drop or a
// room's retirement, the same message is judged by the table (queued and
// settled are duplicates; retired is gone and may come back).
func TestSpoolAppend_setFollowsTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st := b.st
	ctx := t.Context()
	ws, key, room := benchPeerT(t, st)
	at := time.Now()
	entry := func(i int) store.SpoolEntry {
		return store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room,
			MessageID: jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", i)), Sealed: []byte("x"), ReceivedAt: at}
	}
	appended := func(e store.SpoolEntry) (bool, int64) {
		t.Helper()
		res, err := st.SpoolAppend(ctx, []store.SpoolEntry{e})
		require.NoError(t, err)
		return res.Appended[0], res.Seqs[0]
	}

	ok, seq := appended(entry(1))
	require.True(t, ok)
	ok, _ = appended(entry(1))
	require.False(t, ok, "spooled: a duplicate")
	_, err := st.SpoolMove(ctx, seq, store.QueueRow{WorkspaceID: ws, Sealed: []byte("q")})
	require.NoError(t, err)
	ok, _ = appended(entry(1))
	require.False(t, ok, "moved to the queue: still a duplicate")

	ok, seq = appended(entry(2))
	require.True(t, ok)
	require.NoError(t, st.SpoolDrop(ctx, seq, at))
	ok, _ = appended(entry(2))
	require.False(t, ok, "dropped and settled: a duplicate")

	ok, _ = appended(entry(3))
	require.True(t, ok)
	_, err = st.RoomRetire(ctx, ws, key, room, at)
	require.NoError(t, err)
	_, err = st.RoomRestore(ctx, ws, key, room)
	require.NoError(t, err)
	ok, seq3 := appended(entry(3))
	require.True(t, ok, "removed with its room, which came back: spooled again")
	ok, _ = appended(entry(3))
	require.False(t, ok)

	// A second store on the same file loads the set from the table.
	st2, err := Open(ctx, b.cfg)
	require.NoError(t, err)
	defer st2.Close()
	res, err := st2.SpoolAppend(ctx, []store.SpoolEntry{entry(3), entry(4)})
	require.NoError(t, err)
	require.Equal(t, []bool{false, true}, res.Appended)
	require.Greater(t, res.Seqs[1], seq3)
}

// benchPeerT sets up a workspace, an account and a peer, and names a room.
func benchPeerT(t *testing.T, st *Store) (jam.WorkspaceID, jam.PeerKey, jam.RoomID) {
	t.Helper()
	ctx := t.Context()
	m := jam.NewMinter(nil, nil)
	w, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: time.Now()})
	require.NoError(t, err)
	key := jam.PeerKey{Profile: "p", Scope: "a"}
	acct, err := st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](m), WorkspaceID: w.ID, Profile: "p", BandURL: "http://band",
		UserID: "0190a1b2-0000-4000-8000-00000000000b", Handle: "owner", KeySealed: []byte("k"), CreatedAt: time.Now()})
	require.NoError(t, err)
	_, err = st.PeerPut(ctx, store.Peer{WorkspaceID: w.ID, Key: key, AccountID: acct.ID, AgentID: "0190a1b2-0000-4000-8000-00000000000a",
		Handle: "owner/a", Name: "a", KeySealed: []byte("k"), CreatedAt: time.Now()})
	require.NoError(t, err)
	return w.ID, key, "0190a1b2-0000-4000-8000-0000000000aa"
}
