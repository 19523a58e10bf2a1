package daemon_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
)

// faultProxy stands between the daemon and a hub and injects faults: it
// answers the next processing claims with an error status, and can drop
// every WebSocket mid-stream.
type faultProxy struct {
	srv *httptest.Server

	mu         sync.Mutex
	claimFails []int                 // guarded by mu: statuses for the next claims (0 = hang)
	claims     int                   // guarded by mu: claims that reached the hub
	hijacked   map[net.Conn]struct{} // guarded by mu
}

// hangStatus makes failClaims hang a claim until the client times out.
const hangStatus = -1

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	fp := &faultProxy{hijacked: map[net.Conn]struct{}{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	fp.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/processing") {
			fp.mu.Lock()
			var status int
			if len(fp.claimFails) > 0 {
				status, fp.claimFails = fp.claimFails[0], fp.claimFails[1:]
			} else {
				fp.claims++
			}
			fp.mu.Unlock()
			if status == hangStatus {
				// Hang until the client gives up.
				<-r.Context().Done()
				return
			}
			if status != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":{"code":"injected","message":"injected fault","request_id":"fault"}}`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	fp.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		switch s {
		case http.StateHijacked:
			fp.hijacked[c] = struct{}{}
		case http.StateClosed:
			delete(fp.hijacked, c)
		}
	}
	fp.srv.Start()
	t.Cleanup(func() { fp.dropSockets(); fp.srv.Close() })
	return fp
}

func (fp *faultProxy) failClaims(statuses ...int) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.claimFails = append(fp.claimFails, statuses...)
}

func (fp *faultProxy) pendingFailures() int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return len(fp.claimFails)
}

// dropSockets cuts every proxied WebSocket without a close frame.
func (fp *faultProxy) dropSockets() int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	n := 0
	for c := range fp.hijacked {
		c.Close()
		delete(fp.hijacked, c)
		n++
	}
	return n
}

// TestPipeline_hubFaultsDelayButLoseNothing runs the daemon against a hub
// behind a fault proxy: claims answered with 503 and 429, and sockets
// dropped mid-stream and a claim hanging past the request timeout delay
// delivery, but every message arrives and settles.
func TestPipeline_hubFaultsDelayButLoseNothing(t *testing.T) {
	t.Parallel()
	h := startTestHub(t)
	fp := newFaultProxy(t, h.URL())

	cfg := testConfig(t)
	cfg.Band, cfg.BandKey = fp.srv.URL, h.OwnerKey()
	cfg.BandTimeout = time.Second
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	c := r.client
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	owner, err := band.NewClient(hc, h.URL(), band.APIKey(h.OwnerKey()))
	require.NoError(t, err)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "faults", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)

	post := func(text string) string {
		sent, err := owner.SendChatMessage(ctx, room.ID, text, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		return sent.ID
	}
	// Claims fail with 503 then 429 before succeeding.
	fp.failClaims(503, 429)
	first := post("@coder first")
	got := drainOne(t, c)
	require.Equal(t, first, got, "a message whose claim failed twice is still delivered")
	require.Zero(t, fp.pendingFailures())

	// A claim that hangs past the request timeout is retried.
	fp.failClaims(hangStatus)
	hung := post("@coder hung")
	require.Equal(t, hung, drainOne(t, c), "a message whose claim hung is still delivered")

	// The socket drops; messages posted meanwhile arrive after the reconnect.
	require.Positive(t, fp.dropSockets())
	second := post("@coder second")
	third := post("@coder third")
	require.Equal(t, second, drainOne(t, c))
	require.Equal(t, third, drainOne(t, c))

	// Everything is settled on the hub.
	page, err := owner.ChatMessages(ctx, room.ID, "", 100)
	require.NoError(t, err)
	processed := 0
	for _, m := range page.Messages {
		if m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
			processed++
		}
	}
	require.Equal(t, 4, processed)
}

// drainOne waits for the next inbox message, acks it and returns its id.
func drainOne(t *testing.T, c interface {
	WaitInbox(context.Context, wire.WaitRequest) (wire.Inbox, error)
	Ack(context.Context, string, wire.AckRequest) error
}) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		inbox, err := c.WaitInbox(t.Context(), wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err)
		if len(inbox.Messages) == 0 {
			continue
		}
		m := inbox.Messages[0]
		require.NoError(t, c.Ack(t.Context(), m.ID, wire.AckRequest{}))
		return m.ID
	}
	t.Fatal("no message within 60s")
	return ""
}
