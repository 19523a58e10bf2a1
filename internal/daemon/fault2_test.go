package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

// What a Band call is, for bandProxy's faults.
const (
	callClaim  = "claim"  // POST …/messages/{id}/processing
	callSettle = "settle" // POST …/messages/{id}/processed
	callPost   = "post"   // POST /agent/chats/{id}/messages (a reply)
)

// bandFault is one injected fault.
type bandFault struct {
	// status answers with this status and Retry-After: 1, without
	// reaching the hub.
	status int
	// hang holds the request until the client gives up.
	hang bool
	// lose forwards the request (the hub acts on it) and then cuts the
	// connection instead of answering.
	lose bool
	// dribble forwards the request and sends the answer's body one byte
	// at a time, this long apart.
	dribble time.Duration
}

// bandProxy stands between the daemon and a hub. It injects faults into
// claims, settlements and posts, and relays WebSockets byte for byte so
// that it can cut one in the middle of a frame.
type bandProxy struct {
	t        *testing.T
	srv      *httptest.Server
	target   *url.URL
	upstream *http.Client
	wg       sync.WaitGroup // socket relays

	mu     sync.Mutex
	faults map[string][]bandFault // guarded by mu: call kind → next faults
	calls  map[string]int         // guarded by mu: calls that reached the hub
	conns  map[net.Conn]struct{}  // guarded by mu: relayed socket conns
	cutArm bool                   // guarded by mu: cut the next frame
	cuts   int                    // guarded by mu: frames cut
}

func newBandProxy(t *testing.T, target string) *bandProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := &bandProxy{t: t, target: u, upstream: &http.Client{}, faults: map[string][]bandFault{}, calls: map[string]int{}, conns: map[net.Conn]struct{}{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.dropSockets()
		p.srv.Close()
		p.wg.Wait()
		p.upstream.CloseIdleConnections()
	})
	return p
}

// inject queues faults for the next calls of a kind.
func (p *bandProxy) inject(kind string, faults ...bandFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[kind] = append(p.faults[kind], faults...)
}

func (p *bandProxy) pending(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.faults[kind])
}

func (p *bandProxy) reached(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[kind]
}

// cutNextFrame makes the relay write only the first half of the next
// chunk the hub sends on any socket, then close both connections.
func (p *bandProxy) cutNextFrame() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutArm = true
}

func (p *bandProxy) cutCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

func (p *bandProxy) dropSockets() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func kindOf(r *http.Request) string {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/api/v1/agent/chats/") {
		return ""
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/processing"):
		return callClaim
	case strings.HasSuffix(r.URL.Path, "/processed"):
		return callSettle
	case strings.HasSuffix(r.URL.Path, "/messages"):
		return callPost
	}
	return ""
}

