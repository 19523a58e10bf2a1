package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// call sends one request over the bundle's socket and returns the status
// and the body.
func call(t *testing.T, b *testBundle, method, path, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://jamd"+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.unix.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(raw)
}

var (
	created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	acct    = wire.Account{ID: "acc1", Profile: "default", BandURL: "https://band.example", UserID: "u1", Handle: "ann", Created: created}
	agent   = wire.Agent{Peer: "default/alice", Name: "alice", AgentID: "a1", Handle: "alice", Account: "default", Bindings: []wire.Binding{}, Queued: 2, State: "up"}
	room    = wire.Room{ID: "r1", Title: "planning", Account: "default"}
	binding = wire.Binding{ID: "b1", Peer: "default/alice", Room: "r1", Alias: "main", SessionID: "s1", Mode: "attached", Created: created, Moved: 1}
	message = wire.InboxMessage{ID: "m1", Peer: "default/alice", Room: "r1", SenderID: "u1", SenderName: "ann", Content: "hi", State: "queued", ReceivedAt: created}
)

func TestMessaging_routes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		method     string
		path       string
		body       string
		backend    func(t *testing.T) fakeBackend
		wantStatus int
		wantBody   string
	}{
		{
			name: "list accounts", method: "GET", path: "/v1/accounts",
			backend: func(*testing.T) fakeBackend {
				return fakeBackend{AccountsFunc: func(context.Context) ([]wire.Account, error) { return []wire.Account{acct}, nil }}
			},
			wantStatus: 200,
			wantBody:   `{"accounts":[{"id":"acc1","profile":"default","band_url":"https://band.example","user_id":"u1","handle":"ann","created_at":"2026-01-02T03:04:05Z"}]}`,
		},
		{
			name: "no accounts is an empty list", method: "GET", path: "/v1/accounts",
			backend: func(*testing.T) fakeBackend {
				return fakeBackend{AccountsFunc: func(context.Context) ([]wire.Account, error) { return nil, nil }}
			},
			wantStatus: 200, wantBody: `{"accounts":[]}`,
		},
		{
			name: "add account", method: "POST", path: "/v1/accounts",
			body: `{"profile":"work","band_url":"https://band.example","key":"band_u_secret"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{AccountAddFunc: func(_ context.Context, r wire.AccountAddRequest) (wire.Account, error) {
					assert.Equal(t, wire.AccountAddRequest{Profile: "work", BandURL: "https://band.example", Key: "band_u_secret"}, r)
					return acct, nil
				}}
			},
			wantStatus: 201,
			wantBody:   `{"id":"acc1","profile":"default","band_url":"https://band.example","user_id":"u1","handle":"ann","created_at":"2026-01-02T03:04:05Z"}`,
		},
		{
			name: "list agents", method: "GET", path: "/v1/agents",
			backend: func(*testing.T) fakeBackend {
				return fakeBackend{AgentsFunc: func(context.Context) ([]wire.Agent, error) { return []wire.Agent{agent}, nil }}
			},
			wantStatus: 200,
			wantBody:   `{"agents":[{"peer":"default/alice","name":"alice","agent_id":"a1","handle":"alice","account":"default","bindings":[],"queued":2,"unrouted":0,"state":"up"}]}`,
		},
		{
			name: "add agent", method: "POST", path: "/v1/agents",
			body: `{"name":"alice","description":"helper","account":"default"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{AgentAddFunc: func(_ context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
					assert.Equal(t, wire.AgentAddRequest{Name: "alice", Description: "helper", Account: "default"}, r)
					return agent, nil
				}}
			},
			wantStatus: 201,
			wantBody:   `{"peer":"default/alice","name":"alice","agent_id":"a1","handle":"alice","account":"default","bindings":[],"queued":2,"unrouted":0,"state":"up"}`,
		},
		{
			name: "list rooms of an account", method: "GET", path: "/v1/rooms?account=work",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomsFunc: func(_ context.Context, account string) ([]wire.Room, error) {
					assert.Equal(t, "work", account)
					return []wire.Room{room}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"rooms":[{"id":"r1","title":"planning","account":"default"}]}`,
		},
		{
			name: "list rooms of every account", method: "GET", path: "/v1/rooms",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomsFunc: func(_ context.Context, account string) ([]wire.Room, error) {
					assert.Empty(t, account)
					return nil, nil
				}}
			},
			wantStatus: 200, wantBody: `{"rooms":[]}`,
		},
		{
			name: "create room", method: "POST", path: "/v1/rooms",
			body: `{"title":"planning","agents":["alice","default/bob"]}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomCreateFunc: func(_ context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
					assert.Equal(t, wire.RoomCreateRequest{Title: "planning", Agents: []string{"alice", "default/bob"}}, r)
					return room, nil
				}}
			},
			wantStatus: 201, wantBody: `{"id":"r1","title":"planning","account":"default"}`,
		},
		{
			name: "add agent to room", method: "POST", path: "/v1/rooms/r1/agents",
			body: `{"agent":"alice"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{RoomAddFunc: func(_ context.Context, room string, r wire.RoomAddRequest) error {
					assert.Equal(t, "r1", room)
					assert.Equal(t, "alice", r.Agent)
					return nil
				}}
			},
			wantStatus: 200, wantBody: `{"ok":true}`,
		},
		{
			name: "bind", method: "POST", path: "/v1/bindings",
			body: `{"agent":"alice","room":"r1","alias":"main"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{BindFunc: func(_ context.Context, r wire.BindRequest) (wire.Binding, error) {
					assert.Equal(t, wire.BindRequest{Agent: "alice", Room: "r1", Alias: "main"}, r)
					return binding, nil
				}}
			},
			wantStatus: 201,
			wantBody:   `{"id":"b1","peer":"default/alice","room":"r1","alias":"main","session_id":"s1","mode":"attached","created_at":"2026-01-02T03:04:05Z","moved":1}`,
		},
		{
			name: "unbind", method: "DELETE", path: "/v1/bindings/b1",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{UnbindFunc: func(_ context.Context, id string) error {
					assert.Equal(t, "b1", id)
					return nil
				}}
			},
			wantStatus: 200, wantBody: `{"ok":true}`,
		},
		{
			name: "inbox with filters", method: "GET", path: "/v1/inbox?agent=alice&room=r1&unrouted=true&limit=7&after=12",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{InboxFunc: func(_ context.Context, q wire.InboxQuery) (wire.Inbox, error) {
					assert.Equal(t, wire.InboxQuery{Agent: "alice", Room: "r1", Unrouted: true, Limit: 7, After: "12"}, q)
					return wire.Inbox{Messages: []wire.InboxMessage{message}, More: true, NextCursor: "19"}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"messages":[{"id":"m1","peer":"default/alice","room":"r1","sender_id":"u1","sender_name":"ann","content":"hi","addressed_to_user":false,"state":"queued","received_at":"2026-01-02T03:04:05Z"}],"more":true,"next_cursor":"19"}`,
		},

		{
			name: "empty inbox", method: "GET", path: "/v1/inbox",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{InboxFunc: func(_ context.Context, q wire.InboxQuery) (wire.Inbox, error) {
					assert.Equal(t, wire.InboxQuery{}, q)
					return wire.Inbox{}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"messages":[]}`,
		},
		{
			name: "wait finds a message", method: "POST", path: "/v1/waitInbox",
			body: `{"agent":"alice","room":"r1","timeout_ms":5000}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{WaitInboxFunc: func(_ context.Context, r wire.WaitRequest) (wire.Inbox, error) {
					assert.Equal(t, wire.WaitRequest{Agent: "alice", Room: "r1", TimeoutMS: 5000}, r)
					return wire.Inbox{Messages: []wire.InboxMessage{message}}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"messages":[{"id":"m1","peer":"default/alice","room":"r1","sender_id":"u1","sender_name":"ann","content":"hi","addressed_to_user":false,"state":"queued","received_at":"2026-01-02T03:04:05Z"}]}`,
		},
		{
			name: "reply", method: "POST", path: "/v1/messages/m1/reply",
			body: `{"agent":"alice","text":"done","mentions":["ann"]}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{ReplyFunc: func(_ context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error) {
					assert.Equal(t, "m1", msg)
					assert.Equal(t, wire.ReplyRequest{Agent: "alice", Text: "done", Mentions: []string{"ann"}}, r)
					return wire.ReplyResult{Posted: []string{"m2"}}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"posted":["m2"],"mentions":[]}`,
		},
		{
			name: "ack", method: "POST", path: "/v1/messages/m1/ack",
			body: `{"agent":"alice"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{AckFunc: func(_ context.Context, msg string, r wire.AckRequest) error {
					assert.Equal(t, "m1", msg)
					assert.Equal(t, "alice", r.Agent)
					return nil
				}}
			},
			wantStatus: 200, wantBody: `{"ok":true}`,
		},
		{
			name: "ack without a body, escaped id", method: "POST", path: "/v1/messages/m%2F1/ack",
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{AckFunc: func(_ context.Context, msg string, r wire.AckRequest) error {
					assert.Equal(t, "m/1", msg)
					assert.Empty(t, r.Agent)
					return nil
				}}
			},
			wantStatus: 200, wantBody: `{"ok":true}`,
		},
		{
			name: "send", method: "POST", path: "/v1/send",
			body: `{"agent":"alice","room":"r1","text":"hello","recipients":["bob"]}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{SendFunc: func(_ context.Context, r wire.SendRequest) (wire.SendResult, error) {
					assert.Equal(t, wire.SendRequest{Agent: "alice", Room: "r1", Text: "hello", Recipients: []string{"bob"}}, r)
					return wire.SendResult{ID: "m9", Body: "@bob hello", Mentions: []string{"bob"}, Warnings: []string{"bob is not in the room"}}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"id":"m9","body":"@bob hello","mentions":["bob"],"warnings":["bob is not in the room"]}`,
		},
		{
			name: "directed send", method: "POST", path: "/v1/send",
			body: `{"room":"r1","text":"@carol?","recipients":["bob"],"directed":true}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{SendFunc: func(_ context.Context, r wire.SendRequest) (wire.SendResult, error) {
					assert.Equal(t, wire.SendRequest{Room: "r1", Text: "@carol?", Recipients: []string{"bob"}, Directed: true}, r)
					return wire.SendResult{ID: "m9", Body: "@bob @carol?", Mentions: []string{"bob"}}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"id":"m9","body":"@bob @carol?","mentions":["bob"]}`,
		},
		{
			name: "notice", method: "POST", path: "/v1/notices",
			body: `{"agent":"alice","room":"r1","text":"heads up"}`,
			backend: func(t *testing.T) fakeBackend {
				return fakeBackend{NoticeFunc: func(_ context.Context, r wire.NoticeRequest) (wire.NoticeResult, error) {
					assert.Equal(t, wire.NoticeRequest{Agent: "alice", Room: "r1", Text: "heads up"}, r)
					return wire.NoticeResult{ID: "jam-notice:msg_x"}, nil
				}}
			},
			wantStatus: 200, wantBody: `{"id":"jam-notice:msg_x"}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.backend(t), "")
			status, hdr, body := call(t, b, tc.method, tc.path, tc.body)
			require.Equal(t, tc.wantStatus, status, body)
			require.Equal(t, "application/json", hdr.Get("Content-Type"))
			require.JSONEq(t, tc.wantBody, body)
		})
	}
}

