package sqlite

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// fileHolds reports whether any file of the store (the database, its WAL
// and shared memory) holds needle.
func fileHolds(t *testing.T, path, needle string) bool {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		raw, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		if bytes.Contains(raw, []byte(needle)) {
			return true
		}
	}
	return false
}

// legacyRows writes one row of each content column in the clear, as a
// store before migration 0015 did, and returns the workspace.
func legacyRows(t *testing.T, s *Store, canary string) jam.WorkspaceID {
	t.Helper()
	ctx := t.Context()
	ws := jam.New[jam.WorkspaceID](jam.NewMinter(time.Now, rand.Reader))
	at := time.Now().UnixMicro()
	for seq := 1; seq <= 5; seq++ {
		_, err := s.writer.ExecContext(ctx, `INSERT INTO events (workspace_id, kind, profile, scope, room_id, message_id, payload, created_at)
VALUES (?, 'room.message', '', '', '', '', ?, ?)`, ws, `{"content":"`+canary+`"}`, at)
		require.NoError(t, err)
	}
	// The newest two are pruned: their sequences are not handed out again.
	_, err := s.writer.ExecContext(ctx, `DELETE FROM events WHERE seq > 3`)
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO turn_output (workspace_id, turn_id, batch, updates, text_bytes, stored_bytes, truncated, at)
VALUES (?, 'turn_00000000000000000000000001', 1, ?, 10, 10, 0, ?)`, ws, `[{"kind":"text","text":"`+canary+`"}]`, at)
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO session_messages (id, workspace_id, session_id, seq, requested, routing, text, source_message_id, turn_id, created_at, consumed_at)
VALUES ('msg_00000000000000000000000001', ?, 'sess_0000000000000000000000001', 1, 'note', 'note', ?, '', '', ?, NULL)`, ws, "note "+canary, at)
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO turns (id, workspace_id, session_id, seq, routing, source_message_id, state, reason, lease_id, lease_generation, created_at, updated_at, message_id, detail)
VALUES ('turn_00000000000000000000000001', ?, 'sess_0000000000000000000000001', 1, 'queue', '', 'failed', 'agent_error', '', 0, ?, ?, '', ?)`, ws, at, at, "agent said "+canary)
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO turn_journal (workspace_id, session_id, turn_id, from_state, to_state, reason, lease_generation, at, detail)
VALUES (?, 'sess_0000000000000000000000001', 'turn_00000000000000000000000001', 'running', 'failed', 'agent_error', 0, ?, ?)`, ws, at, "agent said "+canary)
	require.NoError(t, err)
	return ws
}

