package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/phoenix"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/datadir"
)

// hostileRig is a daemon on its embedded hub, with agent "coder" bound to
// a room, raw HTTP access to the daemon's API and the hub's, and a probe
// agent of the hub's own (with its key) that owns a second room.
type hostileRig struct {
	c         *apiclient.Client
	api       *http.Client // to the daemon's unix socket
	hubURL    string
	ownerKey  string
	owner     *band.Client
	agent     wire.Agent
	room      string
	probeKey  string
	probeRoom string
	n         int
}

func newHostileRig(t *testing.T) *hostileRig {
	t.Helper()
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	hr := &hostileRig{c: r.client, hubURL: st.Band.URL}
	key, err := os.ReadFile(st.Band.OwnerKeyFile)
	require.NoError(t, err)
	hr.ownerKey = strings.TrimSpace(string(key))
	sock := filepath.Join(cfg.DataDir, datadir.SocketFile)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	hr.api = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	hr.owner, err = band.NewClient(hc, hr.hubURL, band.APIKey(hr.ownerKey))
	require.NoError(t, err)

	hr.agent, err = hr.c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := hr.c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "hostile", Agents: []string{"coder"}})
	require.NoError(t, err)
	hr.room = room.ID
	_, err = hr.c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)

	var reg protocol.Data[protocol.RegisteredAgent]
	status, body := hr.hub(t, hr.ownerKey, http.MethodPost, "/api/v1/me/agents/register", `{"agent":{"name":"probe"}}`)
	require.Equal(t, http.StatusCreated, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &reg))
	hr.probeKey = reg.Data.Credentials.APIKey
	var chat struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	status, body = hr.hub(t, hr.probeKey, http.MethodPost, "/api/v1/agent/chats", `{"chat":{"title":"probe"}}`)
	require.Equal(t, http.StatusCreated, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &chat))
	hr.probeRoom = chat.Data.ID
	hr.roundTrip(t, "setup")
	return hr
}

// daemon sends a raw request to the daemon's API and returns the status
// and the error code of the envelope ("" on success).
func (hr *hostileRig) daemon(t *testing.T, method, path, body string) (int, wire.Code, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://jamd"+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hr.api.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var env wire.ErrorBody
	_ = json.Unmarshal(raw, &env)
	return resp.StatusCode, env.Error.Code, string(raw)
}

// hub sends a raw request to the hub's REST API.
func (hr *hostileRig) hub(t *testing.T, key, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, hr.hubURL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

func hubCode(t *testing.T, body string) string {
	t.Helper()
	var env protocol.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &env), "error body %s", body)
	return env.Error.Code
}

// roundTrip checks that both still serve: the owner posts on the hub, the
// daemon delivers, the agent replies through the daemon, and the hub has
// the message settled.
func (hr *hostileRig) roundTrip(t *testing.T, after string) {
	t.Helper()
	ctx := t.Context()
	hr.n++
	sent, err := hr.owner.SendChatMessage(ctx, hr.room, fmt.Sprintf("@coder ping %d", hr.n), []protocol.Mention{{ID: hr.agent.AgentID}})
	require.NoError(t, err, "after %s: the hub takes a message", after)
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "after %s: message not delivered within 60s", after)
		inbox, err := hr.c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err, "after %s: the daemon serves", after)
		if len(inbox.Messages) == 0 {
			continue
		}
		require.Equal(t, sent.ID, inbox.Messages[0].ID, "after %s", after)
		break
	}
	_, err = hr.c.Reply(ctx, sent.ID, wire.ReplyRequest{Text: "pong"})
	require.NoError(t, err, "after %s: the reply settles", after)
}