func TestMessaging_invalidInput(t *testing.T) {
	t.Parallel()
	// No backend method is set: a request that reached the backend would
	// answer not_implemented, not invalid_argument.
	b := setup(t, fakeBackend{}, "")
	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		wantMsg string
	}{
		{name: "not json", method: "POST", path: "/v1/accounts", body: `band`, wantMsg: "request body: invalid character"},
		{name: "unknown field", method: "POST", path: "/v1/agents", body: `{"name":"a","nmae":"b"}`, wantMsg: `unknown field "nmae"`},
		{name: "empty body", method: "POST", path: "/v1/send", wantMsg: "request body: EOF"},
		{name: "account without url", method: "POST", path: "/v1/accounts", body: `{"key":"k"}`, wantMsg: "band_url is required"},
		{name: "account without key", method: "POST", path: "/v1/accounts", body: `{"band_url":"https://b"}`, wantMsg: "key is required"},
		{name: "agent without name", method: "POST", path: "/v1/agents", body: `{"name":"  "}`, wantMsg: "name is required"},
		{name: "room without title", method: "POST", path: "/v1/rooms", body: `{"title":""}`, wantMsg: "title is required"},
		{name: "room with blank agent", method: "POST", path: "/v1/rooms", body: `{"title":"t","agents":["a",""]}`, wantMsg: "agents[1] is empty"},
		{name: "room add without agent", method: "POST", path: "/v1/rooms/r1/agents", body: `{}`, wantMsg: "agent is required"},
		{name: "bind without agent", method: "POST", path: "/v1/bindings", body: `{"room":"r1"}`, wantMsg: "agent is required"},
		{name: "bind without room", method: "POST", path: "/v1/bindings", body: `{"agent":"a"}`, wantMsg: "room is required"},
		{name: "reply without text", method: "POST", path: "/v1/messages/m1/reply", body: `{"agent":"a"}`, wantMsg: "text is required"},
		{name: "reply with blank mention", method: "POST", path: "/v1/messages/m1/reply", body: `{"text":"t","mentions":[" "]}`, wantMsg: "mentions[0] is empty"},
		{name: "ack with unknown field", method: "POST", path: "/v1/messages/m1/ack", body: `{"agnet":"a"}`, wantMsg: `unknown field "agnet"`},
		{name: "send without room", method: "POST", path: "/v1/send", body: `{"text":"t"}`, wantMsg: "room is required"},
		{name: "send without text", method: "POST", path: "/v1/send", body: `{"room":"r1"}`, wantMsg: "text is required"},
		{name: "send with blank recipient", method: "POST", path: "/v1/send", body: `{"room":"r1","text":"t","recipients":[""]}`, wantMsg: "recipients[0] is empty"},
		{name: "notice without text", method: "POST", path: "/v1/notices", body: `{"room":"r1"}`, wantMsg: "text is required"},
		{name: "notice with an unknown field", method: "POST", path: "/v1/notices", body: `{"room":"r1","text":"t","to":"x"}`, wantMsg: "unknown field"},
		{name: "unknown query parameter", method: "GET", path: "/v1/inbox?agnet=a", wantMsg: `unknown query parameter "agnet" (known: agent, room, unrouted, limit, after)`},
		{name: "inbox cursor not a number", method: "GET", path: "/v1/inbox?after=abc", wantMsg: "after=abc is not a cursor"},
		{name: "inbox cursor negative", method: "GET", path: "/v1/inbox?after=-3", wantMsg: "after=-3 is not a cursor"},
		{name: "wait cursor not a number", method: "POST", path: "/v1/waitInbox", body: `{"after":"x1"}`, wantMsg: `after "x1" is not a cursor`},
		{name: "inbox limit over the bound", method: "GET", path: "/v1/inbox?limit=1001", wantMsg: "limit=1001 is not a number from 1 to 1000"},
		{name: "inbox limit zero", method: "GET", path: "/v1/inbox?limit=0", wantMsg: "limit=0 is not a number from 1 to 1000"},
		{name: "inbox limit not a number", method: "GET", path: "/v1/inbox?limit=ten", wantMsg: "limit=ten is not a number"},
		{name: "wait limit over the bound", method: "POST", path: "/v1/waitInbox", body: `{"limit":1001}`, wantMsg: "limit 1001 is outside 1 to 1000"},
		{name: "wait limit negative", method: "POST", path: "/v1/waitInbox", body: `{"limit":-1}`, wantMsg: "limit -1 is outside"},
		{name: "query on a route without", method: "GET", path: "/v1/agents?x=1", wantMsg: "this route takes none"},
		{name: "repeated query parameter", method: "GET", path: "/v1/rooms?account=a&account=b", wantMsg: `"account" is given 2 times`},
		{name: "bad unrouted", method: "GET", path: "/v1/inbox?unrouted=maybe", wantMsg: "unrouted=maybe is not true or false"},
		{name: "bad query encoding", method: "GET", path: "/v1/inbox?agent=%zz", wantMsg: "query:"},
		{name: "negative timeout", method: "POST", path: "/v1/waitInbox", body: `{"timeout_ms":-1}`, wantMsg: "timeout_ms -1 is outside 0 to 600000"},
		{name: "timeout over ten minutes", method: "POST", path: "/v1/waitInbox", body: `{"timeout_ms":600001}`, wantMsg: "timeout_ms 600001 is outside"},
		{name: "wait with unknown field", method: "POST", path: "/v1/waitInbox", body: `{"timeout":5}`, wantMsg: `unknown field "timeout"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, _, body := call(t, b, tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, status, body)
			var eb wire.ErrorBody
			require.NoError(t, jsonUnmarshal(body, &eb))
			require.Equal(t, wire.CodeInvalidArgument, eb.Error.Code)
			require.Contains(t, eb.Error.Message, tc.wantMsg)
		})
	}
}

func TestMessaging_routingErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, fakeBackend{}, "")
	cases := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantCode   wire.Code
		wantAllow  string
	}{
		{name: "unknown route", method: "GET", path: "/v1/inboxes", wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "unknown message verb", method: "POST", path: "/v1/messages/m1/forward", wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "missing binding id", method: "DELETE", path: "/v1/bindings/", wantStatus: 404, wantCode: wire.CodeNotFound},
		{name: "delete accounts", method: "DELETE", path: "/v1/accounts", wantStatus: 405, wantCode: wire.CodeMethodNotAllowed, wantAllow: "GET, HEAD, POST"},
		{name: "get send", method: "GET", path: "/v1/send", wantStatus: 405, wantCode: wire.CodeMethodNotAllowed, wantAllow: "POST"},
		{name: "get waitInbox", method: "GET", path: "/v1/waitInbox", wantStatus: 405, wantCode: wire.CodeMethodNotAllowed, wantAllow: "POST"},
		{name: "post inbox", method: "POST", path: "/v1/inbox", wantStatus: 405, wantCode: wire.CodeMethodNotAllowed, wantAllow: "GET, HEAD"},
		{name: "get binding", method: "GET", path: "/v1/bindings/b1", wantStatus: 405, wantCode: wire.CodeMethodNotAllowed, wantAllow: "DELETE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, hdr, body := call(t, b, tc.method, tc.path, "")
			require.Equal(t, tc.wantStatus, status, body)
			require.Equal(t, tc.wantAllow, hdr.Get("Allow"))
			var eb wire.ErrorBody
			require.NoError(t, jsonUnmarshal(body, &eb))
			require.Equal(t, tc.wantCode, eb.Error.Code)
		})
	}
}

func TestMessaging_backendErrorsAreClassified(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		method     string
		path       string
		body       string
		backend    fakeBackend
		wantStatus int
		wantCode   wire.Code
		wantMsg    string
	}{
		{
			name: "unknown agent", method: "POST", path: "/v1/bindings", body: `{"agent":"zed","room":"r1"}`,
			backend: fakeBackend{BindFunc: func(context.Context, wire.BindRequest) (wire.Binding, error) {
				return wire.Binding{}, fmt.Errorf("agent zed: %w", jam.ErrNotFound)
			}},
			wantStatus: 404, wantCode: wire.CodeNotFound, wantMsg: "bind zed to room r1: agent zed: not found",
		},
		{
			name: "unknown binding", method: "DELETE", path: "/v1/bindings/b9",
			backend: fakeBackend{UnbindFunc: func(context.Context, string) error {
				return fmt.Errorf("binding b9: %w", jam.ErrNotFound)
			}},
			wantStatus: 404, wantCode: wire.CodeNotFound, wantMsg: "unbind b9: binding b9: not found",
		},
		{
			name: "duplicate profile", method: "POST", path: "/v1/accounts", body: `{"band_url":"https://b","key":"k"}`,
			backend: fakeBackend{AccountAddFunc: func(context.Context, wire.AccountAddRequest) (wire.Account, error) {
				return wire.Account{}, fmt.Errorf("profile default: %w", jam.ErrAlreadyExists)
			}},
			wantStatus: 409, wantCode: wire.CodeAlreadyExists,
		},
		{
			name: "ambiguous agent", method: "POST", path: "/v1/messages/m1/ack", body: `{}`,
			backend: fakeBackend{AckFunc: func(context.Context, string, wire.AckRequest) error {
				return fmt.Errorf("agent reference alice matches two peers: %w", jam.ErrInvalid)
			}},
			wantStatus: 400, wantCode: wire.CodeInvalidArgument,
		},
		{
			name: "settled twice", method: "POST", path: "/v1/messages/m1/reply", body: `{"text":"t"}`,
			backend: fakeBackend{ReplyFunc: func(context.Context, string, wire.ReplyRequest) (wire.ReplyResult, error) {
				return wire.ReplyResult{}, fmt.Errorf("message m1 is settled: %w", jam.ErrConflict)
			}},
			wantStatus: 409, wantCode: wire.CodeConflict,
		},
		{
			name: "band rejects the key", method: "POST", path: "/v1/agents", body: `{"name":"a"}`,
			backend: fakeBackend{AgentAddFunc: func(context.Context, wire.AgentAddRequest) (wire.Agent, error) {
				return wire.Agent{}, fmt.Errorf("band: %w", jam.ErrUnauthenticated)
			}},
			wantStatus: 401, wantCode: wire.CodeUnauthenticated,
		},
		{
			name: "band down", method: "POST", path: "/v1/send", body: `{"room":"r1","text":"t"}`,
			backend: fakeBackend{SendFunc: func(context.Context, wire.SendRequest) (wire.SendResult, error) {
				return wire.SendResult{}, fmt.Errorf("band: %w", jam.ErrUnavailable)
			}},
			wantStatus: 503, wantCode: wire.CodeUnavailable,
		},
		{
			name: "stopping", method: "GET", path: "/v1/inbox",
			backend: fakeBackend{InboxFunc: func(context.Context, wire.InboxQuery) (wire.Inbox, error) {
				return wire.Inbox{}, jam.ErrStopping
			}},
			wantStatus: 503, wantCode: wire.CodeStopping,
		},
		{
			name: "wait on an unknown agent", method: "POST", path: "/v1/waitInbox", body: `{"agent":"zed"}`,
			backend: fakeBackend{WaitInboxFunc: func(context.Context, wire.WaitRequest) (wire.Inbox, error) {
				return wire.Inbox{}, fmt.Errorf("agent zed: %w", jam.ErrNotFound)
			}},
			wantStatus: 404, wantCode: wire.CodeNotFound,
		},
		{
			name: "internal hides detail", method: "GET", path: "/v1/rooms",
			backend: fakeBackend{RoomsFunc: func(context.Context, string) ([]wire.Room, error) {
				return nil, errors.New("sql: database is locked at /secret/jam.db")
			}},
			wantStatus: 500, wantCode: wire.CodeInternal, wantMsg: "internal error; see the daemon log",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.backend, "")
			status, _, body := call(t, b, tc.method, tc.path, tc.body)
			require.Equal(t, tc.wantStatus, status, body)
			var eb wire.ErrorBody
			require.NoError(t, jsonUnmarshal(body, &eb))
			require.Equal(t, tc.wantCode, eb.Error.Code)
			if tc.wantMsg != "" {
				require.Equal(t, tc.wantMsg, eb.Error.Message)
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// blockUntilDone is a WaitInbox that finds nothing: it returns when its
// context ends, the way the daemon's does.
func blockUntilDone(started chan<- struct{}) func(context.Context, wire.WaitRequest) (wire.Inbox, error) {
	return func(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
		if started != nil {
			close(started)
		}
		<-ctx.Done()
		return wire.Inbox{}, fmt.Errorf("wait: %w", ctx.Err())
	}
}

func TestWaitInbox_deadline(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want time.Duration
	}{
		{name: "zero means the default", body: `{}`, want: wire.DefaultWait},
		{name: "no body means the default", body: ``, want: wire.DefaultWait},
		{name: "explicit", body: `{"timeout_ms":1500}`, want: 1500 * time.Millisecond},
		{name: "the maximum", body: `{"timeout_ms":600000}`, want: wire.MaxWait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			deadlines := make(chan time.Time, 1)
			b := setup(t, fakeBackend{WaitInboxFunc: func(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
				d, ok := ctx.Deadline()
				assert.True(t, ok, "the wait has a deadline")
				deadlines <- d
				return wire.Inbox{Messages: []wire.InboxMessage{message}}, nil
			}}, "")
			before := time.Now()
			status, _, body := call(t, b, "POST", "/v1/waitInbox", tc.body)
			after := time.Now()
			require.Equal(t, 200, status, body)
			d := <-deadlines
			require.False(t, d.Before(before.Add(tc.want)), "deadline %s is before %s", d, before.Add(tc.want))
			require.False(t, d.After(after.Add(tc.want)), "deadline %s is after %s", d, after.Add(tc.want))
		})
	}
}

func TestWaitInbox_timeoutIsAnEmptyAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		wait func(context.Context, wire.WaitRequest) (wire.Inbox, error)
	}{
		{name: "backend returns the context error", wait: blockUntilDone(nil)},
		{name: "backend returns nothing", wait: func(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
			<-ctx.Done()
			return wire.Inbox{}, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fakeBackend{WaitInboxFunc: tc.wait}, "")
			status, _, body := call(t, b, "POST", "/v1/waitInbox", `{"timeout_ms":1}`)
			require.Equal(t, 200, status, body)
			require.JSONEq(t, `{"messages":[]}`, body)
		})
	}
}

// startWith starts a server on a fresh socket with ctx as the daemon's
// context; the caller stops it.
func startWith(t *testing.T, ctx context.Context, backend Backend) (*Server, *http.Client) {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamapi")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	srv, err := New(Config{SocketPath: socket, Logger: slog.New(slog.DiscardHandler)}, backend)
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{Transport: tr}
}

type answer struct {
	status int
	body   string
	err    error
}

// waitAsync posts a ten-minute wait in the background.
func waitAsync(wg *sync.WaitGroup, hc *http.Client) <-chan answer {
	done := make(chan answer, 1)
	wg.Go(func() {
		resp, err := hc.Post("http://jamd/v1/waitInbox", "application/json", strings.NewReader(`{"timeout_ms":600000}`))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		done <- answer{status: resp.StatusCode, body: string(raw), err: err}
	})
	return done
}

func TestWaitInbox_endsWhenTheServerStops(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv, hc := startWith(t, t.Context(), fakeBackend{WaitInboxFunc: blockUntilDone(started)})
	var wg sync.WaitGroup
	defer wg.Wait()
	done := waitAsync(&wg, hc)
	<-started

	// Were the long poll not ended, Shutdown would wait out this bound
	// and Stop would fail.
	stopCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Stop(stopCtx))

	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
	var eb wire.ErrorBody
	require.NoError(t, jsonUnmarshal(a.body, &eb))
	require.Equal(t, wire.CodeStopping, eb.Error.Code)
	require.Equal(t, "wait inbox: stopping", eb.Error.Message)
}

func TestWaitInbox_endsWhenTheDaemonContextEnds(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	daemonCtx, stopDaemon := context.WithCancelCause(t.Context())
	defer stopDaemon(nil)
	srv, hc := startWith(t, daemonCtx, fakeBackend{WaitInboxFunc: blockUntilDone(started)})
	defer func() { require.NoError(t, srv.Stop(context.Background())) }()
	var wg sync.WaitGroup
	defer wg.Wait()
	done := waitAsync(&wg, hc)
	<-started

	stopDaemon(jam.ErrStopping)
	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
	var eb wire.ErrorBody
	require.NoError(t, jsonUnmarshal(a.body, &eb))
	require.Equal(t, wire.CodeStopping, eb.Error.Code)
}

func TestWaitInbox_afterStopIsRefused(t *testing.T) {
	t.Parallel()
	// A wait that slips in while Stop runs sees a cancelled hold at once.
	srv := &Server{cfg: Config{}.withDefaults(), log: slog.New(slog.DiscardHandler)}
	held, stop := context.WithCancelCause(t.Context())
	stop(jam.ErrStopping)
	srv.held, srv.stopHeld = held, stop
	ctx, cancel := srv.holdContext(t.Context(), time.Hour)
	defer cancel()
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), jam.ErrStopping)
}
