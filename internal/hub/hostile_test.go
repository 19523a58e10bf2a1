package hub_test

import (
	"net/http"

	"github.com/jamhq/jam/internal/band/protocol"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostileBodies: every JSON endpoint answers a hostile body with
// Band's envelope and its code, before touching anything: 100k nested
// arrays and invalid UTF-8 are invalid_json (encoding/json would quietly
// turn bad bytes into U+FFFD), an oversize body is payload_too_large.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	room := b.room(a)
	own := agentRoom(b, a)
	routes := []struct{ key, method, path string }{
		{b.owner, http.MethodPut, "/api/v1/me/profile"},
		{b.owner, http.MethodPost, "/api/v1/me/agents/register"},
		{b.owner, http.MethodPost, "/api/v1/me/chats"},
		{b.owner, http.MethodPost, "/api/v1/me/chats/" + room + "/messages"},
		{a.Key, http.MethodPatch, "/api/v1/agent/chats/" + own},
		{a.Key, http.MethodPost, "/api/v1/agent/chats/" + room + "/events"},
		{a.Key, http.MethodPost, "/api/v1/agent/chats/" + room + "/activity"},
	}
	for _, rt := range routes {
		for _, tc := range []struct {
			name   string
			body   string
			status int
			code   string
		}{
			{"nested", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), http.StatusBadRequest, "invalid_json"},
			{"invalid utf-8", "{\"chat\":{\"title\":\"a\xffb\"}}", http.StatusBadRequest, "invalid_json"},
			{"oversize", `{"x":"` + strings.Repeat("x", 1<<20) + `"}`, http.StatusRequestEntityTooLarge, "payload_too_large"},
		} {
			e := b.apiErr(rt.method, rt.path, rt.key, tc.body, tc.status)
			require.Equal(t, tc.code, e.Code, "%s %s: %s", rt.method, rt.path, tc.name)
		}
	}
}

// TestControlCharactersInNames: titles and names are one line of
// printable text; any control character (C0, DEL, C1) is a 422.
func TestControlCharactersInNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.register("Alpha")
	room := agentRoom(b, a)
	for _, bad := range []string{"a\x00b", "a\tb", "a\nb", "\x1b[2Jowned", "a\x7fb", "a\u0085b", "a\u009bb"} {
		e := b.apiErr(http.MethodPost, "/api/v1/me/chats", b.owner, map[string]any{"chat": map[string]any{"title": bad}}, http.StatusUnprocessableEntity)
		require.Equal(t, "validation_error", e.Code, "title %q", bad)
		require.Contains(t, e.Details, "/chat/title")
		e = b.apiErr(http.MethodPatch, "/api/v1/agent/chats/"+room, a.Key, map[string]any{"chat": map[string]any{"title": bad}}, http.StatusUnprocessableEntity)
		require.Contains(t, e.Details, "/chat/title", "rename to %q", bad)
		e = b.apiErr(http.MethodPost, "/api/v1/me/agents/register", b.owner, map[string]any{"agent": map[string]any{"name": "Bot " + bad}}, http.StatusUnprocessableEntity)
		require.Contains(t, e.Details, "/agent/name", "agent name %q", bad)
		e = b.apiErr(http.MethodPut, "/api/v1/me/profile", b.owner, map[string]any{"user": map[string]any{"first_name": bad}}, http.StatusUnprocessableEntity)
		require.Contains(t, e.Details, "/user/first_name", "first name %q", bad)
	}
	// Printable text outside ASCII is fine.
	b.call(http.MethodPost, "/api/v1/me/chats", b.owner, map[string]any{"chat": map[string]any{"title": "Café — 日本 🎉"}}, http.StatusCreated, nil)
}

// agentRoom creates a room the agent owns.
func agentRoom(b *testBundle, a agentInfo) string {
	b.t.Helper()
	var out protocol.Data[protocol.ChatRoom]
	b.call(http.MethodPost, "/api/v1/agent/chats", a.Key, map[string]any{"chat": map[string]any{"title": "own"}}, http.StatusCreated, &out)
	return out.Data.ID
}
