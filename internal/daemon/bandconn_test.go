package daemon_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// bandConns lists the live band connections `jam connection list --json`
// shows, by name.
func bandConns(t *testing.T, cfg config.Config) map[string]wire.Connection {
	t.Helper()
	code, out, errOut := runJam(t, jamEnv(cfg), "connection", "list", "--json")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var list struct {
		Connections []wire.Connection `json:"connections"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	got := map[string]wire.Connection{}
	for _, c := range list.Connections {
		if c.Provider == string(store.ProviderBand) {
			got[c.Name] = c
		}
	}
	return got
}

func jamEnv(cfg config.Config) map[string]string {
	return map[string]string{"HOME": cfg.DataDir, "JAM_DATA_DIR": cfg.DataDir, "NO_COLOR": "1", "NEW_KEY": "not-a-band-key-" + strings.Repeat("x", 8)}
}

// roundTrip has the owner post to the agent in room and the agent answer
// through jam; the answer lands in the room.
func roundTrip(t *testing.T, r *running, owner *band.Client, agent wire.Agent, room, text string) {
	t.Helper()
	ctx := t.Context()
	sent, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" "+text, []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "the message reached the agent; log:\n%s", r.log.String())
		inbox, err := r.client.WaitInbox(ctx, wire.WaitRequest{Agent: agent.Peer, TimeoutMS: 2000})
		require.NoError(t, err)
		if len(inbox.Messages) > 0 && inbox.Messages[0].ID == sent.ID {
			break
		}
	}
	_, err = r.client.Reply(ctx, sent.ID, wire.ReplyRequest{Text: "answer to " + text})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, room, "", 100)
		if err != nil {
			return false
		}
		for _, m := range page.Messages {
			if strings.EqualFold(m.SenderID, agent.AgentID) && strings.Contains(m.Content, "answer to "+text) {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the answer is in the room")
}

// openStoreUntil opens a stopped daemon's store with its key, as
// openStore does, for the caller to close before the daemon starts again.
func openStoreUntil(t *testing.T, cfg config.Config) store.Store {
	t.Helper()
	box := loadBox(t, cfg)
	if config.IsPostgresURL(cfg.Store) {
		pg, err := postgres.Open(t.Context(), postgres.Config{URL: cfg.Store, Sealer: box})
		require.NoError(t, err)
		return pg
	}
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(cfg.DataDir, datadir.StoreFile), Sealer: box})
	require.NoError(t, err)
	return st
}

// TestBand_keysOnConnections: a fresh daemon's configured account and an
// added agent hold their keys in band connections (listed, never shown;
// the rows name them and seal nothing), messages flow, the connections
// cannot be added, rotated or removed by hand while in use, an agent's
// goes with it, and neither key is anywhere in the data directory outside
// the hub or in the log.
func TestBand_keysOnConnections(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	owner := ownerClient(t, st)
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	temp, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "temp"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "band keys", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	roundTrip(t, r, owner, agent, room.ID, "one")

	conns := bandConns(t, cfg)
	require.Contains(t, conns, "account.local")
	require.Contains(t, conns, "agent.local.coder")
	require.Contains(t, conns, "agent.local.temp")
	require.Equal(t, 1, conns["agent.local.coder"].Version)

	env := jamEnv(cfg)
	code, out, errOut := runJam(t, env, "connection", "add", "band", "x", "--secret-env", "NEW_KEY")
	require.Equal(t, int(cli.ExitUsage), code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, errOut, "band connections are made by jam account add and jam agent add")
	for _, ref := range []string{"band/account.local", "band/agent.local.coder", conns["agent.local.coder"].ID} {
		code, out, errOut = runJam(t, env, "connection", "rotate", ref, "--secret-env", "NEW_KEY")
		require.Equal(t, int(cli.ExitConflict), code, "rotate %s: stdout:\n%s\nstderr:\n%s", ref, out, errOut)
		require.Regexp(t, `holds the key of (account local|agent local/coder)`, errOut)
		code, out, errOut = runJam(t, env, "connection", "remove", ref)
		require.Equal(t, int(cli.ExitConflict), code, "remove %s: stdout:\n%s\nstderr:\n%s", ref, out, errOut)
		require.Regexp(t, `holds the key of (account local|agent local/coder)`, errOut)
	}
	require.Equal(t, conns["agent.local.coder"], bandConns(t, cfg)["agent.local.coder"], "nothing rotated")

	_, err = c.AgentRemove(ctx, temp.Peer, wire.AgentRemoveRequest{})
	require.NoError(t, err)
	require.NotContains(t, bandConns(t, cfg), "agent.local.temp", "the removed agent's connection goes with it")
	roundTrip(t, r, owner, agent, room.ID, "two")
	err, _ = r.stop()
	require.NoError(t, err)

	s := openStore(t, cfg)
	wss, err := s.WorkspaceList(ctx)
	require.NoError(t, err)
	acct, err := s.AccountGet(ctx, wss[0].ID, "local")
	require.NoError(t, err)
	require.Equal(t, jam.ConnectionID(conns["account.local"].ID), acct.ConnectionID)
	require.Empty(t, acct.KeySealed)
	peer, err := s.PeerGet(ctx, wss[0].ID, jam.PeerKey{Profile: "local", Scope: "coder"})
	require.NoError(t, err)
	require.Equal(t, jam.ConnectionID(conns["agent.local.coder"].ID), peer.ConnectionID)
	require.Empty(t, peer.KeySealed)

	// The keys: the owner's as the hub issued it, the agent's as stored.
	ak, err := s.CredentialCurrent(ctx, wss[0].ID, acct.ConnectionID)
	require.NoError(t, err)
	pk, err := s.CredentialCurrent(ctx, wss[0].ID, peer.ConnectionID)
	require.NoError(t, err)
	for name, key := range map[string][]byte{"account": ak.Secret, "agent": pk.Secret} {
		require.GreaterOrEqual(t, len(key), 16, name)
		require.Empty(t, canaryIn(t, cfg.DataDir, canaryForms(string(key))), "the %s key in plaintext outside the hub", name)
		require.NotContains(t, r.log.String(), string(key), "the %s key in the log", name)
		require.NotContains(t, r.out.String(), string(key), "the %s key on stdout", name)
	}
	raw, err := json.Marshal(conns)
	require.NoError(t, err)
	require.NotContains(t, string(raw), string(pk.Secret), "a listed connection shows no secret")
}

// TestBand_legacyKeysMoved: rows written before band connections (their
// keys sealed in the row by the daemon key, no connection id) are moved
// onto connections at the next start: one whose connection was already
// made (a stop between the two writes) reuses it, one without gets a new
// one; messages still reach the agent and are answered, and a third start
// changes nothing.
func TestBand_legacyKeysMoved(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	agent, err := r.client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "legacy", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = r.client.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	err, _ = r.stop()
	require.NoError(t, err)

	// Rewrite the account and the agent as the old daemon stored them.
	box := loadBox(t, cfg)
	s := openStoreUntil(t, cfg)
	wss, err := s.WorkspaceList(ctx)
	require.NoError(t, err)
	ws := wss[0].ID
	acct, err := s.AccountGet(ctx, ws, "local")
	require.NoError(t, err)
	peer, err := s.PeerGet(ctx, ws, jam.PeerKey{Profile: "local", Scope: "coder"})
	require.NoError(t, err)
	ak, err := s.CredentialCurrent(ctx, ws, acct.ConnectionID)
	require.NoError(t, err)
	pk, err := s.CredentialCurrent(ctx, ws, peer.ConnectionID)
	require.NoError(t, err)
	acctConn := acct.ConnectionID
	acct.ConnectionID, acct.KeySealed = "", box.Seal(ak.Secret, []byte("account|"+string(ws)+"|local"))
	_, err = s.AccountPut(ctx, acct)
	require.NoError(t, err)
	// The agent's connection never made: the move adds one.
	_, err = s.ConnectionRemove(ctx, ws, peer.ConnectionID, time.Now())
	require.NoError(t, err)
	peer.ConnectionID, peer.KeySealed = "", box.Seal(pk.Secret, []byte("peer|"+string(ws)+"|local/coder"))
	_, err = s.PeerPut(ctx, peer)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	r2 := start(t, cfg)
	st2 := r2.waitReady(t)
	require.Contains(t, r2.log.String(), "moved 1 account and 1 agent keys onto connections")
	conns := bandConns(t, cfg)
	require.Len(t, conns, 2)
	require.Equal(t, string(acctConn), conns["account.local"].ID, "the connection made before the stop is reused")
	require.Equal(t, 1, conns["account.local"].Version)
	require.NotEqual(t, string(peer.ConnectionID), conns["agent.local.coder"].ID)
	require.Equal(t, 1, conns["agent.local.coder"].Version)
	roundTrip(t, r2, ownerClient(t, st2), agent, room.ID, "after the move")
	err, _ = r2.stop()
	require.NoError(t, err)

	s = openStoreUntil(t, cfg)
	a2, err := s.AccountGet(ctx, ws, "local")
	require.NoError(t, err)
	require.Equal(t, acctConn, a2.ConnectionID)
	require.Empty(t, a2.KeySealed)
	p2, err := s.PeerGet(ctx, ws, peer.Key)
	require.NoError(t, err)
	require.Equal(t, jam.ConnectionID(conns["agent.local.coder"].ID), p2.ConnectionID)
	require.Empty(t, p2.KeySealed)
	require.NoError(t, s.Close())

	r3 := start(t, cfg)
	r3.waitReady(t)
	require.Equal(t, conns, bandConns(t, cfg), "a third start changes nothing")
	require.NotContains(t, r3.log.String(), "onto connections")
	err, _ = r3.stop()
	require.NoError(t, err)
	for _, log := range []string{r.log.String(), r2.log.String(), r3.log.String()} {
		require.NotContains(t, log, string(ak.Secret))
		require.NotContains(t, log, string(pk.Secret))
	}
}

// TestBand_configuredKeyChangeRotates: when the configured account's
// connection holds another key than the one jamd starts with, the start
// rotates the connection to it (the same connection, the next version)
// and the account works.
func TestBand_configuredKeyChangeRotates(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	before := bandConns(t, cfg)["account.local"]
	require.Equal(t, 1, before.Version)
	err, _ := r.stop()
	require.NoError(t, err)

	s := openStoreUntil(t, cfg)
	wss, err := s.WorkspaceList(t.Context())
	require.NoError(t, err)
	_, err = s.ConnectionRotate(t.Context(), wss[0].ID, jam.ConnectionID(before.ID), []byte("a-stale-key"), time.Now())
	require.NoError(t, err)
	require.NoError(t, s.Close())

	r2 := start(t, cfg)
	r2.waitReady(t)
	after := bandConns(t, cfg)["account.local"]
	require.Equal(t, before.ID, after.ID)
	require.Equal(t, 3, after.Version, "rotated back to the hub owner's key")
	_, err = r2.client.Rooms(t.Context(), "")
	require.NoError(t, err, "the account's key works")
	err, _ = r2.stop()
	require.NoError(t, err)
}
