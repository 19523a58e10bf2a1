package bandtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Target is a Band-compatible server under test.
type Target struct {
	// BaseURL is the REST base, e.g. http://127.0.0.1:PORT or
	// https://app.band.ai. The WebSocket URL is derived from it.
	BaseURL string
	// OwnerKey is a user API key (band_u_…) able to register agents and
	// create rooms.
	OwnerKey string
	// Restart, if non-nil, restarts the server between steps (the hub's
	// durability check). It must keep BaseURL valid. Nil for real Band.
	Restart func(t *testing.T)
}

// Identity is a Band user or agent.
type Identity struct {
	ID     string
	Handle string
}

// Agent is an agent the fixture registered, with its key (shown once).
type Agent struct {
	Identity
	Name string
	Key  string
}

// Mention names a participant to mention by id or by handle.
type Mention struct {
	ID     string `json:"id,omitempty"`
	Handle string `json:"handle,omitempty"`
}

// Fixture drives a Target over REST as its owner: it registers agents,
// creates rooms and posts messages. Tests of Band clients use it to set up
// a server; Exercise uses it for every scenario.
type Fixture struct {
	target Target
	owner  *client
	// Owner is the owner's identity, from GET /me/profile.
	Owner Identity
}

// NewFixture returns a fixture for target. Its HTTP connections are closed
// when t ends.
func NewFixture(t *testing.T, target Target) *Fixture {
	t.Helper()
	return newFixture(t, target, nil)
}

func newFixture(t *testing.T, target Target, oas *openAPI) *Fixture {
	t.Helper()
	require.NotEmpty(t, target.BaseURL, "Target.BaseURL")
	require.NotEmpty(t, target.OwnerKey, "Target.OwnerKey")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	f := &Fixture{
		target: target,
		owner: &client{
			base: strings.TrimRight(target.BaseURL, "/"),
			key:  target.OwnerKey,
			hc:   &http.Client{Transport: tr, Timeout: requestTimeout},
			oas:  oas,
		},
	}
	profile := data[struct {
		ID     string `json:"id"`
		Handle string `json:"handle"`
	}](t, f.owner.do(t, http.MethodGet, "/api/v1/me/profile", nil).expect(t, http.StatusOK))
	require.NotEmpty(t, profile.ID, "owner id")
	require.NotEmpty(t, profile.Handle, "owner handle")
	f.Owner = Identity{ID: profile.ID, Handle: profile.Handle}
	return f
}

// URL returns the target's REST base URL without a trailing slash.
func (f *Fixture) URL() string { return f.owner.base }

// SocketURL returns the WebSocket URL for an API key, with vsn=2.0.0 and
// the extra query parameters.
func (f *Fixture) SocketURL(key string, extra url.Values) string {
	q := url.Values{}
	if key != "" {
		q.Set("api_key", key)
	}
	q.Set("vsn", "2.0.0")
	for k, vs := range extra {
		q[k] = vs
	}
	return socketBase(f.owner.base) + "?" + q.Encode()
}

// socketBase turns a REST base into the socket endpoint, without a query.
func socketBase(base string) string {
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + "/api/v1/socket/websocket"
}

// agent returns a REST client acting as a.
func (f *Fixture) agent(a Agent) *client { return f.owner.with(a.Key) }

// RegisterAgent registers an agent under the owner, learns its handle from
// GET /agent/me, and deletes it again (force=true, best effort) when t ends
// so real Band is not littered with test agents.
func (f *Fixture) RegisterAgent(t *testing.T, name string) Agent {
	t.Helper()
	name = "bandtest-" + name + "-" + randomHex(t, 4)
	body := map[string]any{"agent": map[string]any{"name": name, "description": "jam bandtest conformance agent"}}
	reg := data[struct {
		Agent struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			OwnerID string `json:"owner_id"`
		} `json:"agent"`
		Credentials struct {
			APIKey string `json:"api_key"`
		} `json:"credentials"`
	}](t, f.owner.do(t, http.MethodPost, "/api/v1/me/agents/register", body).expect(t, http.StatusCreated))
	require.NotEmpty(t, reg.Agent.ID, "registered agent id")
	require.NotEmpty(t, reg.Credentials.APIKey, "registered agent key")
	require.Equal(t, f.Owner.ID, reg.Agent.OwnerID, "registered agent owner_id")
	a := Agent{Identity: Identity{ID: reg.Agent.ID}, Name: name, Key: reg.Credentials.APIKey}
	t.Cleanup(func() {
		r := f.owner.do(t, http.MethodDelete, "/api/v1/me/agents/"+a.ID+"?force=true", nil)
		if r.Status != http.StatusOK {
			t.Logf("cleanup: deleting agent %s: %s", a.ID, r)
		}
	})
	me := data[struct {
		ID        string `json:"id"`
		Handle    string `json:"handle"`
		OwnerUUID string `json:"owner_uuid"`
	}](t, f.agent(a).do(t, http.MethodGet, "/api/v1/agent/me", nil).expect(t, http.StatusOK))
	require.Equal(t, a.ID, me.ID, "GET /agent/me id")
	require.NotEmpty(t, me.Handle, "GET /agent/me handle")
	require.Equal(t, f.Owner.ID, me.OwnerUUID, "GET /agent/me owner_uuid")
	a.Handle = me.Handle
	return a
}

// CreateRoom creates a room owned by the owner and returns its id.
func (f *Fixture) CreateRoom(t *testing.T, title string) string {
	t.Helper()
	body := map[string]any{"chat": map[string]any{"title": "bandtest " + title}}
	room := data[struct {
		ID string `json:"id"`
	}](t, f.owner.do(t, http.MethodPost, "/api/v1/me/chats", body).expect(t, http.StatusCreated))
	require.NotEmpty(t, room.ID, "room id")
	return room.ID
}

// AddParticipant adds a user or agent to the room as a member.
func (f *Fixture) AddParticipant(t *testing.T, room, id string) {
	t.Helper()
	body := map[string]any{"participant": map[string]any{"participant_id": id, "role": "member"}}
	p := data[participant](t, f.owner.do(t, http.MethodPost, meRoom(room)+"/participants", body).expect(t, http.StatusCreated))
	require.Equal(t, id, p.ID, "added participant id")
}

// Post sends a text message as the owner and returns its id.
func (f *Fixture) Post(t *testing.T, room, content string, mentions ...Mention) string {
	t.Helper()
	return send(t, f.owner, meMessages(room), content, mentions...).ID
}

// send posts a text message and checks the MessageSentResponse.
func send(t *testing.T, c *client, path, content string, mentions ...Mention) messageSent {
	t.Helper()
	body := map[string]any{"message": map[string]any{"content": content, "mentions": mentions}}
	sent := data[messageSent](t, c.do(t, http.MethodPost, path, body).expect(t, http.StatusCreated))
	require.NotEmpty(t, sent.ID, "sent message id")
	require.True(t, sent.Success, "sent message success")
	return sent
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
