package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

// testTimeout bounds every wait on the hub: a failure, never a sleep.
const testTimeout = 10 * time.Second

// testBundle is a running hub on a temporary data directory and an HTTP
// client that talks to it.
type testBundle struct {
	t      *testing.T
	cfg    hub.Config
	hub    *hub.Hub
	client *http.Client
	owner  string // the owner's user key
}

// setup starts a hub; mod adjusts its Config.
func setup(t *testing.T, mod ...func(*hub.Config)) *testBundle {
	t.Helper()
	cfg := hub.Config{DataDir: t.TempDir()}
	for _, m := range mod {
		m(&cfg)
	}
	tr := &http.Transport{}
	b := &testBundle{t: t, cfg: cfg, client: &http.Client{Transport: tr}}
	t.Cleanup(tr.CloseIdleConnections)
	b.start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		require.NoError(t, b.hub.Stop(ctx))
	})
	return b
}

func (b *testBundle) start() {
	b.t.Helper()
	h, err := hub.New(b.cfg)
	require.NoError(b.t, err)
	require.NoError(b.t, h.Start(context.Background()))
	b.hub = h
	b.owner = h.OwnerKey()
}

// restart stops the hub and starts a new one on the same data directory.
func (b *testBundle) restart() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(b.t, b.hub.Stop(ctx))
	b.client.Transport.(*http.Transport).CloseIdleConnections()
	b.start()
}

// ownerKeyFile reads <DataDir>/owner.key.
func (b *testBundle) ownerKeyFile() string {
	raw, err := os.ReadFile(filepath.Join(b.cfg.DataDir, "owner.key"))
	require.NoError(b.t, err)
	return strings.TrimSpace(string(raw))
}

// do sends a request with key in X-API-Key (when not empty) and returns
// the status and body.
func (b *testBundle) do(method, path, key string, body any) (int, []byte) {
	b.t.Helper()
	resp := b.doResp(method, path, key, body, nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, raw
}

func (b *testBundle) doResp(method, path, key string, body any, header http.Header) *http.Response {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(b.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.hub.URL()+path, rd)
	require.NoError(b.t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	return resp
}

// call sends a request, requires want, and decodes the body into out.
func (b *testBundle) call(method, path, key string, body any, want int, out any) {
	b.t.Helper()
	status, raw := b.do(method, path, key, body)
	require.Equal(b.t, want, status, "%s %s: %s", method, path, raw)
	if out != nil {
		require.NoError(b.t, json.Unmarshal(raw, out), string(raw))
	}
}

// apiErr requires an error response and returns its envelope.
func (b *testBundle) apiErr(method, path, key string, body any, want int) protocol.ErrorDetail {
	b.t.Helper()
	status, raw := b.do(method, path, key, body)
	require.Equal(b.t, want, status, "%s %s: %s", method, path, raw)
	var e protocol.ErrorBody
	require.NoError(b.t, json.Unmarshal(raw, &e), string(raw))
	require.NotEmpty(b.t, e.Error.Code)
	require.NotEmpty(b.t, e.Error.Message)
	require.NotEmpty(b.t, e.Error.RequestID)
	if want == http.StatusUnprocessableEntity {
		require.NotEmpty(b.t, e.Error.Details, "422 must carry details")
	}
	return e.Error
}

// agentInfo is a registered agent.
type agentInfo struct {
	ID, Key, Handle, Name string
}

func (b *testBundle) register(name string) agentInfo {
	b.t.Helper()
	var out protocol.Data[protocol.RegisteredAgent]
	b.call("POST", "/api/v1/me/agents/register", b.owner,
		protocol.RegisterAgentRequest{Agent: protocol.RegisterAgentFields{Name: name, Description: "test agent " + name}}, 201, &out)
	var me protocol.Data[protocol.AgentMe]
	b.call("GET", "/api/v1/agent/me", out.Data.Credentials.APIKey, nil, 200, &me)
	return agentInfo{ID: out.Data.Agent.ID, Key: out.Data.Credentials.APIKey, Handle: me.Data.Handle, Name: name}
}

func (b *testBundle) ownerID() string {
	b.t.Helper()
	var out protocol.Data[protocol.UserDetails]
	b.call("GET", "/api/v1/me/profile", b.owner, nil, 200, &out)
	return out.Data.ID
}

// room creates a room as the owner and adds the agents.
func (b *testBundle) room(agents ...agentInfo) string {
	b.t.Helper()
	var out protocol.Data[protocol.MeChatRoom]
	b.call("POST", "/api/v1/me/chats", b.owner, map[string]any{"chat": map[string]any{}}, 201, &out)
	for _, a := range agents {
		b.add(b.owner, "/api/v1/me", out.Data.ID, a.ID)
	}
	return out.Data.ID
}

func (b *testBundle) add(key, api, room, id string) {
	b.t.Helper()
	b.call("POST", api+"/chats/"+room+"/participants", key,
		protocol.ParticipantRequest{Participant: protocol.ParticipantFields{ParticipantID: id}}, 201, nil)
}

// send posts a text message mentioning handles, as key on api.
func (b *testBundle) send(key, api, room, content string, handles ...string) protocol.MessageSent {
	b.t.Helper()
	req := protocol.MessageRequest{Message: protocol.MessageFields{Content: content}}
	for _, h := range handles {
		req.Message.Mentions = append(req.Message.Mentions, protocol.Mention{Handle: h})
	}
	var out protocol.Data[protocol.MessageSent]
	b.call("POST", api+"/chats/"+room+"/messages", key, req, 201, &out)
	return out.Data
}

// list decodes a list response.
func (b *testBundle) list(path, key string) protocol.List[protocol.Message] {
	b.t.Helper()
	var out protocol.List[protocol.Message]
	b.call("GET", path, key, nil, 200, &out)
	return out
}

// wsClient is a Phoenix v2 client over coder/websocket.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	mu   sync.Mutex
	ref  int
}

// dial opens a socket with the query (vsn included by the caller).
func (b *testBundle) dial(query url.Values, header http.Header) (*wsClient, *http.Response, error) {
	b.t.Helper()
	u := "ws" + strings.TrimPrefix(b.hub.URL(), "http") + protocol.SocketPath + "?" + query.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: b.client, HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	conn.SetReadLimit(4 * phoenix.MaxFrameBytes)
	c := &wsClient{t: b.t, conn: conn}
	b.t.Cleanup(func() { conn.CloseNow() })
	return c, resp, nil
}

// socket opens a socket for key and joins topics.
func (b *testBundle) socket(key string, topics ...string) *wsClient {
	b.t.Helper()
	c, _, err := b.dial(url.Values{"api_key": {key}, "vsn": {"2.0.0"}}, nil)
	require.NoError(b.t, err)
	for _, topic := range topics {
		require.Equal(b.t, phoenix.StatusOK, c.join(topic).Status, topic)
	}
	return c
}

func (c *wsClient) nextRef() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ref++
	return strconv.Itoa(c.ref)
}