func (p *bandProxy) serve(w http.ResponseWriter, r *http.Request) {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		p.relaySocket(w, r)
		return
	}
	kind := kindOf(r)
	var f bandFault
	p.mu.Lock()
	if q := p.faults[kind]; kind != "" && len(q) > 0 {
		f, p.faults[kind] = q[0], q[1:]
	}
	p.mu.Unlock()
	switch {
	case f.hang:
		<-r.Context().Done()
		return
	case f.status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(f.status)
		fmt.Fprint(w, `{"error":{"code":"injected","message":"injected fault","request_id":"fault"}}`)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Host = p.target.Host
	resp, err := p.upstream.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if kind != "" {
		p.mu.Lock()
		p.calls[kind]++
		p.mu.Unlock()
	}
	if f.lose {
		panic(http.ErrAbortHandler) // the hub acted; the caller never hears
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	if f.dribble == 0 {
		_, _ = w.Write(body)
		return
	}
	rc := http.NewResponseController(w)
	for i := range body {
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		_ = rc.Flush()
		timer := time.NewTimer(f.dribble) // the fault: a slow body
		select {
		case <-r.Context().Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// relaySocket hijacks a WebSocket upgrade and relays the raw bytes to and
// from the hub, so a frame can be cut in the middle.
func (p *bandProxy) relaySocket(w http.ResponseWriter, r *http.Request) {
	up, err := net.Dial("tcp", p.target.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	down, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	out := r.Clone(context.Background())
	out.Host = p.target.Host
	if err := out.Write(up); err != nil {
		up.Close()
		down.Close()
		return
	}
	p.mu.Lock()
	p.conns[up], p.conns[down] = struct{}{}, struct{}{}
	p.mu.Unlock()
	closeBoth := func() {
		up.Close()
		down.Close()
		p.mu.Lock()
		delete(p.conns, up)
		delete(p.conns, down)
		p.mu.Unlock()
	}
	p.wg.Go(func() {
		defer closeBoth()
		_, _ = io.Copy(up, rw.Reader) // client → hub, with what Hijack buffered
	})
	p.wg.Go(func() {
		defer closeBoth()
		buf := make([]byte, 32<<10)
		upgraded := false
		for {
			n, err := up.Read(buf)
			if n > 0 {
				p.mu.Lock()
				cut := upgraded && p.cutArm && n >= 2
				if cut {
					p.cutArm = false
					p.cuts++
				}
				p.mu.Unlock()
				if cut {
					_, _ = down.Write(buf[:n/2])
					return
				}
				if _, werr := down.Write(buf[:n]); werr != nil {
					return
				}
				upgraded = true // the 101 answer came first
			}
			if err != nil {
				return
			}
		}
	})
}

// faultRig is a daemon on a hub behind a bandProxy, with agent "coder"
// bound to a room, and the owner's REST client.
type faultRig struct {
	hub    *hub.Hub
	proxy  *bandProxy
	cfg    func() *running
	r      *running
	c      *apiclient.Client
	owner  *band.Client
	agent  wire.Agent
	room   string
	posted []string
}

func newFaultRig(t *testing.T, timeout time.Duration) *faultRig {
	t.Helper()
	h := startTestHub(t)
	fr := &faultRig{hub: h, proxy: newBandProxy(t, h.URL())}
	cfg := testConfig(t)
	cfg.Band, cfg.BandKey = fr.proxy.srv.URL, h.OwnerKey()
	cfg.BandTimeout = timeout
	fr.cfg = func() *running { return start(t, cfg) }
	fr.r = fr.cfg()
	fr.r.waitReady(t)
	fr.c = fr.r.client
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	owner, err := band.NewClient(hc, h.URL(), band.APIKey(h.OwnerKey()))
	require.NoError(t, err)
	fr.owner = owner
	ctx := t.Context()
	fr.agent, err = fr.c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := fr.c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "faults", Agents: []string{"coder"}})
	require.NoError(t, err)
	fr.room = room.ID
	_, err = fr.c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	return fr
}

func (fr *faultRig) post(t *testing.T, text string) string {
	t.Helper()
	sent, err := fr.owner.SendChatMessage(t.Context(), fr.room, "@coder "+text, []protocol.Mention{{ID: fr.agent.AgentID}})
	require.NoError(t, err)
	fr.posted = append(fr.posted, sent.ID)
	return sent.ID
}

// next waits for the next inbox message and returns its id, unsettled.
func (fr *faultRig) next(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		inbox, err := fr.c.WaitInbox(t.Context(), wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err)
		if len(inbox.Messages) > 0 {
			return inbox.Messages[0].ID
		}
	}
	t.Fatal("no message within 60s")
	return ""
}

// settleFails settles msg (a reply when reply is set) and expects Band's
// fault to fail it with a retryable code; the message stays queued.
func (fr *faultRig) settleFails(t *testing.T, msg string, reply bool) {
	t.Helper()
	err := fr.settle(t, msg, reply)
	var ae *apiclient.Error
	require.ErrorAs(t, err, &ae, "settling %s through a fault", msg)
	require.Equal(t, wire.CodeUnavailable, ae.Code, "a Band fault is retryable: %v", err)
	inbox, err := fr.c.Inbox(t.Context(), apiclient.InboxQuery{Agent: "coder"})
	require.NoError(t, err)
	require.Contains(t, idsOf(inbox.Messages), msg, "a message whose settlement failed stays queued")
}

func (fr *faultRig) settle(t *testing.T, msg string, reply bool) error {
	if reply {
		_, err := fr.c.Reply(t.Context(), msg, wire.ReplyRequest{Text: "done " + msg})
		return err
	}
	return fr.c.Ack(t.Context(), msg, wire.AckRequest{})
}

func idsOf(ms []wire.InboxMessage) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// verify checks the hub's view: every posted message processed, replies
// to exactly the replied ones, once each; and the inbox is empty.
func (fr *faultRig) verify(t *testing.T, replied map[string]bool) {
	t.Helper()
	page, err := fr.owner.ChatMessages(t.Context(), fr.room, "", 100)
	require.NoError(t, err)
	require.False(t, page.HasMore)
	processed := map[string]bool{}
	replies := map[string]int{}
	for _, m := range page.Messages {
		if m.SenderID == fr.agent.AgentID {
			_, text, _ := strings.Cut(m.Content, "done ")
			replies[text]++
			continue
		}
		if m.Metadata.DeliveryStatus[fr.agent.AgentID].Status == protocol.DeliveryProcessed {
			processed[m.ID] = true
		}
	}
	for _, id := range fr.posted {
		require.True(t, processed[id], "message %s settled on Band", id)
		want := 0
		if replied[id] {
			want = 1
		}
		require.Equal(t, want, replies[id], "replies to %s", id)
	}
	require.Len(t, processed, len(fr.posted), "nothing settled that was not posted")
	inbox, err := fr.c.Inbox(t.Context(), apiclient.InboxQuery{Agent: "coder"})
	require.NoError(t, err)
	require.Empty(t, inbox.Messages, "nothing left queued")
}

// TestPipeline_settlementFaults injects Band faults into settlement: 5xx
// and 429 with Retry-After on /processed and on the reply's post, a
// settlement that hangs past the request timeout, answers lost after Band
// acted, and slow (dribbled) bodies. Each failed settle reports the
// retryable code and leaves the message queued; the retry settles it
// exactly once and posts each reply exactly once.
func TestPipeline_settlementFaults(t *testing.T) {
	t.Parallel()
	fr := newFaultRig(t, 2*time.Second)
	replied := map[string]bool{}

	// An ack whose /processed fails with 503 and then 429.
	m := fr.post(t, "ack through 5xx")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callSettle, bandFault{status: 503}, bandFault{status: 429})
	fr.settleFails(t, m, false)
	fr.settleFails(t, m, false)
	require.NoError(t, fr.settle(t, m, false))

	// A reply whose post fails with 502 before it reaches Band.
	m = fr.post(t, "reply through 5xx")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callPost, bandFault{status: 502})
	fr.settleFails(t, m, true)
	require.NoError(t, fr.settle(t, m, true))
	replied[m] = true

	// A reply Band posted but whose answer was lost: the retry finds the
	// part already posted instead of posting it again.
	m = fr.post(t, "reply answer lost")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callPost, bandFault{lose: true})
	fr.settleFails(t, m, true)
	posts := fr.proxy.reached(callPost)
	require.NoError(t, fr.settle(t, m, true))
	require.Equal(t, posts, fr.proxy.reached(callPost), "the resumed reply posted nothing again")
	replied[m] = true

	// A reply posted, whose /processed then fails with 429.
	m = fr.post(t, "reply settle 429")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callSettle, bandFault{status: 429})
	fr.settleFails(t, m, true)
	require.NoError(t, fr.settle(t, m, true))
	replied[m] = true

	// A /processed that hangs past the request timeout, and one Band
	// performed but whose answer was lost.
	m = fr.post(t, "settle hangs")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callSettle, bandFault{hang: true})
	fr.settleFails(t, m, false)
	require.NoError(t, fr.settle(t, m, false))
	m = fr.post(t, "settle answer lost")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callSettle, bandFault{lose: true})
	fr.settleFails(t, m, false)
	require.NoError(t, fr.settle(t, m, false), "Band had settled it: the retry only removes it locally")

	// Slow bodies: claim, settle and post answers dribbled within the
	// timeout succeed at the first try; a dribble past the timeout fails
	// like a lost answer and the retry settles.
	fr.proxy.inject(callClaim, bandFault{dribble: 2 * time.Millisecond}, bandFault{dribble: 2 * time.Millisecond})
	fr.proxy.inject(callPost, bandFault{dribble: 2 * time.Millisecond})
	fr.proxy.inject(callSettle, bandFault{dribble: 2 * time.Millisecond})
	m = fr.post(t, "slow bodies")
	require.Equal(t, m, fr.next(t))
	require.NoError(t, fr.settle(t, m, true))
	replied[m] = true
	m = fr.post(t, "body slower than the timeout")
	require.Equal(t, m, fr.next(t))
	fr.proxy.inject(callSettle, bandFault{dribble: time.Second})
	fr.settleFails(t, m, false)
	require.NoError(t, fr.settle(t, m, false))
	for _, kind := range []string{callClaim, callSettle, callPost} {
		require.Zero(t, fr.proxy.pending(kind), "every %s fault was used", kind)
	}

	// The daemon still serves: a plain message round-trips.
	m = fr.post(t, "after the faults")
	require.Equal(t, m, fr.next(t))
	require.NoError(t, fr.settle(t, m, true))
	replied[m] = true
	fr.verify(t, replied)
}

