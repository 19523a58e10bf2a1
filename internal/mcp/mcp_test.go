package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mcp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var minter = jam.NewMinter(nil, nil)

func newSession() jam.SessionID { return jam.New[jam.SessionID](minter) }

// call is one call Actions received.
type call struct {
	method  string
	session jam.SessionID
	in      any
}

// fakeActions records what it is asked and answers canned values. err,
// when set, is every method's error. gate, when set, holds every call
// until it is closed (or the call's context ends).
type fakeActions struct {
	err     error
	gate    chan struct{}
	entered chan struct{} // when set, gets a value as each call enters
	// cancelled, when set, gets the cause of each gated call's
	// cancellation.
	cancelled chan error

	mu        sync.Mutex
	calls     []call // guarded by mu
	inside    int    // guarded by mu
	maxInside int    // guarded by mu
}

var _ mcp.Actions = (*fakeActions)(nil)

func (f *fakeActions) record(ctx context.Context, method string, s jam.SessionID, in any) error {
	f.mu.Lock()
	f.calls = append(f.calls, call{method: method, session: s, in: in})
	f.inside++
	f.maxInside = max(f.maxInside, f.inside)
	f.mu.Unlock()
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	defer func() {
		f.mu.Lock()
		f.inside--
		f.mu.Unlock()
	}()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			if f.cancelled != nil {
				f.cancelled <- context.Cause(ctx)
			}
			return ctx.Err()
		}
	}
	return f.err
}

func (f *fakeActions) snapshot() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func staged(kind string) mcp.Staged {
	return mcp.Staged{Turn: "turn_1", Index: 0, Kind: kind, Note: "posted when your turn ends"}
}

func (f *fakeActions) Reply(ctx context.Context, s jam.SessionID, in mcp.ReplyInput) (mcp.Staged, error) {
	return staged("reply"), f.record(ctx, "Reply", s, in)
}

func (f *fakeActions) NoReply(ctx context.Context, s jam.SessionID, in mcp.NoReplyInput) (mcp.Staged, error) {
	return staged("no_reply"), f.record(ctx, "NoReply", s, in)
}

func (f *fakeActions) Send(ctx context.Context, s jam.SessionID, in mcp.SendInput) (mcp.Staged, error) {
	return staged("send"), f.record(ctx, "Send", s, in)
}

var participants = []mcp.Participant{
	{ID: "p1", Handle: "ada", Name: "Ada", Type: "person"},
	{ID: "p2", Handle: "coder", Name: "Coder", Type: "agent", You: true},
}

func (f *fakeActions) Participants(ctx context.Context, s jam.SessionID) ([]mcp.Participant, error) {
	return participants, f.record(ctx, "Participants", s, nil)
}

func (f *fakeActions) History(ctx context.Context, s jam.SessionID, limit int) ([]mcp.Message, error) {
	return []mcp.Message{{ID: "m1", SenderID: "p1", SenderName: "Ada", SenderType: "person", Text: "hi", At: "2026-03-01T12:00:00Z"}},
		f.record(ctx, "History", s, limit)
}

func (f *fakeActions) CaptureChangeSet(ctx context.Context, s jam.SessionID) (mcp.ChangeSet, error) {
	return mcp.ChangeSet{ID: "cs_1", Turn: "turn_1", Files: 2, Paths: []string{"a.go", "b.go"}, PatchBytes: 120},
		f.record(ctx, "CaptureChangeSet", s, nil)
}

var delegated = mcp.Delegation{ID: "del_1", Role: "review", Agent: "local/rev", Parent: "sess_p", Child: "sess_c", ChangeSet: "cs_1",
	Contract: "review", State: "running", MaxAttempts: 3, Note: "started"}

func (f *fakeActions) Delegate(ctx context.Context, s jam.SessionID, in mcp.DelegateInput) (mcp.Delegation, error) {
	return delegated, f.record(ctx, "Delegate", s, in)
}

func (f *fakeActions) DelegationStatus(ctx context.Context, s jam.SessionID, id string) (mcp.Delegation, error) {
	d := delegated
	d.Schema = json.RawMessage(`{"type":"object"}`)
	return d, f.record(ctx, "DelegationStatus", s, id)
}

