package bandtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testDoc is a small OpenAPI document in Band's style: operationIds, and
// an unescaped "/" in a schema name. The validator itself is tested in
// openapicheck.
const testDoc = `{
  "openapi": "3.1.0",
  "paths": {
    "/api/v1/chats/{id}": {"get": {"operationId": "getChat", "responses": {
      "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/API/getChat_200"}}}},
      "204": {"description": "no body"}}}},
    "/api/v1/chats/{id}/messages/next": {"get": {"operationId": "next", "responses": {}}},
    "/api/v1/chats/{id}/messages/{msg}": {"get": {"operationId": "message", "responses": {}}},
    "/api/v1/me": {"get": {"responses": {}}}
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

// TestOpenAPI_opID checks that operations are named by operationId, else
// by method and template (how they are matched is openapicheck's).
func TestOpenAPI_opID(t *testing.T) {
	t.Parallel()
	o := loadTestDoc(t)
	for path, want := range map[string]string{
		"/api/v1/chats/abc":               "getChat",
		"/api/v1/chats/abc/messages/next": "next",
		"/api/v1/chats/abc/messages/m1":   "message",
		"/api/v1/me":                      "GET /api/v1/me",
	} {
		op := o.find("GET", path)
		require.NotNil(t, op, path)
		require.Equal(t, want, opID(op), path)
	}
	require.Nil(t, o.find("POST", "/api/v1/chats/abc"))
}

func TestOpenAPI_responseSchema(t *testing.T) {
	t.Parallel()
	o := loadTestDoc(t)
	op := o.find("GET", "/api/v1/chats/abc")
	require.NotNil(t, op)
	_, ok := responseSchema(op, 200)
	require.True(t, ok, "200 has a JSON schema")
	_, ok = responseSchema(op, 204)
	require.False(t, ok, "204 is declared without a body")
	_, ok = responseSchema(op, 404)
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
		require.Equal(t, tc.want, opID(op), "%s %s", tc.method, tc.path)
	}
}