// TestPipeline_socketCutMidFrame cuts the agent socket in the middle of a
// frame the hub is sending (half the bytes, then the TCP connection
// closes). The daemon reconnects, and the message of the cut frame and
// those posted while it was away are delivered once each, in order.
func TestPipeline_socketCutMidFrame(t *testing.T) {
	t.Parallel()
	fr := newFaultRig(t, 2*time.Second)
	replied := map[string]bool{}
	first := fr.post(t, "before the cut")
	require.Equal(t, first, fr.next(t))
	require.NoError(t, fr.settle(t, first, false))

	cuts := 3
	if failureLong() {
		cuts = 30
	}
	for i := range cuts {
		fr.proxy.cutNextFrame()
		cut := fr.post(t, fmt.Sprintf("cut %d", i))
		require.Eventually(t, func() bool { return fr.proxy.cutCount() == i+1 }, 30*time.Second, 10*time.Millisecond, "a frame was cut")
		after := fr.post(t, fmt.Sprintf("after cut %d", i))
		require.Equal(t, cut, fr.next(t), "the cut frame's message still arrives")
		require.NoError(t, fr.settle(t, cut, false))
		require.Equal(t, after, fr.next(t))
		require.NoError(t, fr.settle(t, after, true))
		replied[after] = true
	}
	fr.verify(t, replied)
}