func (f *fakeActions) SubmitResult(ctx context.Context, s jam.SessionID, in mcp.SubmitInput) (mcp.Delegation, error) {
	d := delegated
	d.State, d.Result, d.Digest = "submitted", in.Result, "abc"
	return d, f.record(ctx, "SubmitResult", s, in)
}

// logBuffer collects the server's log, at debug.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type testBundle struct {
	srv     *mcp.Server
	actions *fakeActions
	log     *logBuffer
}

// setup starts a server on loopback with the fake; cfg's Actions and
// Logger are filled in.
func setup(t testing.TB, cfg mcp.Config, actions *fakeActions) *testBundle {
	t.Helper()
	if actions == nil {
		actions = &fakeActions{}
	}
	lb := &logBuffer{}
	cfg.Actions = actions
	cfg.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := mcp.New(cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Listen(""))
	t.Cleanup(func() {
		if actions.gate != nil {
			select {
			case <-actions.gate:
			default:
				close(actions.gate)
			}
		}
		require.NoError(t, srv.Close(context.Background()))
	})
	return &testBundle{srv: srv, actions: actions, log: lb}
}

// headerTransport adds an entry's headers to every request.
type headerTransport struct {
	headers map[string]string
	base    *http.Transport
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// httpClient is a client with its own connections, closed at cleanup.
func httpClient(t testing.TB, headers map[string]string) *http.Client {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: &headerTransport{headers: headers, base: base}}
}

// connect grants a session and connects the SDK's client with its entry.
func (b *testBundle) connect(t testing.TB, s jam.SessionID, protocol string) *sdk.ClientSession {
	t.Helper()
	entry, err := b.srv.Grant(s)
	require.NoError(t, err)
	return connectEntry(t, entry, protocol)
}

func connectEntry(t testing.TB, entry harness.MCPServer, protocol string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil)
	transport := &sdk.StreamableClientTransport{
		Endpoint:   entry.URL,
		HTTPClient: httpClient(t, entry.Headers),
		MaxRetries: -1,
	}
	cs, err := client.Connect(t.Context(), transport, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t testing.TB, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(t testing.TB, res *sdk.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*sdk.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

// protocols are the versions the tests speak: the SDK client's default
// (the newest) and the one today's agent CLIs use.
var protocols = []string{"", "2025-06-18"}

func TestServer_ListTools(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{}, nil)
	for _, p := range protocols {
		t.Run("protocol "+p, func(t *testing.T) {
			t.Parallel()
			cs := b.connect(t, newSession(), p)
			res, err := cs.ListTools(t.Context(), nil)
			require.NoError(t, err)
			schemas := map[string]map[string]any{}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				require.NotEmpty(t, tool.Description, tool.Name)
				require.NotNil(t, tool.OutputSchema, tool.Name)
				raw, err := json.Marshal(tool.InputSchema)
				require.NoError(t, err)
				var m map[string]any
				require.NoError(t, json.Unmarshal(raw, &m))
				require.Equal(t, "object", m["type"], tool.Name)
				require.Equal(t, false, m["additionalProperties"], tool.Name)
				schemas[tool.Name] = m
			}
			require.ElementsMatch(t, []string{"room_reply", "room_no_reply", "room_send", "room_participants", "room_history", "changeset_capture",
				"delegate", "delegation_status", "submit_result"}, names)

			prop := func(tool, name string) map[string]any {
				p, ok := schemas[tool]["properties"].(map[string]any)[name].(map[string]any)
				require.True(t, ok, "%s.%s", tool, name)
				require.NotEmpty(t, p["description"], "%s.%s", tool, name)
				return p
			}
			require.ElementsMatch(t, []any{"text"}, schemas["room_reply"]["required"])
			require.ElementsMatch(t, []any{"text", "to"}, schemas["room_send"]["required"])
			require.ElementsMatch(t, []any{"reason"}, schemas["room_no_reply"]["required"])
			require.Nil(t, schemas["room_history"]["required"])
			require.EqualValues(t, 65536, prop("room_reply", "text")["maxLength"])
			require.EqualValues(t, 32, prop("room_reply", "mentions")["maxItems"])
			require.EqualValues(t, 1, prop("room_send", "to")["minItems"])
			require.EqualValues(t, 1024, prop("room_no_reply", "reason")["maxLength"])
			limit := prop("room_history", "limit")
			require.Equal(t, "integer", limit["type"])
			require.EqualValues(t, 1, limit["minimum"])
			require.EqualValues(t, 100, limit["maximum"])
			require.EqualValues(t, 20, limit["default"])
			require.ElementsMatch(t, []any{"role", "agent", "instructions"}, schemas["delegate"]["required"])
			require.ElementsMatch(t, []any{"review", "test", "research", "security", "integration", "developer", "coordinator"}, prop("delegate", "role")["enum"])
			require.ElementsMatch(t, []any{"review", "test", "custom"}, prop("delegate", "contract")["enum"])
			require.Equal(t, "object", prop("delegate", "schema")["type"], "raw JSON is an object, not a byte array")
			require.EqualValues(t, 32768, prop("delegate", "instructions")["maxLength"])
			require.Equal(t, "integer", prop("delegate", "max_attempts")["type"])
			require.ElementsMatch(t, []any{"delegation", "result"}, schemas["submit_result"]["required"])
			require.Equal(t, "object", prop("submit_result", "result")["type"])
			require.ElementsMatch(t, []any{"delegation"}, schemas["delegation_status"]["required"])
			for _, tool := range res.Tools {
				if tool.Name == "submit_result" {
					raw, err := json.Marshal(tool.OutputSchema)
					require.NoError(t, err)
					require.Contains(t, string(raw), `"result":{"description":"The validated result, once submitted.","type":"object"}`)
				}
			}
		})
	}
}

