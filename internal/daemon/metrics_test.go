package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/metrics/metricstest"
)

// scrape GETs /metrics from the daemon's TCP listener with token ("" for
// none) and parses it.
func scrape(t *testing.T, addr, token string) (int, metricstest.Families, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(body)
	}
	fams, err := metricstest.Parse(strings.NewReader(string(body)))
	require.NoError(t, err, "the scrape is not valid Prometheus text:\n%s", body)
	return resp.StatusCode, fams, string(body)
}

func metric(f metricstest.Families, name string, labels ...string) float64 {
	v, _ := f.Value(name, labels...)
	return v
}

// TestMetrics_pipelineCountsRealTraffic drives real messages through a
// daemon on the embedded hub (3 to a bound room, 2 to an unbound one; the
// agent replies to one and acknowledges two) and checks that /metrics
// parses as Prometheus text, refuses a scrape without the token, and
// that each counter moved by exactly the traffic's amount.
func TestMetrics_pipelineCountsRealTraffic(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	raw, err := os.ReadFile(filepath.Join(cfg.DataDir, datadir.TokenFile))
	require.NoError(t, err)
	token := strings.TrimSpace(string(raw))

	status, _, body := scrape(t, st.HTTPAddr, "")
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.NotContains(t, body, "jam_messages")

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	bound, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "bound", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: bound.ID})
	require.NoError(t, err)
	unbound, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "unbound", Agents: []string{"coder"}})
	require.NoError(t, err)

	_, before, _ := scrape(t, st.HTTPAddr, token)
	delta := func(after metricstest.Families, name string, labels ...string) float64 {
		return metric(after, name, labels...) - metric(before, name, labels...)
	}

	owner := ownerClient(t, st)
	post := func(room string, n int) {
		for i := range n {
			_, err := owner.SendChatMessage(ctx, room, fmt.Sprintf("@%s task %d", agent.Handle, i), []protocol.Mention{{ID: agent.AgentID}})
			require.NoError(t, err)
		}
	}
	post(bound.ID, 3)
	post(unbound.ID, 2)

	settled := 0
	deadline := time.Now().Add(2 * time.Minute)
	for settled < 3 {
		require.True(t, time.Now().Before(deadline), "settled %d of 3", settled)
		inbox, err := c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err)
		for _, m := range inbox.Messages {
			if settled == 0 {
				_, err = c.Reply(ctx, m.ID, wire.ReplyRequest{Text: "done"})
			} else {
				err = c.Ack(ctx, m.ID, wire.AckRequest{})
			}
			require.NoError(t, err)
			settled++
		}
	}
	require.Eventually(t, func() bool {
		un, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "coder", Unrouted: true, Limit: wire.MaxInboxLimit})
		return err == nil && len(un.Messages) == 2
	}, time.Minute, 20*time.Millisecond, "the unbound room's messages land unrouted")

	_, after, text := scrape(t, st.HTTPAddr, token)
	require.Equal(t, 3.0, delta(after, "jam_messages_routed_total", "outcome", "routed"), text)
	require.Equal(t, 2.0, delta(after, "jam_messages_routed_total", "outcome", "unrouted"))
	require.Equal(t, 3.0, delta(after, "jam_messages_delivered_total", "outcome", "delivered"))
	require.Equal(t, 0.0, delta(after, "jam_messages_delivered_total", "outcome", "failed"))
	require.Equal(t, 3.0, delta(after, "jam_messages_settled_total", "outcome", "settled"))
	// No exact figure for duplicates: a room joined while messages arrive
	// is caught up over REST while its live pushes flow, so the feed may
	// hand a message twice; the spool refuses the second (counted there),
	// and the exact routed figures above show each message counted once.
	require.Contains(t, text, "\njam_messages_duplicates_total ", "the duplicates counter is exported")
	// Every spooled message left the spool one way or another (system
	// markers of the hub included).
	spooled := delta(after, "jam_messages_spooled_total")
	require.GreaterOrEqual(t, spooled, 5.0)
	require.Equal(t, spooled, delta(after, "jam_messages_routed_total", "outcome", "routed")+
		delta(after, "jam_messages_routed_total", "outcome", "unrouted")+
		delta(after, "jam_messages_routed_total", "outcome", "system_marker"))
	require.GreaterOrEqual(t, delta(after, "jam_spool_commit_duration_seconds", "outcome", "ok"), 1.0)
	require.Equal(t, 0.0, metric(after, "jam_queue_depth", "bucket", "routed"), "every routed message is settled")
	require.Equal(t, 2.0, metric(after, "jam_queue_depth", "bucket", "unrouted"))
	require.Equal(t, 0.0, metric(after, "jam_spool_depth"))
	require.Equal(t, 1.0, metric(after, "jam_band_connections", "state", "up"), text)
	require.GreaterOrEqual(t, metric(after, "jam_band_connection_changes_total", "state", "up"), 1.0)
	require.Equal(t, 1.0, delta(after, "jam_api_request_duration_seconds", "route", "POST /v1/messages/{msg}/reply", "code", "2xx"))
	require.Equal(t, 2.0, delta(after, "jam_api_request_duration_seconds", "route", "POST /v1/messages/{msg}/ack", "code", "2xx"))
	for _, id := range []string{bound.ID, unbound.ID, agent.AgentID} {
		require.NotContains(t, text, id, "an id is a label")
	}
}

// scrapeSocket GETs /metrics over the control socket.
func scrapeSocket(t *testing.T, dataDir string) metricstest.Families {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(dataDir, datadir.SocketFile))
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://jamd/metrics", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	fams, err := metricstest.Parse(resp.Body)
	require.NoError(t, err)
	return fams
}

// An owned agent's turn that answers is counted as succeeded, with its
// duration.
func TestMetrics_ownedTurnIsCounted(t *testing.T) {
	t.Parallel()
	o := startOwned(t)
	c, owner, agent, room := o.r.client, o.owner, o.agent, o.room
	ctx := t.Context()
	before := scrapeSocket(t, o.cfg.DataDir)
	_, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" fix the parser", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		if err != nil || len(ss) != 1 {
			return false
		}
		turns, err := c.Turns(ctx, ss[0].ID)
		return err == nil && len(turns) == 1 && turns[0].State == "succeeded"
	}, time.Minute, 10*time.Millisecond)
	after := scrapeSocket(t, o.cfg.DataDir)
	require.Equal(t, 1.0, metric(after, "jam_turns_total", "outcome", "succeeded")-metric(before, "jam_turns_total", "outcome", "succeeded"))
	require.Equal(t, 0.0, metric(after, "jam_turns_total", "outcome", "failed")-metric(before, "jam_turns_total", "outcome", "failed"))
	require.Equal(t, 1.0, metric(after, "jam_turn_duration_seconds", "outcome", "succeeded"))
	sum, ok := after.Sum("jam_turn_duration_seconds", "outcome", "succeeded")
	require.True(t, ok)
	require.Greater(t, sum, 0.0)
}
