package daemon_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// TestAtRest_canaryNowhereOutsideHub runs a whole flow with a canary text
// in everything a person or an agent writes: an agent's description and a
// room's title; a person's room message to an attached agent and the
// agent's reply; a room message to an owned
// agent (the demo agent restates its prompt, so its turn output and reply
// carry the canary too); a session note and a queued session message.
// While the daemon runs and after it stops, no file of the data
// directory outside hub/ (the embedded hub stands in for Band and keeps
// its messages as Band does) holds the canary, raw or in base64 or hex,
// and neither does the daemon's debug log. The owned agent's worktree and
// its home (agents/: where it keeps its own sessions) are the agent's own
// work product, not jam's record, and are left out too. A restarted daemon
// still shows the canary where a person expects it: in the turn output,
// the session messages and the replayed events.
func TestAtRest_canaryNowhereOutsideHub(t *testing.T) {
	t.Parallel()
	canary := "canary" + rand.Text()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	owner := ownerClient(t, st)
	ctx := t.Context()
	c := r.client

	// An attached agent: the person's message and the agent's reply.
	coder, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder", Description: "reviews " + canary})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "attached " + canary, Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+coder.Handle+" attached "+canary, []protocol.Mention{{ID: coder.AgentID}})
	require.NoError(t, err)
	var got wire.InboxMessage
	require.Eventually(t, func() bool {
		in, err := c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 1000})
		require.NoError(t, err)
		for _, m := range in.Messages {
			got = m
			return true
		}
		return false
	}, 60*time.Second, time.Millisecond, "the attached agent's message")
	require.Contains(t, got.Content, canary)
	_, err = c.Reply(ctx, got.ID, wire.ReplyRequest{Text: "reply " + canary})
	require.NoError(t, err)

	// An owned agent, reached through a room and through its session.
	demo, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	oroom, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "owned", Agents: []string{"demo"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, oroom.ID, "@"+demo.Handle+" owned "+canary, []protocol.Mention{{ID: demo.AgentID}})
	require.NoError(t, err)
	var session wire.Session
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) == 1 {
			session = ss[0]
		}
		return len(ss) == 1
	}, 60*time.Second, 10*time.Millisecond, "the owned room's session")
	var roomTurn wire.Turn
	require.Eventually(t, func() bool {
		turns, err := c.Turns(ctx, session.ID)
		require.NoError(t, err)
		if len(turns) > 0 {
			roomTurn = turns[0]
		}
		return len(turns) > 0
	}, 60*time.Second, 10*time.Millisecond, "the room message's turn")
	waitTurn(t, c, session.ID, roomTurn.ID, "succeeded")
	require.Contains(t, turnText(t, c, roomTurn.ID), canary)
	_, err = c.SessionSend(ctx, session.ID, wire.SessionSendRequest{Text: "note " + canary, Routing: "note"})
	require.NoError(t, err)
	queued, err := c.SessionSend(ctx, session.ID, wire.SessionSendRequest{Text: "queue " + canary})
	require.NoError(t, err)
	waitTurn(t, c, session.ID, queued.Turn, "succeeded")
	require.Contains(t, turnText(t, c, queued.Turn), "queue "+canary)
	// The owned agent's answer reached the room.
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, oroom.ID, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.SenderID == demo.AgentID && strings.Contains(m.Content, canary) {
				return true
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "the demo agent's reply in the room")

	// While it runs (the WAL holding what was not checkpointed yet) and
	// after it stopped.
	needles := canaryForms(canary)
	require.Empty(t, canaryIn(t, cfg.DataDir, needles), "the canary is kept in the clear while jamd runs")
	err, _ = r.stop()
	require.NoError(t, err)
	found := canaryIn(t, cfg.DataDir, needles)
	for name, n := range needles {
		if bytes.Contains([]byte(r.log.String()), n) {
			found = append(found, "daemon log ("+name+")")
		}
	}
	require.Empty(t, found, "the canary is kept in the clear")
	// The search finds what is there: the hub keeps messages as Band does.
	hub, err := os.ReadFile(filepath.Join(cfg.DataDir, "hub", "hub.db"))
	require.NoError(t, err)
	require.Contains(t, string(hub), canary, "the embedded hub, exempt, holds the canary")

	// What a person reads back is still there, from a fresh daemon.
	r2 := start(t, cfg)
	r2.waitReady(t)
	require.Contains(t, turnText(t, r2.client, roomTurn.ID), canary)
	msgs, err := r2.client.SessionMessages(ctx, session.ID)
	require.NoError(t, err)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	require.Contains(t, texts, "note "+canary)
	require.Contains(t, texts, "queue "+canary)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stream, err := r2.client.Events(sctx, wire.EventsRequest{After: 0})
	require.NoError(t, err)
	defer stream.Close()
	seen := map[string]bool{}
	for !seen["room.message"] || !seen["turn.update"] {
		e, err := stream.Next()
		require.NoError(t, err, "replayed events with the canary: %v", seen)
		if bytes.Contains(e.Data, []byte(canary)) {
			seen[e.Kind] = true
		}
	}
}

// canaryIn lists the files under dir, outside hub/, worktrees/ and agents/, that
// hold any of needles, with the form found.
func canaryIn(t *testing.T, dir string, needles map[string][]byte) []string {
	t.Helper()
	var found []string
	skip := map[string]bool{filepath.Join(dir, "hub"): true, filepath.Join(dir, "worktrees"): true, filepath.Join(dir, "agents"): true}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[path] {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for name, n := range needles {
			if bytes.Contains(raw, n) {
				rel, _ := filepath.Rel(dir, path)
				found = append(found, fmt.Sprintf("%s (%s)", rel, name))
			}
		}
		return nil
	}))
	return found
}

// openStore opens the store of a daemon's data directory with its key,
// as jamd does (the SQLite file, or the PostgreSQL database of
// cfg.Store), and closes it when t ends.
func openStore(t *testing.T, cfg config.Config) store.Store {
	t.Helper()
	box, err := secret.LoadOrCreate(filepath.Join(cfg.DataDir, "daemon.key"))
	require.NoError(t, err)
	if config.IsPostgresURL(cfg.Store) {
		pg, err := postgres.Open(context.Background(), postgres.Config{URL: cfg.Store, Sealer: box})
		require.NoError(t, err)
		t.Cleanup(func() { pg.Close() })
		return pg
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(cfg.DataDir, datadir.StoreFile), Sealer: box})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// canaryForms is the canary as it could sit in a file: raw, hex, and
// base64 at each of the three alignments (without the edge characters
// that depend on the bytes around it).
func canaryForms(canary string) map[string][]byte {
	out := map[string][]byte{
		"raw":       []byte(canary),
		"hex":       []byte(hex.EncodeToString([]byte(canary))),
		"hex upper": []byte(strings.ToUpper(hex.EncodeToString([]byte(canary)))),
	}
	for i := range 3 {
		for name, enc := range map[string]*base64.Encoding{"base64": base64.StdEncoding, "base64url": base64.URLEncoding} {
			s := enc.EncodeToString(append(make([]byte, i), canary...))
			out[fmt.Sprintf("%s+%d", name, i)] = []byte(s[4 : len(s)-4])
		}
	}
	return out
}