func TestServer_CallTools(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tool   string
		args   any
		method string
		in     any
		want   any // the structured content
	}{
		{tool: "room_reply", args: map[string]any{"text": "done", "mentions": []string{"ada"}},
			method: "Reply", in: mcp.ReplyInput{Text: "done", Mentions: []string{"ada"}}, want: staged("reply")},
		{tool: "room_reply", args: map[string]any{"text": "done"},
			method: "Reply", in: mcp.ReplyInput{Text: "done"}, want: staged("reply")},
		{tool: "room_no_reply", args: map[string]any{"reason": "nothing to add"},
			method: "NoReply", in: mcp.NoReplyInput{Reason: "nothing to add"}, want: staged("no_reply")},
		{tool: "room_send", args: map[string]any{"text": "please review", "to": []string{"ada", "p2"}},
			method: "Send", in: mcp.SendInput{Text: "please review", To: []string{"ada", "p2"}}, want: staged("send")},
		{tool: "room_participants", args: map[string]any{},
			method: "Participants", want: mcp.ParticipantsOutput{Participants: participants}},
		{tool: "room_participants", args: nil,
			method: "Participants", want: mcp.ParticipantsOutput{Participants: participants}},
		{tool: "room_history", args: map[string]any{},
			method: "History", in: 20, want: mcp.HistoryOutput{Messages: []mcp.Message{{ID: "m1", SenderID: "p1", SenderName: "Ada", SenderType: "person", Text: "hi", At: "2026-03-01T12:00:00Z"}}}},
		{tool: "room_history", args: map[string]any{"limit": 100},
			method: "History", in: 100, want: mcp.HistoryOutput{Messages: []mcp.Message{{ID: "m1", SenderID: "p1", SenderName: "Ada", SenderType: "person", Text: "hi", At: "2026-03-01T12:00:00Z"}}}},
		{tool: "changeset_capture", args: map[string]any{},
			method: "CaptureChangeSet", want: mcp.ChangeSet{ID: "cs_1", Turn: "turn_1", Files: 2, Paths: []string{"a.go", "b.go"}, PatchBytes: 120}},
		{tool: "delegate", args: map[string]any{"role": "review", "agent": "rev", "instructions": "review it", "change_set": "cs_1"},
			method: "Delegate", in: mcp.DelegateInput{Role: "review", Agent: "rev", Instructions: "review it", ChangeSet: "cs_1"}, want: delegated},
		{tool: "delegate", args: map[string]any{"role": "research", "agent": "rev", "instructions": "find out", "contract": "custom",
			"schema": map[string]any{"type": "object"}, "max_attempts": 2, "commit": strings.Repeat("ab", 20)},
			method: "Delegate", in: mcp.DelegateInput{Role: "research", Agent: "rev", Instructions: "find out", Contract: "custom",
				Schema: json.RawMessage(`{"type":"object"}`), MaxAttempts: new(2), Commit: strings.Repeat("ab", 20)}, want: delegated},
		{tool: "delegation_status", args: map[string]any{"delegation": "del_1"},
			method: "DelegationStatus", in: "del_1", want: func() mcp.Delegation { d := delegated; d.Schema = json.RawMessage(`{"type":"object"}`); return d }()},
		{tool: "submit_result", args: map[string]any{"delegation": "del_1", "result": map[string]any{"verdict": "approve"}},
			method: "SubmitResult", in: mcp.SubmitInput{Delegation: "del_1", Result: json.RawMessage(`{"verdict":"approve"}`)},
			want: func() mcp.Delegation {
				d := delegated
				d.State, d.Result, d.Digest = "submitted", json.RawMessage(`{"verdict":"approve"}`), "abc"
				return d
			}()},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s %v protocol %s", tc.tool, tc.args, p), func(t *testing.T) {
				t.Parallel()
				b := setup(t, mcp.Config{}, nil)
				s := newSession()
				cs := b.connect(t, s, p)
				res := callTool(t, cs, tc.tool, tc.args)
				require.False(t, res.IsError, text(t, res))

				want, err := json.Marshal(tc.want)
				require.NoError(t, err)
				require.JSONEq(t, string(want), text(t, res))
				got, err := json.Marshal(res.StructuredContent)
				require.NoError(t, err)
				require.JSONEq(t, string(want), string(got))

				require.Equal(t, []call{{method: tc.method, session: s, in: tc.in}}, b.actions.snapshot())
			})
		}
	}
}

