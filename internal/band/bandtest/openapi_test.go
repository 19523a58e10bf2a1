package bandtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testDoc is a small OpenAPI document using every construct the validator
// supports, including Band's unescaped "/" in schema names.
const testDoc = `{
  "openapi": "3.1.0",
  "paths": {
    "/api/v1/chats/{id}": {"get": {"operationId": "getChat", "responses": {
      "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/API/getChat_200"}}}},
      "204": {"description": "no body"}}}},
    "/api/v1/chats/{id}/messages/next": {"get": {"operationId": "next", "responses": {}}},
    "/api/v1/chats/{id}/messages/{msg}": {"get": {"operationId": "message", "responses": {}}}
  },
  "components": {"schemas": {
    "API/getChat_200": {"type": "object", "required": ["data"], "properties": {"data": {"$ref": "#/components/schemas/Chat"}}},
    "Chat": {"type": "object", "required": ["id", "n"], "properties": {
      "id": {"type": "string", "format": "uuid"},
      "n": {"type": "integer"},
      "title": {"type": ["string", "null"]},
      "kind": {"$ref": "#/components/schemas/Kind"},
      "at": {"type": "string", "format": "date-time"},
      "owner": {"oneOf": [{"$ref": "#/components/schemas/Owner"}, {"type": "null"}]},
      "details": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
      "tags": {"type": "array", "items": {"type": "string"}}
    }},
    "Kind": {"type": "string", "enum": ["direct", "group"]},
    "Owner": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}
  }}
}`

func loadTestDoc(t *testing.T) *openAPI {
	t.Helper()
	path := filepath.Join(t.TempDir(), "openapi.json")
	require.NoError(t, os.WriteFile(path, []byte(testDoc), 0o600))
	o, err := loadOpenAPI(path)
	require.NoError(t, err)
	return o
}

func TestOpenAPI_validate(t *testing.T) {
	t.Parallel()
	o := loadTestDoc(t)
	const id = `"id": "2b1e8f0a-3c4d-4e5f-8a9b-0c1d2e3f4a5b"`
	cases := []struct {
		name    string
		body    string
		wantErr string // empty: valid
	}{
		{name: "minimal", body: `{"data": {` + id + `, "n": 1}}`},
		{name: "every field", body: `{"data": {` + id + `, "n": 2.0, "title": null, "kind": "group", "at": "2025-11-17T11:20:10.284136Z", "owner": {"id": "u"}, "details": {"/a": ["x"]}, "tags": ["t"], "extra": true}}`},
		{name: "null through oneOf", body: `{"data": {` + id + `, "n": 1, "owner": null}}`},
		{name: "missing wrapper", body: `{` + id + `, "n": 1}`, wantErr: `/: required property "data" is missing`},
		{name: "missing required", body: `{"data": {` + id + `}}`, wantErr: `/data: required property "n" is missing`},
		{name: "fractional integer", body: `{"data": {` + id + `, "n": 1.5}}`, wantErr: "/data/n: want type integer, got number"},
		{name: "string for integer", body: `{"data": {` + id + `, "n": "1"}}`, wantErr: "/data/n: want type integer, got string"},
		{name: "null where not nullable", body: `{"data": {` + id + `, "n": 1, "kind": null}}`, wantErr: "/data/kind: want type string, got null"},
		{name: "not in enum", body: `{"data": {` + id + `, "n": 1, "kind": "task"}}`, wantErr: `/data/kind: "task" is not one of ["direct","group"]`},
		{name: "bad uuid", body: `{"data": {"id": "msg_01", "n": 1}}`, wantErr: `/data/id: "msg_01" is not a valid uuid`},
		{name: "bad date-time", body: `{"data": {` + id + `, "n": 1, "at": "yesterday"}}`, wantErr: `/data/at: "yesterday" is not a valid date-time`},
		{name: "oneOf matches nothing", body: `{"data": {` + id + `, "n": 1, "owner": 7}}`, wantErr: "/data/owner: matches none of oneOf"},
		{name: "additionalProperties", body: `{"data": {` + id + `, "n": 1, "details": {"/a": "x"}}}`, wantErr: "/data/details/~1a: want type array, got string"},
		{name: "array items", body: `{"data": {` + id + `, "n": 1, "tags": ["a", 2]}}`, wantErr: "/data/tags/1: want type string, got number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := decodeJSON([]byte(tc.body))
			require.NoError(t, err)
			errs := o.validate(map[string]any{"$ref": "#/components/schemas/API/getChat_200"}, v)
			if tc.wantErr == "" {
				require.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			require.Contains(t, strings.Join(errs, "\n"), tc.wantErr)
		})
	}
}

