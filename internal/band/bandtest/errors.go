package bandtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// oversizedBytes is larger than any JSON body a Band server should take: real
// Band's Phoenix parser stops at 8 MB by default.
const oversizedBytes = 16 << 20

// testErrors checks status codes and the error envelope. One environment
// serves every case: room r holds the owner and agent A; room x holds only
// the owner; agent B is in neither.
func testErrors(t *testing.T, e *env) {
	a := e.RegisterAgent(t, "err-a")
	b := e.RegisterAgent(t, "err-b")
	r := e.CreateRoom(t, "errors")
	e.AddParticipant(t, r, a.ID)
	x := e.CreateRoom(t, "errors-other")
	const missingRoom = "00000000-0000-4000-8000-000000000000"
	owner, agent := e.Owner, e.agent(a)
	msg := func(content string, mentions ...Mention) map[string]any {
		return map[string]any{"message": map[string]any{"content": content, "mentions": mentions}}
	}

	cases := []struct {
		name   string
		c      *client
		method string
		path   string
		body   any
		status int
		code   string // checked when not empty
	}{
		{name: "no key on /agent/me", c: e.owner.with(""), method: "GET", path: "/api/v1/agent/me", status: 401},
		{name: "no key on /me/profile", c: e.owner.with(""), method: "GET", path: "/api/v1/me/profile", status: 401},
		{name: "unknown key", c: e.owner.with("band_a_bandtest_not_a_key"), method: "GET", path: "/api/v1/agent/me", status: 401},
		{name: "agent key on /me/profile", c: agent, method: "GET", path: "/api/v1/me/profile", status: 403},
		{name: "agent key on /me/chats", c: agent, method: "GET", path: "/api/v1/me/chats", status: 403},
		{name: "user key on /agent/me", c: e.owner, method: "GET", path: "/api/v1/agent/me", status: 403},
		{name: "user key on /agent/chats", c: e.owner, method: "GET", path: "/api/v1/agent/chats", status: 403},
		{name: "agent reads a room it is not in", c: agent, method: "GET", path: agentRoom(x), status: 404},
		{name: "agent lists a queue of a room it is not in", c: agent, method: "GET", path: agentMessages(x), status: 404},
		{name: "agent posts to a room it is not in", c: agent, method: "POST", path: agentMessages(x), body: msg("hello", Mention{ID: owner.ID}), status: 404},
		{name: "agent reads a room that does not exist", c: agent, method: "GET", path: agentRoom(missingRoom), status: 404},
		{name: "owner reads a room that does not exist", c: e.owner, method: "GET", path: meRoom(missingRoom), status: 404},
		{name: "mentions missing", c: e.owner, method: "POST", path: meMessages(r), body: map[string]any{"message": map[string]any{"content": "hello"}}, status: 422, code: "mentions_required"},
		{name: "mentions empty", c: e.owner, method: "POST", path: meMessages(r), body: msg("hello"), status: 422, code: "mentions_required"},
		{name: "agent mentions itself", c: agent, method: "POST", path: agentMessages(r), body: msg("hello", Mention{ID: a.ID}), status: 422, code: "cannot_mention_self"},
		{name: "owner mentions itself", c: e.owner, method: "POST", path: meMessages(r), body: msg("hello", Mention{ID: owner.ID}), status: 422, code: "cannot_mention_self"},
		{name: "unknown handle", c: e.owner, method: "POST", path: meMessages(r), body: msg("hello", Mention{Handle: "bandtest-nobody/" + randomHex(t, 4)}), status: 422, code: "handle_not_found"},
		{name: "mentioned agent not in room", c: e.owner, method: "POST", path: meMessages(r), body: msg("hello", Mention{ID: b.ID}), status: 422, code: "mentioned_participant_not_in_room"},
		{name: "blank content", c: e.owner, method: "POST", path: meMessages(r), body: msg("   ", Mention{ID: a.ID}), status: 422, code: "validation_error"},
		{name: "malformed JSON", c: e.owner, method: "POST", path: meMessages(r), body: []byte(`{"message": {"content": "hello", `), status: 400},
		{name: "oversized body", c: e.owner, method: "POST", path: meMessages(r), body: msg(strings.Repeat("x", oversizedBytes), Mention{ID: a.ID}), status: 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := tc.c.do(t, tc.method, tc.path, tc.body)
			if tc.status == http.StatusRequestEntityTooLarge && res.Status != tc.status {
				// Band documents no limit; any client error with the
				// envelope is a refusal.
				require.True(t, res.Status >= 400 && res.Status < 500, "an oversized body must be refused with a 4xx: %s", res)
				res.checkEnvelope(t, "")
				return
			}
			res.expectError(t, tc.status, tc.code)
		})
	}
	t.Run("errors carry distinct request ids", func(t *testing.T) {
		t.Parallel()
		first := e.owner.with("").do(t, "GET", "/api/v1/me/profile", nil)
		second := e.owner.with("").do(t, "GET", "/api/v1/me/profile", nil)
		require.NotEqual(t, requestID(t, first), requestID(t, second), "request_id must identify the request")
	})
}

func requestID(t *testing.T, r response) string {
	t.Helper()
	r.checkEnvelope(t, "")
	var e apiError
	require.NoError(t, json.Unmarshal(r.Body, &e))
	return *e.Error.RequestID
}