func TestServer_ActionErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		code string
	}{
		{fmt.Errorf("reply: %w: message is gone", jam.ErrInvalid), "invalid_argument"},
		{fmt.Errorf("reply: %w: no such participant ada", jam.ErrNotFound), "not_found"},
		{fmt.Errorf("reply: %w: already replied", jam.ErrConflict), "conflict"},
		{fmt.Errorf("reply: %w: no turn is running", jam.ErrUnavailable), "unavailable"},
		{fmt.Errorf("send: %w: agents may not post here", jam.ErrPermissionDenied), "permission_denied"},
		{fmt.Errorf("stage: %w", jam.ErrStopping), "unavailable"},
		{fmt.Errorf("insert row: disk I/O error at /secret/path"), "internal"},
	}
	for _, tc := range cases {
		t.Run(tc.code+" "+tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			b := setup(t, mcp.Config{}, &fakeActions{err: tc.err})
			cs := b.connect(t, newSession(), "")
			res := callTool(t, cs, "room_reply", map[string]any{"text": "x"})
			require.True(t, res.IsError)
			got := text(t, res)
			require.True(t, strings.HasPrefix(got, tc.code+": "), got)
			if tc.code == "internal" {
				require.NotContains(t, got, "/secret/path")
				require.Contains(t, b.log.String(), "/secret/path", "the detail is logged")
			} else {
				require.Equal(t, tc.code+": "+tc.err.Error(), got)
			}
		})
	}
}