func TestOpenAPI_find(t *testing.T) {
	t.Parallel()
	o := loadTestDoc(t)
	cases := []struct {
		name   string
		method string
		path   string
		want   string // empty: no operation
	}{
		{name: "parameter", method: "GET", path: "/api/v1/chats/abc", want: "getChat"},
		{name: "query ignored", method: "GET", path: "/api/v1/chats/abc?limit=1", want: "getChat"},
		{name: "literal beats parameter", method: "GET", path: "/api/v1/chats/abc/messages/next", want: "next"},
		{name: "parameter at the end", method: "GET", path: "/api/v1/chats/abc/messages/m1", want: "message"},
		{name: "wrong method", method: "POST", path: "/api/v1/chats/abc"},
		{name: "empty parameter", method: "GET", path: "/api/v1/chats/"},
		{name: "unknown path", method: "GET", path: "/api/v1/rooms/abc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := o.find(tc.method, tc.path)
			if tc.want == "" {
				require.Nil(t, op)
				return
			}
			require.NotNil(t, op)
			require.Equal(t, tc.want, op.id)
		})
	}
}

func TestOpenAPI_responseSchema(t *testing.T) {
	t.Parallel()
	o := loadTestDoc(t)
	op := o.find("GET", "/api/v1/chats/abc")
	require.NotNil(t, op)
	_, ok := op.responseSchema(200)
	require.True(t, ok, "200 has a JSON schema")
	_, ok = op.responseSchema(204)
	require.False(t, ok, "204 is declared without a body")
	_, ok = op.responseSchema(404)
	require.False(t, ok, "404 is not declared")
}

func TestLoadOpenAPI_rejectsBrokenRefs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "openapi.json")
	doc := strings.Replace(testDoc, `"#/components/schemas/Kind"`, `"#/components/schemas/Missing"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	_, err := loadOpenAPI(path)
	require.ErrorContains(t, err, `"#/components/schemas/Missing" names no schema`)
}

// TestBandOpenAPI loads Band's real document when it is present, so a
// change to it that the validator cannot read is caught here.
func TestBandOpenAPI(t *testing.T) {
	t.Parallel()
	path := findOpenAPI()
	if path == "" {
		t.Skip("Band's OpenAPI document is absent")
	}
	o, err := loadOpenAPI(path)
	require.NoError(t, err)
	cases := []struct {
		method, path, want string
	}{
		{"GET", "/api/v1/agent/chats/r/messages/next", "getAgentNextMessage"},
		{"GET", "/api/v1/agent/chats/r/messages", "listAgentMessages"},
		{"POST", "/api/v1/agent/chats/r/messages/m/processed", "markAgentMessageProcessed"},
		{"GET", "/api/v1/me/chats/r", "getMyChatRoom"},
		{"POST", "/api/v1/me/agents/register", "registerMyAgent"},
		{"DELETE", "/api/v1/me/agents/a?force=true", "deleteMyAgent"},
	}
	for _, tc := range cases {
		op := o.find(tc.method, tc.path)
		require.NotNil(t, op, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.want, op.id, "%s %s", tc.method, tc.path)
	}
}