func (c *wsClient) write(raw []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(c.t, c.conn.Write(ctx, websocket.MessageText, raw))
}

func (c *wsClient) send(f phoenix.Frame) {
	c.t.Helper()
	raw, err := f.Encode()
	require.NoError(c.t, err)
	c.write(raw)
}

// read returns the next frame, or the read error.
func (c *wsClient) read() (phoenix.Frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, raw, err := c.conn.Read(ctx)
	if err != nil {
		return phoenix.Frame{}, err
	}
	return phoenix.Decode(raw)
}

func (c *wsClient) next() phoenix.Frame {
	c.t.Helper()
	f, err := c.read()
	require.NoError(c.t, err)
	return f
}

// request sends a client frame and returns the reply to it.
func (c *wsClient) request(joinRef *string, topic, event string) phoenix.Reply {
	c.t.Helper()
	ref := c.nextRef()
	c.send(phoenix.Frame{JoinRef: joinRef, Ref: &ref, Topic: topic, Event: event, Payload: json.RawMessage("{}")})
	f := c.next()
	require.Equal(c.t, phoenix.EventReply, f.Event, "frame %+v", f)
	require.Equal(c.t, ref, phoenix.RefString(f.Ref))
	require.Equal(c.t, topic, f.Topic)
	require.Equal(c.t, phoenix.RefString(joinRef), phoenix.RefString(f.JoinRef))
	var r phoenix.Reply
	require.NoError(c.t, json.Unmarshal(f.Payload, &r))
	return r
}

// join joins topic with a fresh join_ref equal to the ref.
func (c *wsClient) join(topic string) phoenix.Reply {
	c.t.Helper()
	ref := strconv.Itoa(c.ref + 1)
	return c.request(&ref, topic, phoenix.EventJoin)
}

// expect reads the next frame and requires it to be event on topic.
func (c *wsClient) expect(topic, event string) phoenix.Frame {
	c.t.Helper()
	f := c.next()
	require.Equal(c.t, topic+" "+event, f.Topic+" "+f.Event, "payload %s", f.Payload)
	require.Nil(c.t, f.Ref, "pushes carry a null ref")
	require.NotNil(c.t, f.JoinRef, "pushes carry the channel's join_ref")
	return f
}

// expectMessage reads the next push and decodes it as a message.
func (c *wsClient) expectMessage(topic, event string) protocol.Message {
	c.t.Helper()
	f := c.expect(topic, event)
	var m protocol.Message
	require.NoError(c.t, json.Unmarshal(f.Payload, &m))
	return m
}

// closed requires the socket to end with code.
func (c *wsClient) closed(code websocket.StatusCode) {
	c.t.Helper()
	for {
		f, err := c.read()
		if err != nil {
			require.Equal(c.t, code, websocket.CloseStatus(err), "err %v", err)
			return
		}
		_ = f // frames queued before the close are fine
	}
}

func chatTopic(room string) string { return protocol.Topic(protocol.TopicChatRoom, room) }
