package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestQueueCap: a peer's queue takes no spool entries past
// MaxQueuedPerPeer; the refused entries stay in the spool, and move once
// the agent has taken some.
func TestQueueCap(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "jam.db"), CheckpointInterval: time.Hour, MaxQueuedPerPeer: 3})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	ws, key, room := benchPeerT(t, st)
	entries := make([]store.SpoolEntry, 6)
	for i := range entries {
		entries[i] = store.SpoolEntry{WorkspaceID: ws, Peer: key, Room: room,
			MessageID: jam.PlatformMessageID(fmt.Sprintf("0190a1b2-0000-4000-8000-%012d", i)), Sealed: []byte("x"), ReceivedAt: time.Now()}
	}
	res, err := st.SpoolAppend(ctx, entries)
	require.NoError(t, err)
	rows := make([]store.QueueRow, len(entries))
	for i, e := range entries {
		rows[i] = store.QueueRow{Seq: res.Seqs[i], WorkspaceID: ws, Peer: key, Room: room, MessageID: e.MessageID, Sealed: e.Sealed}
	}
	queued := func() int {
		n, err := st.QueueList(ctx, store.QueueListParams{WorkspaceID: ws, Peer: key})
		require.NoError(t, err)
		return len(n)
	}

	_, err = st.SpoolMoveBatch(ctx, rows[0:2])
	require.NoError(t, err)
	_, err = st.SpoolMoveBatch(ctx, rows[2:4])
	require.ErrorIs(t, err, jam.ErrUnavailable, "the batch would take the queue past the bound")
	require.ErrorContains(t, err, "p/a has 2 messages queued, the most one agent's queue holds is 3")
	require.Equal(t, 2, queued(), "a refused batch moves nothing")
	_, err = st.SpoolMoveBatch(ctx, rows[2:3])
	require.NoError(t, err)
	require.Equal(t, 3, queued())
	_, err = st.SpoolMove(ctx, rows[3].Seq, rows[3])
	require.ErrorIs(t, err, jam.ErrUnavailable)
	require.Equal(t, 3, queued())
	next, err := st.SpoolNext(ctx, ws, key, room, 10)
	require.NoError(t, err)
	require.Len(t, next, 3, "the refused entries wait in the spool")

	// The agent takes two: the queue has room again.
	for _, r := range rows[0:2] {
		require.NoError(t, st.QueueSettle(ctx, ws, key, r.MessageID, time.Now()))
	}
	_, err = st.SpoolMoveBatch(ctx, rows[3:5])
	require.NoError(t, err)
	require.Equal(t, 3, queued())
	_, err = st.SpoolMoveBatch(ctx, rows[5:6])
	require.ErrorIs(t, err, jam.ErrUnavailable)
}
