package bandtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requestTimeout bounds one REST call. It is generous because the oversized
// body case uploads megabytes and real Band is far away.
const requestTimeout = 60 * time.Second

// client calls Band's REST API with one API key.
type client struct {
	base string
	key  string
	hc   *http.Client
	oas  *openAPI // nil when the OpenAPI document is absent
}

// response is one REST answer, read in full.
type response struct {
	Method string
	Path   string
	Status int
	Header http.Header
	Body   []byte
}

func (r response) String() string {
	body := string(r.Body)
	if len(body) > 2000 {
		body = body[:2000] + "…"
	}
	return fmt.Sprintf("%s %s → %d %s", r.Method, r.Path, r.Status, body)
}

// with returns a client for the same server and transport with another key.
func (c *client) with(key string) *client {
	cp := *c
	cp.key = key
	return &cp
}

// do sends one request. body is nil (no body), []byte (sent as is) or a
// value marshalled to JSON. Transport errors fail the test; HTTP errors are
// returned for the caller to check. Every response is validated against the
// OpenAPI document when there is one.
func (c *client) do(t *testing.T, method, path string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(js)
	}
	// Cleanups call do too, after t.Context is cancelled.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("X-API-Key", c.key)
	}
	res, err := c.hc.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err, "%s %s: read body", method, path)
	r := response{Method: method, Path: path, Status: res.StatusCode, Header: res.Header, Body: b}
	if c.oas != nil {
		c.oas.checkResponse(t, r)
	}
	return r
}

// expect fails the test unless the response has the wanted status.
func (r response) expect(t *testing.T, status int) response {
	t.Helper()
	require.Equal(t, status, r.Status, "unexpected status: %s", r)
	return r
}

// data decodes the {"data": …} wrapper of a success body.
func data[T any](t *testing.T, r response) T {
	t.Helper()
	var w struct {
		Data *T `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &w), "decode %s", r)
	require.NotNil(t, w.Data, "no data in %s", r)
	return *w.Data
}

// list decodes a {"data": [...], "metadata": {...}} body.
func list[T any](t *testing.T, r response) ([]T, listMeta) {
	t.Helper()
	var w struct {
		Data     *[]T      `json:"data"`
		Metadata *listMeta `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &w), "decode %s", r)
	require.NotNil(t, w.Data, "no data array in %s", r)
	require.NotNil(t, w.Metadata, "no metadata in %s", r)
	return *w.Data, *w.Metadata
}

// apiError is Band's error envelope, decoded strictly enough to tell a
// missing field from an empty one.
type apiError struct {
	Error *struct {
		Code      *string         `json:"code"`
		Message   *string         `json:"message"`
		RequestID *string         `json:"request_id"`
		Details   json.RawMessage `json:"details"`
	} `json:"error"`
}

// expectError checks an error response: the status, the nested envelope
// with a non-empty code, message and request_id, details on 422 (an object
// of JSON pointers to lists of strings), and the code when want names one.
// It returns the code.
func (r response) expectError(t *testing.T, status int, code string) string {
	t.Helper()
	r.expect(t, status)
	return r.checkEnvelope(t, code)
}

func (r response) checkEnvelope(t *testing.T, code string) string {
	t.Helper()
	var e apiError
	require.NoError(t, json.Unmarshal(r.Body, &e), "error body is not JSON: %s", r)
	require.NotNil(t, e.Error, "error body lacks the error object: %s", r)
	require.NotNil(t, e.Error.Code, "error.code missing: %s", r)
	require.NotEmpty(t, *e.Error.Code, "error.code empty: %s", r)
	require.NotNil(t, e.Error.Message, "error.message missing: %s", r)
	require.NotEmpty(t, *e.Error.Message, "error.message empty: %s", r)
	require.NotNil(t, e.Error.RequestID, "error.request_id missing: %s", r)
	require.NotEmpty(t, *e.Error.RequestID, "error.request_id empty: %s", r)
	if r.Status == http.StatusUnprocessableEntity {
		require.NotEmpty(t, e.Error.Details, "error.details is required on 422: %s", r)
		var details map[string][]string
		require.NoError(t, json.Unmarshal(e.Error.Details, &details),
			"error.details must map JSON pointers to lists of strings: %s", r)
		for k := range details {
			require.True(t, k == "" || strings.HasPrefix(k, "/"), "error.details key %q is not a JSON pointer: %s", k, r)
		}
	}
	if code != "" {
		require.Equal(t, code, *e.Error.Code, "error.code: %s", r)
	}
	return *e.Error.Code
}

// listMeta is the cursor metadata of a list.
type listMeta struct {
	HasMore      *bool   `json:"has_more"`
	NextCursor   *string `json:"next_cursor"`
	Limit        int     `json:"limit"`
	StatusFilter *string `json:"status_filter"`
}

// message is a chat message as REST returns it and message_created pushes it.
type message struct {
	ID          string   `json:"id"`
	Content     string   `json:"content"`
	MessageType string   `json:"message_type"`
	SenderID    string   `json:"sender_id"`
	SenderType  string   `json:"sender_type"`
	ChatRoomID  string   `json:"chat_room_id"`
	InsertedAt  string   `json:"inserted_at"`
	Metadata    metadata `json:"metadata"`
}

type metadata struct {
	Mentions       []mentionOut              `json:"mentions"`
	DeliveryStatus map[string]deliveryRecord `json:"delivery_status"`
}

type mentionOut struct {
	ID     string `json:"id"`
	Handle string `json:"handle"`
}

type deliveryRecord struct {
	Status         string `json:"status"`
	CurrentAttempt int    `json:"current_attempt"`
}

// mentions reports whether the message's metadata mentions id.
func (m message) mentions(id string) bool {
	for _, x := range m.Metadata.Mentions {
		if x.ID == id {
			return true
		}
	}
	return false
}

// messageSent is the answer to sending a text message.
type messageSent struct {
	ID         string `json:"id"`
	Success    bool   `json:"success"`
	Recipients []struct {
		ID     string `json:"id"`
		Handle string `json:"handle"`
	} `json:"recipients"`
}

// messageStatus is the answer of /processing, /processed and /failed.
type messageStatus struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	AttemptNumber int    `json:"attempt_number"`
	Success       bool   `json:"success"`
}

type participant struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Role string `json:"role"`
}

// ids returns the ids of messages, in order.
func ids(ms []message) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// Path helpers. Every path starts with /api/v1.
func agentRoom(room string) string     { return "/api/v1/agent/chats/" + room }
func meRoom(room string) string        { return "/api/v1/me/chats/" + room }
func agentMessages(room string) string { return agentRoom(room) + "/messages" }
func meMessages(room string) string    { return meRoom(room) + "/messages" }
func agentMessage(room, msg, action string) string {
	return agentMessages(room) + "/" + msg + "/" + action
}