// nested is n arrays, one in another.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestHostile_daemonAPI sends hostile bodies to every JSON endpoint of the
// daemon's API: each gets its catalogue code, and a message still
// round-trips after each.
func TestHostile_daemonAPI(t *testing.T) {
	t.Parallel()
	hr := newHostileRig(t)
	msg := "0190a0a0-0000-4000-8000-000000000001"
	endpoints := []string{
		"/v1/accounts", "/v1/agents", "/v1/rooms", "/v1/rooms/" + hr.room + "/agents", "/v1/rooms/" + hr.room + "/messages",
		"/v1/bindings", "/v1/waitInbox", "/v1/messages/" + msg + "/reply", "/v1/messages/" + msg + "/ack",
		"/v1/send", "/v1/notices", "/v1/agents/coder/config",
	}
	bodies := []struct {
		name   string
		body   string
		status int
		code   wire.Code
		msg    string
	}{
		{"100k nested arrays", nested(100000), http.StatusBadRequest, wire.CodeInvalidArgument, "exceeded max depth"},
		{"nested arrays in a field", `{"text":` + nested(20000) + `}`, http.StatusBadRequest, wire.CodeInvalidArgument, "exceeded max depth"},
		{"oversize body", `{"text":"` + strings.Repeat("x", 2<<20) + `"}`, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge, "exceeds"},
		{"invalid utf-8", "{\"text\":\"a\xff\xfeb\"}", http.StatusBadRequest, wire.CodeInvalidArgument, "UTF-8"},
		{"not json", "\x00\x01\x02", http.StatusBadRequest, wire.CodeInvalidArgument, "request body"},
	}
	for _, ep := range endpoints {
		for _, b := range bodies {
			status, code, raw := hr.daemon(t, http.MethodPost, ep, b.body)
			require.Equal(t, b.status, status, "%s: %s: %.300s", ep, b.name, raw)
			require.Equal(t, b.code, code, "%s: %s", ep, b.name)
			require.Contains(t, raw, b.msg, "%s: %s", ep, b.name)
		}
		hr.roundTrip(t, "hostile bodies to "+ep)
	}
}

// TestHostile_daemonFields sends well-formed requests whose fields are
// hostile: control characters in titles and agent names, and mention
// floods of ten thousand handles or ids.
func TestHostile_daemonFields(t *testing.T) {
	t.Parallel()
	hr := newHostileRig(t)
	flood := make([]string, 10000)
	for i := range flood {
		flood[i] = fmt.Sprintf("owner/agent-%d", i)
	}
	idFlood := make([]string, 10000)
	for i := range idFlood {
		idFlood[i] = fmt.Sprintf("0190a0a0-0000-4000-8000-%012d", i)
	}
	mustJSON := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	for _, tc := range []struct {
		name string
		path string
		body string
		code wire.Code
	}{
		{"NUL in a room title", "/v1/rooms", `{"title":"a\u0000b"}`, wire.CodeInvalidArgument},
		{"escape sequence in a room title", "/v1/rooms", `{"title":"\u001b[2J\u001b]0;owned\u0007"}`, wire.CodeInvalidArgument},
		{"line break in a room title", "/v1/rooms", `{"title":"one\ntwo"}`, wire.CodeInvalidArgument},
		{"C1 control in a room title", "/v1/rooms", `{"title":"a\u009bb"}`, wire.CodeInvalidArgument},
		{"escape sequence in an agent name", "/v1/agents", `{"name":"co\u001b[31mder"}`, wire.CodeInvalidArgument},
		{"NUL in an agent name", "/v1/agents", `{"name":"co\u0000der"}`, wire.CodeInvalidArgument},
		{"DEL in an agent name", "/v1/agents", `{"name":"co\u007fder"}`, wire.CodeInvalidArgument},
		{"control character as a bind handle", "/v1/bindings", mustJSON(wire.BindRequest{Agent: "co\x1bder", Room: hr.room}), wire.CodeNotFound},
		{"mention flood by handle", "/v1/rooms/" + hr.room + "/messages", mustJSON(wire.RoomPostRequest{Text: "hello", Mentions: flood}), wire.CodeInvalidArgument},
		{"mention flood by id", "/v1/rooms/" + hr.room + "/messages", mustJSON(wire.RoomPostRequest{Text: "hello", Mentions: idFlood}), wire.CodeInvalidArgument},
		{"recipient flood", "/v1/send", mustJSON(wire.SendRequest{Agent: "coder", Room: hr.room, Text: "hello", Recipients: flood}), wire.CodeInvalidArgument},
	} {
		status, code, raw := hr.daemon(t, http.MethodPost, tc.path, tc.body)
		require.Equal(t, tc.code, code, "%s: %d %.300s", tc.name, status, raw)
		hr.roundTrip(t, tc.name)
	}

	// A flood of textual mentions of one real participant is fine: one
	// token, one delivery.
	text := strings.Repeat("@"+hr.agent.Handle+" ", 10000)
	res, err := hr.c.RoomPost(t.Context(), hr.room, wire.RoomPostRequest{Text: text})
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(res.Body, "@[["), "only the first span becomes a token")
	inbox, err := hr.c.WaitInbox(t.Context(), wire.WaitRequest{Agent: "coder", TimeoutMS: 30000})
	require.NoError(t, err)
	require.Len(t, inbox.Messages, 1)
	require.NoError(t, hr.c.Ack(t.Context(), inbox.Messages[0].ID, wire.AckRequest{}))
	hr.roundTrip(t, "a textual mention flood")
}