func TestServer_BadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{Burst: 100}, nil)
	cs := b.connect(t, newSession(), "")
	long := strings.Repeat("a", 65*1024)
	many := make([]string, 33)
	for i := range many {
		many[i] = fmt.Sprintf("p%d", i)
	}
	cases := []struct {
		name  string
		tool  string
		args  any
		field string // named in the message
	}{
		{"empty text", "room_reply", map[string]any{"text": ""}, "text"},
		{"blank text", "room_reply", map[string]any{"text": "  \n"}, "text"},
		{"missing text", "room_reply", map[string]any{}, "text"},
		{"no arguments", "room_reply", nil, "text"},
		{"65 KiB text", "room_reply", map[string]any{"text": long}, "text"},
		{"33 mentions", "room_reply", map[string]any{"text": "x", "mentions": many}, "mentions"},
		{"empty mention", "room_reply", map[string]any{"text": "x", "mentions": []string{""}}, "mentions"},
		{"unknown argument", "room_reply", map[string]any{"text": "x", "room": "r1"}, "room"},
		{"text a number", "room_reply", map[string]any{"text": 7}, "text"},
		{"mentions a string", "room_reply", map[string]any{"text": "x", "mentions": "ada"}, "mentions"},
		{"missing to", "room_send", map[string]any{"text": "x"}, "to"},
		{"empty to", "room_send", map[string]any{"text": "x", "to": []string{}}, "to"},
		{"33 recipients", "room_send", map[string]any{"text": "x", "to": many}, "to"},
		{"65 KiB message", "room_send", map[string]any{"text": long, "to": []string{"ada"}}, "text"},
		{"to a string", "room_send", map[string]any{"text": "x", "to": "ada"}, "to"},
		{"to of numbers", "room_send", map[string]any{"text": "x", "to": []int{1}}, "to"},
		{"missing reason", "room_no_reply", map[string]any{}, "reason"},
		{"long reason", "room_no_reply", map[string]any{"reason": strings.Repeat("r", 1025)}, "reason"},
		{"limit 0", "room_history", map[string]any{"limit": 0}, "limit"},
		{"limit 101", "room_history", map[string]any{"limit": 101}, "limit"},
		{"limit -1", "room_history", map[string]any{"limit": -1}, "limit"},
		{"limit a string", "room_history", map[string]any{"limit": "20"}, "limit"},
		{"limit a fraction", "room_history", map[string]any{"limit": 2.5}, "limit"},
		{"participants with an argument", "room_participants", map[string]any{"session": "sess_x"}, "session"},
		{"capture with an argument", "changeset_capture", map[string]any{"room": "r"}, "room"},
		{"delegate without a role", "delegate", map[string]any{"agent": "rev", "instructions": "x"}, "role"},
		{"delegate an unknown role", "delegate", map[string]any{"role": "judge", "agent": "rev", "instructions": "x"}, "role"},
		{"delegate to nobody", "delegate", map[string]any{"role": "review", "agent": " ", "instructions": "x"}, "agent"},
		{"delegate without instructions", "delegate", map[string]any{"role": "review", "agent": "rev"}, "instructions"},
		{"delegate 33 KiB of instructions", "delegate", map[string]any{"role": "review", "agent": "rev", "instructions": strings.Repeat("i", 33<<10)}, "instructions"},
		{"delegate a short commit", "delegate", map[string]any{"role": "review", "agent": "rev", "instructions": "x", "commit": "abc123"}, "commit"},
		{"delegate an unknown contract", "delegate", map[string]any{"role": "review", "agent": "rev", "instructions": "x", "contract": "vibes"}, "contract"},
		{"delegate custom without a schema", "delegate", map[string]any{"role": "research", "agent": "rev", "instructions": "x", "contract": "custom"}, "schema"},
		{"delegate a schema that is no object", "delegate", map[string]any{"role": "research", "agent": "rev", "instructions": "x", "contract": "custom", "schema": []int{1}}, "schema"},
		{"delegate a schema without custom", "delegate", map[string]any{"role": "review", "agent": "rev", "instructions": "x", "schema": map[string]any{}}, "schema"},
		{"delegate 11 attempts", "delegate", map[string]any{"role": "review", "agent": "rev", "instructions": "x", "max_attempts": 11}, "max_attempts"},
		{"status without an id", "delegation_status", map[string]any{}, "delegation"},
		{"submit without a result", "submit_result", map[string]any{"delegation": "del_1"}, "result"},
		{"submit a string", "submit_result", map[string]any{"delegation": "del_1", "result": "approve"}, "result"},
		{"submit null", "submit_result", map[string]any{"delegation": "del_1", "result": nil}, "result"},
		{"submit without a delegation", "submit_result", map[string]any{"result": map[string]any{}}, "delegation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := callTool(t, cs, tc.tool, tc.args)
			require.True(t, res.IsError)
			got := text(t, res)
			require.True(t, strings.HasPrefix(got, "invalid_argument: "+tc.field+": "), got)
			require.Less(t, len(got), 400, "the message is short")
		})
	}
	require.Empty(t, b.actions.snapshot(), "Actions is not called for bad input")
}

