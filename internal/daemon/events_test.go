package daemon_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// nextKind reads until an event of kind (and, when set, of peer) and
// returns it; reading fails the test if the stream ends first.
func nextKind(t *testing.T, s *apiclient.EventStream, kind, peer string) wire.Event {
	t.Helper()
	for {
		ev, err := s.Next()
		require.NoError(t, err)
		if ev.Kind == kind && (peer == "" || ev.Peer == peer) {
			return ev
		}
	}
}

// TestEvents_daemonPublishes follows GET /v1/events of a real daemon: a
// new stream starts with a reset carrying the agents' socket states; an
// agent's socket and a message's way through the pipeline appear as
// events, in the peer's log too; a stream resumed after a sequence
// replays exactly what came after it.
func TestEvents_daemonPublishes(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client

	stream, err := c.Events(ctx, wire.EventsRequest{After: wire.EventsLive})
	require.NoError(t, err)
	defer stream.Close()
	reset, err := stream.Next()
	require.NoError(t, err)
	require.Equal(t, wire.EventKindReset, reset.Kind)
	var rd wire.ResetData
	require.NoError(t, json.Unmarshal(reset.Data, &rd))
	require.JSONEq(t, `{}`, string(rd.Snapshots["agents"]), "no agents yet")

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	up := nextKind(t, stream, "agent.state", "local/coder")
	for up.Data == nil || !json.Valid(up.Data) || string(up.Data) != `{"state":"up"}` {
		up = nextKind(t, stream, "agent.state", "local/coder")
	}
	require.Greater(t, up.Seq, reset.Seq)

	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "events", Agents: []string{"coder"}})
	require.NoError(t, err)
	bnd, err := c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	sent, err := ownerClient(t, st).SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	queued := nextKind(t, stream, "message.queued", "local/coder")
	require.Equal(t, room.ID, queued.Room)
	require.Equal(t, sent.ID, queued.MessageID)
	require.JSONEq(t, `{"binding":"`+bnd.ID+`"}`, string(queued.Data))
	require.NoError(t, c.Ack(ctx, sent.ID, wire.AckRequest{}))
	settled := nextKind(t, stream, "message.settled", "local/coder")
	require.Equal(t, sent.ID, settled.MessageID)

	// A new stream's reset has the agent's state; a resumed one replays.
	again, err := c.Events(ctx, wire.EventsRequest{After: wire.EventsLive})
	require.NoError(t, err)
	defer again.Close()
	reset, err = again.Next()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(reset.Data, &rd))
	require.JSONEq(t, `{"local/coder":"up"}`, string(rd.Snapshots["agents"]))

	resumed, err := c.Events(ctx, wire.EventsRequest{After: queued.Seq - 1})
	require.NoError(t, err)
	defer resumed.Close()
	first, err := resumed.Next()
	require.NoError(t, err)
	require.Equal(t, queued.Seq, first.Seq)
	require.Equal(t, "message.queued", first.Kind)

	// Stopping ends the open streams and the daemon stops cleanly.
	err, _ = r.stop()
	require.NoError(t, err, "log:\n%s", r.log.String())
	for _, s := range []*apiclient.EventStream{stream, again, resumed} {
		for err == nil {
			_, err = s.Next()
		}
		require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "stream ended: %v", err)
		err = nil
	}

	// Every event naming the peer is in its log.
	f, err := os.Open(filepath.Join(cfg.DataDir, "logs", "local", "coder.log"))
	require.NoError(t, err)
	defer f.Close()
	kinds := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev wire.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		require.Equal(t, "local/coder", ev.Peer)
		kinds[ev.Kind] = true
	}
	require.NoError(t, sc.Err())
	for _, k := range []string{"agent.state", "message.queued", "message.settled"} {
		require.True(t, kinds[k], "peer log has %s: %v", k, kinds)
	}
}

// TestEvents_shutdownWithOpenStream stops a daemon while a client holds an
// event stream open and another holds one it does not read: the stop
// completes within its bound, cleanly.
func TestEvents_shutdownWithOpenStream(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	reading, err := r.client.Events(t.Context(), wire.EventsRequest{After: wire.EventsLive})
	require.NoError(t, err)
	defer reading.Close()
	_, err = reading.Next()
	require.NoError(t, err)
	idle, err := r.client.Events(t.Context(), wire.EventsRequest{After: 0})
	require.NoError(t, err)
	defer idle.Close()

	err, took := r.stop()
	require.NoError(t, err, "log:\n%s", r.log.String())
	require.Less(t, took, cfg.ShutdownTimeout, "the open streams did not hold up the stop")
	_, err = reading.Next()
	require.Error(t, err, "the stream ended")
}