// TestHostile_hubREST sends hostile bodies to every JSON endpoint of the
// hub's REST API, and hostile fields to those that take names, titles,
// content and mentions: each gets Band's error envelope with its code, and
// the daemon's traffic through the hub goes on.
func TestHostile_hubREST(t *testing.T) {
	t.Parallel()
	hr := newHostileRig(t)
	msg := "0190a0a0-0000-4000-8000-000000000001"
	routes := []struct{ key, method, path string }{
		{hr.ownerKey, http.MethodPut, "/api/v1/me/profile"},
		{hr.ownerKey, http.MethodPost, "/api/v1/me/agents/register"},
		{hr.ownerKey, http.MethodPost, "/api/v1/me/chats"},
		{hr.ownerKey, http.MethodPost, "/api/v1/me/chats/" + hr.room + "/messages"},
		{hr.ownerKey, http.MethodPost, "/api/v1/me/chats/" + hr.room + "/participants"},
		{hr.probeKey, http.MethodPost, "/api/v1/agent/chats"},
		{hr.probeKey, http.MethodPatch, "/api/v1/agent/chats/" + hr.probeRoom},
		{hr.probeKey, http.MethodPost, "/api/v1/agent/chats/" + hr.probeRoom + "/participants"},
		{hr.probeKey, http.MethodPost, "/api/v1/agent/chats/" + hr.probeRoom + "/messages"},
		{hr.probeKey, http.MethodPost, "/api/v1/agent/chats/" + hr.probeRoom + "/events"},
		{hr.probeKey, http.MethodPost, "/api/v1/agent/chats/" + hr.probeRoom + "/activity"},
		{hr.probeKey, http.MethodPost, "/api/v1/agent/chats/" + hr.probeRoom + "/messages/" + msg + "/failed"},
	}
	bodies := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"100k nested arrays", nested(100000), http.StatusBadRequest, "invalid_json"},
		{"nested arrays in a field", `{"chat":` + nested(20000) + `}`, http.StatusBadRequest, "invalid_json"},
		{"oversize body", `{"x":"` + strings.Repeat("x", 2<<20) + `"}`, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"invalid utf-8", "{\"x\":\"a\xff\xfeb\"}", http.StatusBadRequest, "invalid_json"},
	}
	for _, rt := range routes {
		for _, b := range bodies {
			status, raw := hr.hub(t, rt.key, rt.method, rt.path, b.body)
			require.Equal(t, b.status, status, "%s %s: %s: %.300s", rt.method, rt.path, b.name, raw)
			require.Equal(t, b.code, hubCode(t, raw), "%s %s: %s", rt.method, rt.path, b.name)
		}
	}
	hr.roundTrip(t, "hostile bodies to the hub")

	var ids []map[string]string
	for i := range 10000 {
		ids = append(ids, map[string]string{"id": fmt.Sprintf("0190a0a0-0000-4000-8000-%012d", i)})
	}
	var same []map[string]string
	for range 10000 {
		same = append(same, map[string]string{"id": hr.agent.AgentID})
	}
	mustJSON := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	postMsg := "/api/v1/me/chats/" + hr.room + "/messages"
	mention := []map[string]string{{"id": hr.agent.AgentID}}
	for _, tc := range []struct {
		name, key, method, path, body string
		status                        int
		code                          string
	}{
		{"NUL in a title", hr.ownerKey, http.MethodPost, "/api/v1/me/chats", `{"chat":{"title":"a\u0000b"}}`, 422, "validation_error"},
		{"escape sequence in a title", hr.ownerKey, http.MethodPost, "/api/v1/me/chats", `{"chat":{"title":"\u001b[2Jowned"}}`, 422, "validation_error"},
		{"C1 control in a title", hr.probeKey, http.MethodPatch, "/api/v1/agent/chats/" + hr.probeRoom, `{"chat":{"title":"a\u009bb"}}`, 422, "validation_error"},
		{"escape sequence in an agent name", hr.ownerKey, http.MethodPost, "/api/v1/me/agents/register", `{"agent":{"name":"co\u001b[31mder"}}`, 422, "validation_error"},
		{"tab in an agent name", hr.ownerKey, http.MethodPost, "/api/v1/me/agents/register", `{"agent":{"name":"co\tder"}}`, 422, "validation_error"},
		{"bell in a first name", hr.ownerKey, http.MethodPut, "/api/v1/me/profile", `{"user":{"first_name":"a\u0007"}}`, 422, "validation_error"},
		{"NUL in content", hr.ownerKey, http.MethodPost, postMsg, mustJSON(map[string]any{"message": map[string]any{"content": "a\x00b", "mentions": mention}}), 422, "validation_error"},
		{"10k mentions of strangers", hr.ownerKey, http.MethodPost, postMsg, mustJSON(map[string]any{"message": map[string]any{"content": "hi", "mentions": ids}}), 422, "mentioned_participant_not_in_room"},
		{"10k mentions of one agent", hr.ownerKey, http.MethodPost, postMsg, mustJSON(map[string]any{"message": map[string]any{"content": "hi", "mentions": same}}), 422, "duplicate_mentions"},
	} {
		status, raw := hr.hub(t, tc.key, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, status, "%s: %.300s", tc.name, raw)
		require.Equal(t, tc.code, hubCode(t, raw), tc.name)
	}
	hr.roundTrip(t, "hostile fields to the hub")
}