// post sends a raw initialize request.
func post(t *testing.T, url string, headers map[string]string, body io.Reader) *http.Response {
	t.Helper()
	if body == nil {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := httpClient(t, nil).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func errorBody(t *testing.T, resp *http.Response) (code, msg string) {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Error.Code, body.Error.Message
}

func TestServer_Unauthenticated(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{}, nil)
	s := newSession()
	entry, err := b.srv.Grant(s)
	require.NoError(t, err)
	token := strings.TrimPrefix(entry.Headers["Authorization"], "Bearer ")
	other := []byte(token)
	other[0] ^= 1
	cases := []struct {
		name   string
		header string
	}{
		{"absent", ""},
		{"wrong scheme", "Basic " + token},
		{"wrong token", "Bearer " + string(other)},
		{"short token", "Bearer abc"},
		{"empty token", "Bearer "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			resp := post(t, entry.URL, h, nil)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"))
			code, msg := errorBody(t, resp)
			require.Equal(t, "unauthenticated", code)
			require.NotEmpty(t, msg)
			require.NotContains(t, msg, token)
		})
	}
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		resp := post(t, entry.URL, entry.Headers, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestServer_Revoke(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{}, nil)
	s := newSession()
	cs := b.connect(t, s, "2025-06-18")
	require.False(t, callTool(t, cs, "room_participants", nil).IsError)
	entry, err := b.srv.Grant(s)
	require.NoError(t, err)

	b.srv.Revoke(s)
	resp := post(t, entry.URL, entry.Headers, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	code, _ := errorBody(t, resp)
	require.Equal(t, "unauthenticated", code)
	_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "room_participants"})
	require.Error(t, err, "the connected client is refused too")

	again, err := b.srv.Grant(s)
	require.NoError(t, err)
	require.NotEqual(t, entry.Headers["Authorization"], again.Headers["Authorization"], "a grant after Revoke is a new token")
	require.False(t, callTool(t, connectEntry(t, again, ""), "room_participants", nil).IsError)
}