// TestPipeline_supersedeStopsFeedKeepsServing: another connection for the
// agent supersedes the daemon's socket. The daemon reports the agent as
// superseded and does not fight for the connection, keeps serving (a
// queued message can still be settled), and loses nothing: a message
// posted meanwhile stays unprocessed on Band and is delivered once after a
// restart.
func TestPipeline_supersedeStopsFeedKeepsServing(t *testing.T) {
	t.Parallel()
	fr := newFaultRig(t, 5*time.Second)
	ctx := t.Context()
	queued := fr.post(t, "queued before the supersede")
	require.Equal(t, queued, fr.next(t))

	// The intruder connects as the agent, with the owner's key.
	u := strings.Replace(fr.hub.URL(), "http://", "ws://", 1) + protocol.SocketPath + "?" + url.Values{
		"vsn": {"2.0.0"}, "api_key": {fr.hub.OwnerKey()}, "agent_id": {fr.agent.AgentID},
	}.Encode()
	intruder, _, err := websocket.Dial(ctx, u, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		agents, err := fr.c.Agents(ctx)
		return err == nil && len(agents) == 1 && agents[0].State == string(band.StateSuperseded)
	}, 30*time.Second, 10*time.Millisecond, "the daemon reports the agent superseded")

	// Still serving: the queued message settles over REST.
	require.NoError(t, fr.settle(t, queued, true))
	during := fr.post(t, "posted while superseded")
	intruder.Close(websocket.StatusNormalClosure, "")

	// A restart takes the connection back and catches up.
	err, _ = fr.r.stop()
	require.NoError(t, err)
	fr.r = fr.cfg()
	fr.r.waitReady(t)
	fr.c = fr.r.client
	require.Equal(t, during, fr.next(t))
	require.NoError(t, fr.settle(t, during, false))
	fr.verify(t, map[string]bool{queued: true})
	require.Eventually(t, func() bool {
		agents, err := fr.c.Agents(ctx)
		return err == nil && len(agents) == 1 && agents[0].State == string(band.StateUp)
	}, 30*time.Second, 10*time.Millisecond)
}