// TestHostile_hubSocket sends hostile frames to the hub's WebSocket: each
// closes that socket with its documented close code, and the daemon's own
// socket, on the same hub, goes on delivering.
func TestHostile_hubSocket(t *testing.T) {
	t.Parallel()
	hr := newHostileRig(t)
	u := strings.Replace(hr.hubURL, "http://", "ws://", 1) + protocol.SocketPath + "?" + url.Values{"vsn": {"2.0.0"}, "api_key": {hr.ownerKey}}.Encode()
	for _, tc := range []struct {
		name string
		typ  websocket.MessageType
		data string
		want websocket.StatusCode
	}{
		{"oversize frame", websocket.MessageText, `[null,"1","phoenix","heartbeat",{"x":"` + strings.Repeat("x", phoenix.MaxFrameBytes) + `"}]`, websocket.StatusMessageTooBig},
		{"four elements", websocket.MessageText, `["1","1","phoenix","heartbeat"]`, websocket.StatusPolicyViolation},
		{"numeric topic", websocket.MessageText, `["1","1",7,"heartbeat",{}]`, websocket.StatusPolicyViolation},
		{"invalid utf-8", websocket.MessageText, "[null,\"1\",\"room:\xff\",\"phx_join\",{}]", websocket.StatusPolicyViolation},
		{"100k nested arrays", websocket.MessageText, nested(100000), websocket.StatusPolicyViolation},
		{"nested payload", websocket.MessageText, `[null,"1","phoenix","heartbeat",` + nested(100000) + `]`, websocket.StatusPolicyViolation},
		{"binary frame", websocket.MessageBinary, `[null,"1","phoenix","heartbeat",{}]`, websocket.StatusUnsupportedData},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		conn, _, err := websocket.Dial(ctx, u, nil)
		require.NoError(t, err, tc.name)
		conn.SetReadLimit(phoenix.MaxFrameBytes)
		_ = conn.Write(ctx, tc.typ, []byte(tc.data))
		var rerr error
		for rerr == nil {
			_, _, rerr = conn.Read(ctx)
		}
		cancel()
		require.Equal(t, tc.want, websocket.CloseStatus(rerr), "%s: %v", tc.name, rerr)
		conn.CloseNow()
		hr.roundTrip(t, tc.name)
	}
}