// TestSealed_legacyRowsAreSealedAtOpen: a store written before migration
// 0015 keeps its content in the clear; opening it with this build and the
// daemon key seals every such value in place (none is lost, none is left
// in the file), the events keep their sequence high-water mark, and a
// value moved to another row no longer opens.
func TestSealed_legacyRowsAreSealedAtOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	canary := "canary" + rand.Text()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	cfg := Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour}
	migs := embedded(t)
	require.Len(t, migs[:sealedSchema-1], 14)
	old, err := open(ctx, cfg, migs[:sealedSchema-1])
	require.NoError(t, err)
	ws := legacyRows(t, old, canary)
	require.NoError(t, old.Close())
	require.True(t, fileHolds(t, cfg.Path, canary), "the old schema keeps the canary in the clear")

	cfg.Sealer = box
	st, err := Open(ctx, cfg)
	require.NoError(t, err)
	for _, q := range []string{`SELECT typeof(payload) FROM events`, `SELECT typeof(updates) FROM turn_output`, `SELECT typeof(text) FROM session_messages`,
		`SELECT typeof(detail) FROM turns`, `SELECT typeof(detail) FROM turn_journal`} {
		types, err := queryAll(ctx, st.reader, func(r scanner) (v string, err error) { return v, r.Scan(&v) }, q)
		require.NoError(t, err)
		require.NotEmpty(t, types)
		for _, ty := range types {
			require.Equal(t, "blob", ty, q)
		}
	}
	evs, err := st.EventList(ctx, ws, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	for _, e := range evs {
		require.JSONEq(t, `{"content":"`+canary+`"}`, string(e.Payload))
	}
	out, err := st.TurnOutput(ctx, ws, "turn_00000000000000000000000001")
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, canary, out[0].Updates[0].Text)
	msg, err := st.MessageGet(ctx, ws, "msg_00000000000000000000000001")
	require.NoError(t, err)
	require.Equal(t, "note "+canary, msg.Text)
	turn, err := st.TurnGet(ctx, ws, "turn_00000000000000000000000001")
	require.NoError(t, err)
	require.Equal(t, "agent said "+canary, turn.Detail)
	journal, err := st.TurnJournal(ctx, ws, turn.ID)
	require.NoError(t, err)
	require.Len(t, journal, 1)
	require.Equal(t, "agent said "+canary, journal[0].Detail)
	seqs, err := st.EventAppend(ctx, []store.EventRecord{{WorkspaceID: ws, Kind: "k", CreatedAt: time.Now()}})
	require.NoError(t, err)
	require.Equal(t, []int64{6}, seqs, "the rebuilt events table kept its high-water mark")

	// A sealed value is bound to its row.
	_, err = st.writer.ExecContext(ctx, `UPDATE events SET payload = (SELECT payload FROM events WHERE seq = 1) WHERE seq = 2`)
	require.NoError(t, err)
	_, err = st.EventList(ctx, ws, 0, 10)
	require.ErrorIs(t, err, secret.ErrCorrupt)
	require.NoError(t, st.Close())
	require.False(t, fileHolds(t, cfg.Path, canary), "no plaintext is left in the file or its free pages")

	// Reopened with the key, nothing more is sealed; without it, a sealed
	// value is an error, never returned as if it were the text.
	st, err = Open(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	cfg.Sealer = nil
	st, err = Open(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	_, err = st.MessageGet(ctx, ws, "msg_00000000000000000000000001")
	require.ErrorIs(t, err, jam.ErrUnavailable)
}

// TestSealed_contentIsSealedOnWrite: what the store's content methods
// write is sealed in the file, and read back as written.
func TestSealed_contentIsSealedOnWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	canary := "canary" + rand.Text()
	ws := jam.New[jam.WorkspaceID](jam.NewMinter(time.Now, rand.Reader))
	payload := json.RawMessage(`{"content":"` + canary + `"}`)
	seqs, err := b.st.EventAppend(ctx, []store.EventRecord{
		{WorkspaceID: ws, Kind: "room.message", Payload: payload, CreatedAt: time.Now()},
		{WorkspaceID: ws, Kind: "turn.update", Payload: payload, CreatedAt: time.Now()},
	})
	require.NoError(t, err)
	require.NoError(t, b.st.Close())
	require.False(t, fileHolds(t, b.cfg.Path, canary))

	st, err := Open(ctx, b.cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	evs, err := st.EventList(ctx, ws, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	for i, e := range evs {
		require.Equal(t, seqs[i], e.Seq)
		require.JSONEq(t, string(payload), string(e.Payload))
	}
}

// TestSealed_turnDetailIsSealedOnWrite: the detail of a turn that ended,
// which may quote what the agent sent, is sealed on the turn and on its
// journal entry, and read back as it was given.
func TestSealed_turnDetailIsSealedOnWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	canary := "canary" + rand.Text()
	ws := jam.New[jam.WorkspaceID](jam.NewMinter(time.Now, rand.Reader))
	turn := jam.TurnID("turn_00000000000000000000000001")
	at := time.Now()
	_, err := b.st.writer.ExecContext(ctx, `INSERT INTO turns (id, workspace_id, session_id, seq, routing, source_message_id, state, reason, lease_id, lease_generation, created_at, updated_at, message_id)
VALUES (?, ?, 'sess_0000000000000000000000001', 1, 'queue', '', 'queued', '', '', 0, ?, ?, '')`, turn, ws, at.UnixMicro(), at.UnixMicro())
	require.NoError(t, err)
	_, err = b.st.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: ws, ID: turn, From: jam.TurnQueued, To: jam.TurnFailed,
		Reason: "agent_error", Detail: "json-rpc error -32000: " + canary, At: at})
	require.NoError(t, err)
	require.NoError(t, b.st.Close())
	require.False(t, fileHolds(t, b.cfg.Path, canary))

	st, err := Open(ctx, b.cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	got, err := st.TurnGet(ctx, ws, turn)
	require.NoError(t, err)
	require.Equal(t, "json-rpc error -32000: "+canary, got.Detail)
	journal, err := st.TurnJournal(ctx, ws, turn)
	require.NoError(t, err)
	require.Len(t, journal, 1)
	require.Equal(t, got.Detail, journal[0].Detail)
}