func TestServer_Grant(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{MaxSessions: 2}, nil)
	s1, s2 := newSession(), newSession()
	e1, err := b.srv.Grant(s1)
	require.NoError(t, err)
	require.Equal(t, "jam", e1.Name)
	require.Equal(t, b.srv.URL(), e1.URL)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/mcp$`, e1.URL)
	require.Regexp(t, `^Bearer [A-Za-z0-9_-]{43}$`, e1.Headers["Authorization"])
	require.Len(t, e1.Headers, 1)
	require.Equal(t, []string{e1.Headers["Authorization"]}, e1.Secrets())

	same, err := b.srv.Grant(s1)
	require.NoError(t, err)
	require.Equal(t, e1, same, "Grant again returns the same entry")

	e2, err := b.srv.Grant(s2)
	require.NoError(t, err)
	require.NotEqual(t, e1.Headers, e2.Headers)

	_, err = b.srv.Grant(newSession())
	require.ErrorIs(t, err, jam.ErrUnavailable, "MaxSessions")
	b.srv.Revoke(s2)
	_, err = b.srv.Grant(newSession())
	require.NoError(t, err, "a revoked grant frees its place")

	_, err = b.srv.Grant("sess_nope")
	require.ErrorIs(t, err, jam.ErrInvalid)

	require.False(t, callTool(t, connectEntry(t, e1, ""), "room_reply", map[string]any{"text": "secret words"}).IsError)
	logs := b.log.String()
	require.Contains(t, logs, "tool=room_reply")
	require.Contains(t, logs, string(s1))
	require.NotContains(t, logs, strings.TrimPrefix(e1.Headers["Authorization"], "Bearer "), "no token in the log")
	require.NotContains(t, logs, "secret words", "no text in the log")
}

func TestServer_SessionsIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{}, nil)
	s1, s2 := newSession(), newSession()
	c1, c2 := b.connect(t, s1, ""), b.connect(t, s2, "2025-06-18")
	require.False(t, callTool(t, c1, "room_reply", map[string]any{"text": "one"}).IsError)
	require.False(t, callTool(t, c2, "room_reply", map[string]any{"text": "two"}).IsError)
	require.False(t, callTool(t, c1, "room_participants", nil).IsError)
	require.Equal(t, []call{
		{method: "Reply", session: s1, in: mcp.ReplyInput{Text: "one"}},
		{method: "Reply", session: s2, in: mcp.ReplyInput{Text: "two"}},
		{method: "Participants", session: s1},
	}, b.actions.snapshot())
}

func TestServer_Flood(t *testing.T) {
	t.Parallel()
	actions := &fakeActions{gate: make(chan struct{})}
	b := setup(t, mcp.Config{}, actions)
	flooder := b.connect(t, newSession(), "")
	const n = 200
	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	results := make(chan outcome, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := flooder.CallTool(context.Background(), &sdk.CallToolParams{Name: "room_participants"})
			results <- outcome{res, err}
		})
	}
	// Every call that is not inside Actions is refused at once; only the
	// MaxConcurrent inside wait for the gate.
	var ok, limited int
	for limited < n-mcp.DefaultMaxConcurrent {
		o := <-results
		require.NoError(t, o.err)
		require.True(t, o.res.IsError)
		require.True(t, strings.HasPrefix(text(t, o.res), "rate_limited: "), text(t, o.res))
		limited++
	}

	// Another session is unaffected by the flood.
	calm := b.connect(t, newSession(), "")
	quiet := make(chan *sdk.CallToolResult, 1)
	wg.Go(func() {
		res, err := calm.CallTool(context.Background(), &sdk.CallToolParams{Name: "room_history"})
		if err == nil {
			quiet <- res
		}
		close(quiet)
	})
	close(actions.gate)
	for range mcp.DefaultMaxConcurrent {
		o := <-results
		require.NoError(t, o.err)
		require.False(t, o.res.IsError, text(t, o.res))
		ok++
	}
	res, got := <-quiet
	require.True(t, got)
	require.False(t, res.IsError, text(t, res))
	wg.Wait()

	require.Equal(t, mcp.DefaultMaxConcurrent, ok)
	actions.mu.Lock()
	defer actions.mu.Unlock()
	require.LessOrEqual(t, actions.maxInside, mcp.DefaultMaxConcurrent+1, "the flooder's slots and the calm session's call")
}

func TestServer_Guard(t *testing.T) {
	t.Parallel()
	b := setup(t, mcp.Config{MaxBodyBytes: 64 << 10, MaxTextBytes: 1 << 10}, nil)
	entry, err := b.srv.Grant(newSession())
	require.NoError(t, err)
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Authorization": entry.Headers["Authorization"]}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 65<<10) + `"}}`
	cases := []struct {
		name    string
		url     string
		method  string
		headers map[string]string
		body    io.Reader
		status  int
		code    string
	}{
		{name: "host not loopback", headers: with("Host", "evil.example:80"), status: 403, code: "permission_denied"},
		{name: "host rebinding to the port", headers: with("Host", "attacker.test:"+port(t, entry.URL)), status: 403, code: "permission_denied"},
		{name: "origin", headers: with("Origin", "http://127.0.0.1:1234"), status: 403, code: "permission_denied"},
		{name: "origin null", headers: with("Origin", "null"), status: 403, code: "permission_denied"},
		{name: "other path", url: strings.TrimSuffix(entry.URL, "/mcp") + "/other", headers: with(), status: 404, code: "not_found"},
		{name: "PUT", method: http.MethodPut, headers: with(), status: 405, code: "method_not_allowed"},
		{name: "body over the limit", headers: with(), body: strings.NewReader(big), status: 413, code: "payload_too_large"},
		{name: "localhost host", headers: with("Host", "localhost"), status: 200},
		{name: "ipv6 loopback host", headers: with("Host", "[::1]:9"), status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := entry.URL
			if tc.url != "" {
				url = tc.url
			}
			var resp *http.Response
			if tc.method != "" {
				req, err := http.NewRequestWithContext(t.Context(), tc.method, url, strings.NewReader("{}"))
				require.NoError(t, err)
				for k, v := range tc.headers {
					req.Header.Set(k, v)
				}
				resp, err = httpClient(t, nil).Do(req)
				require.NoError(t, err)
				t.Cleanup(func() { resp.Body.Close() })
			} else {
				resp = post(t, url, tc.headers, tc.body)
			}
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.code != "" {
				code, _ := errorBody(t, resp)
				require.Equal(t, tc.code, code)
			}
		})
	}
	t.Run("chunked body over the limit", func(t *testing.T) {
		t.Parallel()
		// A body without a length is cut as it is read.
		resp := post(t, entry.URL, with(), io.MultiReader(strings.NewReader(big)))
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	})
	t.Run("GET is not served by a stateless server", func(t *testing.T) {
		t.Parallel()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, entry.URL, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", entry.Headers["Authorization"])
		req.Header.Set("Accept", "text/event-stream")
		resp, err := httpClient(t, nil).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
}

func TestServer_Close(t *testing.T) {
	t.Parallel()
	actions := &fakeActions{gate: make(chan struct{}), entered: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	srv, err := mcp.New(mcp.Config{Actions: actions, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, srv.Listen("127.0.0.1:0"))
	cs := (&testBundle{srv: srv, actions: actions}).connect(t, newSession(), "")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "room_participants"})
		done <- err
	}()
	select {
	case <-actions.entered:
	case err := <-done:
		t.Fatalf("call ended before it entered Actions: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, srv.Close(ctx), context.Canceled, "the call did not finish in time")
	require.Error(t, <-done, "the client's call is cut off")
	require.ErrorIs(t, <-actions.cancelled, jam.ErrStopping, "Close cancels the calls inside Actions")
	require.NoError(t, srv.Close(context.Background()), "Close twice")
	_, err = srv.Grant(newSession())
	require.ErrorIs(t, err, jam.ErrUnavailable)
	require.Error(t, srv.Listen(""))
}

func TestServer_Listen(t *testing.T) {
	t.Parallel()
	srv, err := mcp.New(mcp.Config{Actions: &fakeActions{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, err = srv.Grant(newSession())
	require.ErrorIs(t, err, jam.ErrUnavailable, "no URL before Listen")
	require.ErrorIs(t, srv.Listen("0.0.0.0:0"), jam.ErrInvalid)
	require.ErrorIs(t, srv.Listen("localhost:0"), jam.ErrInvalid)
	require.NoError(t, srv.Listen("127.0.0.1:0"))
	require.Error(t, srv.Listen("127.0.0.1:0"), "twice")
	require.NoError(t, srv.Close(context.Background()))

	_, err = mcp.New(mcp.Config{Logger: slog.New(slog.DiscardHandler)})
	require.Error(t, err, "actions are required")
	_, err = mcp.New(mcp.Config{Actions: &fakeActions{}, Logger: slog.New(slog.DiscardHandler), MaxConcurrent: -1})
	require.Error(t, err)
}

func port(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Port()
}

func newLoopbackListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// TestServer_Handler serves the handler from a listener of the caller's
// own, with Config.URL.
func TestServer_Handler(t *testing.T) {
	t.Parallel()
	ln := newLoopbackListener(t)
	srv, err := mcp.New(mcp.Config{Actions: &fakeActions{}, Logger: slog.New(slog.DiscardHandler), URL: "http://" + ln.Addr().String() + mcp.Path})
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler()}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() {
		require.NoError(t, hs.Shutdown(context.Background()))
		wg.Wait()
		require.NoError(t, srv.Close(context.Background()))
	})
	entry, err := srv.Grant(newSession())
	require.NoError(t, err)
	require.False(t, callTool(t, connectEntry(t, entry, ""), "room_participants", nil).IsError)
}
