package daemon_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// drainAll acks inbox messages until every id of want has been seen, and
// returns the ids seen per room in the order they were first listed.
func drainAll(t *testing.T, c *apiclient.Client, want []string) map[string][]string {
	t.Helper()
	seen := map[string]bool{}
	order := map[string][]string{}
	deadline := time.Now().Add(60 * time.Second)
	missing := func() []string {
		var out []string
		for _, id := range want {
			if !seen[id] {
				out = append(out, id)
			}
		}
		return out
	}
	for len(missing()) > 0 {
		require.True(t, time.Now().Before(deadline), "not delivered within 60s: %v", missing())
		inbox, err := c.WaitInbox(t.Context(), wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err)
		for _, m := range inbox.Messages {
			if !seen[m.ID] {
				seen[m.ID] = true
				order[m.Room] = append(order[m.Room], m.ID)
			}
			require.NoError(t, c.Ack(t.Context(), m.ID, wire.AckRequest{}))
		}
	}
	return order
}

// TestLocalFault_corruptRecordsAreQuarantined stops the daemon with
// messages of two rooms queued, and some of one room's still spooled,
// damages one queue row (its sealed content truncated) and one spool entry
// (a byte of its sealed content flipped) with plain SQL on the database
// file, and restarts: both damaged records are in the quarantine with
// their raw bytes and a reason, a record.quarantined event names each, and
// every other message of both rooms is delivered, in order.
func TestLocalFault_corruptRecordsAreQuarantined(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	sqliteOnly(t, cfg)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	rooms := make([]string, 2)
	for i := range rooms {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("room %d", i), Agents: []string{"coder"}})
		require.NoError(t, err)
		_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
		require.NoError(t, err)
		rooms[i] = room.ID
	}
	const perRoom = 6
	posted := map[string][]string{}
	var all []string
	for n := range perRoom {
		for _, room := range rooms {
			sent, err := owner.SendChatMessage(ctx, room, fmt.Sprintf("@%s job %d", agent.Handle, n), []protocol.Mention{{ID: agent.AgentID}})
			require.NoError(t, err)
			posted[room] = append(posted[room], sent.ID)
			all = append(all, sent.ID)
		}
	}
	// Everything reaches the queue (delivered, not settled).
	deadline := time.Now().Add(60 * time.Second)
	for {
		inbox, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "coder"})
		require.NoError(t, err)
		if len(inbox.Messages) == len(all) {
			break
		}
		require.True(t, time.Now().Before(deadline), "queued %d of %d", len(inbox.Messages), len(all))
		_, err = c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 200})
		require.NoError(t, err)
	}
	err, _ = r.stop()
	require.NoError(t, err)

	// The last three messages of room 0 go back to the spool, as a crash
	// before the lane moved them would have left them; then one queue row
	// and one spool entry are damaged.
	path := filepath.Join(cfg.DataDir, datadir.StoreFile)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	room0 := posted[rooms[0]]
	type queued struct {
		ws       jam.WorkspaceID
		key      jam.PeerKey
		sealed   []byte
		received int64
	}
	var back []queued
	for _, id := range room0[3:] {
		var q queued
		require.NoError(t, db.QueryRowContext(ctx, `SELECT workspace_id, profile, scope, sealed, received_at FROM queue WHERE message_id = ?`, id).
			Scan(&q.ws, &q.key.Profile, &q.key.Scope, &q.sealed, &q.received))
		_, err := db.ExecContext(ctx, `DELETE FROM queue WHERE message_id = ?`, id)
		require.NoError(t, err)
		back = append(back, q)
	}
	func() {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		require.NoError(t, err)
		defer s.Close()
		for i, q := range back {
			// The queue row's content is sealed for the same message, so
			// the spooled copy opens like the original did.
			res, err := s.SpoolAppend(ctx, []store.SpoolEntry{{WorkspaceID: q.ws, Peer: q.key, Room: jam.RoomID(rooms[0]),
				MessageID: jam.PlatformMessageID(room0[3+i]), Sealed: q.sealed, ReceivedAt: time.UnixMicro(q.received)}})
			require.NoError(t, err)
			require.True(t, res.Appended[0])
		}
	}()
	badQueued, badSpooled := room0[1], room0[4]
	_, err = db.ExecContext(ctx, `UPDATE queue SET sealed = substr(sealed, 1, 10) WHERE message_id = ?`, badQueued)
	require.NoError(t, err)
	var sealed []byte
	require.NoError(t, db.QueryRowContext(ctx, `SELECT sealed FROM spool WHERE message_id = ?`, badSpooled).Scan(&sealed))
	sealed[len(sealed)/2] ^= 0xff
	_, err = db.ExecContext(ctx, `UPDATE spool SET sealed = ? WHERE message_id = ?`, sealed, badSpooled)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	r2 := start(t, cfg)
	r2.waitReady(t)
	var want []string
	for _, id := range all {
		if id != badQueued && id != badSpooled {
			want = append(want, id)
		}
	}
	order := drainAll(t, r2.client, want)
	for _, room := range rooms {
		// Band still holds the damaged messages; if it offers one again,
		// it arrives afresh, so it is left out of the order check.
		got := slices.DeleteFunc(order[room], func(id string) bool { return id == badQueued || id == badSpooled })
		wantRoom := slices.DeleteFunc(slices.Clone(posted[room]), func(id string) bool { return id == badQueued || id == badSpooled })
		require.Equal(t, wantRoom, got, "room %s: every other message delivered, in posting order", room)
	}

	// One record.quarantined event for each.
	ectx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	stream, err := r2.client.Events(ectx, wire.EventsRequest{After: 0})
	require.NoError(t, err)
	defer stream.Close()
	events := map[string]string{} // message → source
	for len(events) < 2 {
		ev, err := stream.Next()
		require.NoError(t, err, "quarantine events so far: %v", events)
		if ev.Kind != "record.quarantined" {
			continue
		}
		var data struct {
			Source       string `json:"source"`
			QuarantineID int64  `json:"quarantine_id"`
			Error        string `json:"error"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &data))
		require.Positive(t, data.QuarantineID)
		require.Contains(t, data.Error, "open:")
		require.Equal(t, rooms[0], ev.Room)
		events[ev.MessageID] = data.Source
	}
	require.Equal(t, map[string]string{badQueued: "queue", badSpooled: "spool"}, events)
	require.Contains(t, r2.log.String(), `msg="record quarantined"`)
	listed, err := r2.client.Quarantine(ctx)
	require.NoError(t, err)
	require.Len(t, listed, 2, "jam quarantine list shows both")
	for _, rec := range listed {
		require.Equal(t, events[rec.MessageID], rec.Source)
		require.Contains(t, rec.Reason, "open:")
	}

	err, _ = r2.stop()
	require.NoError(t, err)
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	require.NoError(t, err)
	defer s.Close()
	ws, err := s.WorkspaceList(ctx)
	require.NoError(t, err)
	recs, err := s.QuarantineList(ctx, ws[0].ID, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	bySource := map[string]store.QuarantinedRecord{}
	for _, rec := range recs {
		bySource[rec.Source] = rec
		require.Contains(t, rec.Reason, "open:")
	}
	require.Equal(t, badQueued, string(bySource["queue"].MessageID))
	require.Len(t, bySource["queue"].Sealed, 10, "the truncated bytes are kept as they were")
	require.Equal(t, badSpooled, string(bySource["spool"].MessageID))
	require.Equal(t, sealed, bySource["spool"].Sealed, "the damaged bytes are kept as they were")
}

// TestLocalFault_databaseRemovedWhileRunning removes the database file
// under a running daemon: status reports it as a store problem instead of
// carrying on as if writes were kept.
func TestLocalFault_databaseRemovedWhileRunning(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	sqliteOnly(t, cfg)
	r := start(t, cfg)
	st := r.waitReady(t)
	require.Empty(t, st.Store.Error)
	path := filepath.Join(cfg.DataDir, datadir.StoreFile)
	require.NoError(t, os.Rename(path, path+".moved"))
	st, err := r.client.Status(t.Context())
	require.NoError(t, err)
	require.Contains(t, st.Store.Error, "database file "+path+" was removed or replaced")
	err, _ = r.stop()
	require.NoError(t, err)
}
