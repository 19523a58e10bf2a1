package openapicheck_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/openapicheck"
)

// testDoc is a small OpenAPI document using every construct the validator
// supports, including an unescaped "/" in a schema name (as Band's have).
const testDoc = `{
  "openapi": "3.1.0",
  "paths": {
    "/api/v1/chats/{id}": {"get": {"operationId": "getChat", "responses": {
      "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/API/getChat_200"}}}},
      "204": {"description": "no body"},
      "4XX": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "5xx": {"description": "lower-case range"},
      "default": {"description": "anything else"}}}},
    "/api/v1/chats/{id}/messages/next": {"get": {"operationId": "next", "responses": {}}},
    "/api/v1/chats/{id}/messages/{msg}": {"get": {"responses": {}}},
    "/api/v1/chats/{id}/messages": {"parameters": [], "post": {"responses": {}}}
  },
  "components": {"schemas": {
    "API/getChat_200": {"type": "object", "required": ["data"], "properties": {"data": {"$ref": "#/components/schemas/Chat"}}},
    "Chat": {"type": "object", "required": ["id", "n"], "properties": {
      "id": {"type": "string", "format": "uuid"},
      "n": {"type": "integer", "minimum": 0, "maximum": 100},
      "title": {"type": ["string", "null"], "minLength": 1, "maxLength": 3},
      "kind": {"$ref": "#/components/schemas/Kind"},
      "at": {"type": "string", "format": "date-time"},
      "mail": {"type": "string", "format": "email"},
      "owner": {"oneOf": [{"$ref": "#/components/schemas/Owner"}, {"type": "null"}]},
      "either": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
      "both": {"allOf": [{"type": "string"}, {"const": "x"}]},
      "two": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
      "v": {"const": 2},
      "old": {"type": "string", "nullable": true},
      "details": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
      "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
      "closed": {"type": "object", "properties": {"a": true}, "additionalProperties": false},
      "escaped": {"$ref": "#/components/schemas/API~1getChat_200"}
    }},
    "Kind": {"type": "string", "enum": ["direct", "group"]},
    "Owner": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
    "Error": {"type": "object", "required": ["error"]},
    "Loop": {"$ref": "#/components/schemas/Loop"}
  }}
}`

func parseTestDoc(t testing.TB) *openapicheck.Document {
	t.Helper()
	d, err := openapicheck.Parse([]byte(testDoc))
	require.NoError(t, err)
	return d
}

// requireViolation asserts that errs is empty when want is, and else that
// one of its messages contains want.
func requireViolation(t *testing.T, errs []string, want string) {
	t.Helper()
	if want == "" {
		require.Empty(t, errs)
		return
	}
	require.NotEmpty(t, errs)
	require.Contains(t, strings.Join(errs, "\n"), want)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	d := parseTestDoc(t)
	const id = `"id": "2b1e8f0a-3c4d-4e5f-8a9b-0c1d2e3f4a5b"`
	cases := []struct {
		name    string
		body    string
		wantErr string // empty: valid
	}{
		{name: "minimal", body: `{"data": {` + id + `, "n": 1}}`},
		{name: "every field", body: `{"data": {` + id + `, "n": 2.0, "title": null, "kind": "group", "at": "2025-11-17T11:20:10.284136Z", "mail": "a@b", "owner": {"id": "u"}, "either": true, "both": "x", "two": 1.5, "v": 2.0, "old": null, "details": {"/a": ["x"]}, "tags": ["t"], "closed": {"a": 1}, "escaped": {"data": {` + id + `, "n": 3}}, "extra": true}}`},
		{name: "null through oneOf", body: `{"data": {` + id + `, "n": 1, "owner": null}}`},
		{name: "missing wrapper", body: `{` + id + `, "n": 1}`, wantErr: `/: required property "data" is missing`},
		{name: "not an object", body: `[]`, wantErr: `/: want type object, got array`},
		{name: "missing required", body: `{"data": {` + id + `}}`, wantErr: `/data: required property "n" is missing`},
		{name: "fractional integer", body: `{"data": {` + id + `, "n": 1.5}}`, wantErr: "/data/n: want type integer, got number"},
		{name: "string for integer", body: `{"data": {` + id + `, "n": "1"}}`, wantErr: "/data/n: want type integer, got string"},
		{name: "below minimum", body: `{"data": {` + id + `, "n": -1}}`, wantErr: "/data/n: -1 is below the minimum 0"},
		{name: "above maximum", body: `{"data": {` + id + `, "n": 101}}`, wantErr: "/data/n: 101 is above the maximum 100"},
		{name: "too short", body: `{"data": {` + id + `, "n": 1, "title": ""}}`, wantErr: `/data/title: "" is shorter than 1`},
		{name: "too long", body: `{"data": {` + id + `, "n": 1, "title": "éééé"}}`, wantErr: `/data/title: string of 4 characters is longer than 3`},
		{name: "length counts characters", body: `{"data": {` + id + `, "n": 1, "title": "ééé"}}`},
		{name: "null where not nullable", body: `{"data": {` + id + `, "n": 1, "kind": null}}`, wantErr: "/data/kind: want type string, got null"},
		{name: "not in enum", body: `{"data": {` + id + `, "n": 1, "kind": "task"}}`, wantErr: `/data/kind: "task" is not one of ["direct","group"]`},
		{name: "bad uuid", body: `{"data": {"id": "msg_01", "n": 1}}`, wantErr: `/data/id: "msg_01" is not a valid uuid`},
		{name: "bad date-time", body: `{"data": {` + id + `, "n": 1, "at": "yesterday"}}`, wantErr: `/data/at: "yesterday" is not a valid date-time`},
		{name: "bad email", body: `{"data": {` + id + `, "n": 1, "mail": "a@"}}`, wantErr: `/data/mail: "a@" is not a valid email`},
		{name: "oneOf matches nothing", body: `{"data": {` + id + `, "n": 1, "owner": 7}}`, wantErr: "/data/owner: matches none of oneOf"},
		{name: "oneOf matches two", body: `{"data": {` + id + `, "n": 1, "two": 1}}`, wantErr: "/data/two: matches 2 branches of oneOf, want exactly one"},
		{name: "anyOf matches nothing", body: `{"data": {` + id + `, "n": 1, "either": 1}}`, wantErr: "/data/either: matches none of anyOf"},
		{name: "allOf fails one", body: `{"data": {` + id + `, "n": 1, "both": "y"}}`, wantErr: `/data/both: "y" is not the constant "x"`},
		{name: "const by value", body: `{"data": {` + id + `, "n": 1, "v": 3}}`, wantErr: `/data/v: 3 is not the constant 2`},
		{name: "additionalProperties", body: `{"data": {` + id + `, "n": 1, "details": {"/a": "x"}}}`, wantErr: "/data/details/~1a: want type array, got string"},
		{name: "additionalProperties false", body: `{"data": {` + id + `, "n": 1, "closed": {"b~": 1}}}`, wantErr: "/data/closed/b~0: no value is allowed here"},
		{name: "array items", body: `{"data": {` + id + `, "n": 1, "tags": ["a", 2]}}`, wantErr: "/data/tags/1: want type string, got number"},
		{name: "too few items", body: `{"data": {` + id + `, "n": 1, "tags": []}}`, wantErr: "/data/tags: 0 items, want at least 1"},
		{name: "too many items", body: `{"data": {` + id + `, "n": 1, "tags": ["a", "b", "c"]}}`, wantErr: "/data/tags: 3 items, want at most 2"},
		{name: "escaped ref", body: `{"data": {` + id + `, "n": 1, "escaped": {}}}`, wantErr: `/data/escaped: required property "data" is missing`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := openapicheck.DecodeJSON([]byte(tc.body))
			require.NoError(t, err)
			requireViolation(t, d.Validate(map[string]any{"$ref": "#/components/schemas/API/getChat_200"}, v), tc.wantErr)
		})
	}
}

func TestValidate_schemas(t *testing.T) {
	t.Parallel()
	d := parseTestDoc(t)
	cases := []struct {
		name    string
		schema  any
		wantErr string
	}{
		{name: "true", schema: true},
		{name: "false", schema: false, wantErr: "/: no value is allowed here"},
		{name: "neither object nor boolean", schema: "x", wantErr: "/: schema is neither an object nor a boolean"},
		{name: "ref outside components", schema: map[string]any{"$ref": "#/paths/x"}, wantErr: `/: $ref "#/paths/x" is outside #/components/schemas/`},
		{name: "ref to nothing", schema: map[string]any{"$ref": "#/components/schemas/Nope"}, wantErr: `/: $ref "#/components/schemas/Nope" names no schema`},
		{name: "ref cycle", schema: map[string]any{"$ref": "#/components/schemas/Loop"}, wantErr: "/: schema nesting deeper than 100 (a $ref cycle?)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireViolation(t, d.Validate(tc.schema, "value"), tc.wantErr)
		})
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	d := parseTestDoc(t)
	cases := []struct {
		name   string
		method string
		path   string
		want   string // empty: no operation
	}{
		{name: "parameter", method: "GET", path: "/api/v1/chats/abc", want: "GET /api/v1/chats/{id}"},
		{name: "query ignored", method: "GET", path: "/api/v1/chats/abc?limit=1", want: "GET /api/v1/chats/{id}"},
		{name: "literal beats parameter", method: "GET", path: "/api/v1/chats/abc/messages/next", want: "GET /api/v1/chats/{id}/messages/next"},
		{name: "parameter at the end", method: "GET", path: "/api/v1/chats/abc/messages/m1", want: "GET /api/v1/chats/{id}/messages/{msg}"},
		{name: "other method", method: "POST", path: "/api/v1/chats/abc/messages", want: "POST /api/v1/chats/{id}/messages"},
		{name: "wrong method", method: "POST", path: "/api/v1/chats/abc"},
		{name: "lower-case method", method: "get", path: "/api/v1/chats/abc"},
		{name: "empty parameter", method: "GET", path: "/api/v1/chats/"},
		{name: "unknown path", method: "GET", path: "/api/v1/rooms/abc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := d.Find(tc.method, tc.path)
			if tc.want == "" {
				require.Nil(t, op)
				return
			}
			require.NotNil(t, op)
			require.Equal(t, tc.want, op.String())
		})
	}
}

func TestOperations(t *testing.T) {
	t.Parallel()
	d := parseTestDoc(t)
	var got []string
	for _, op := range d.Operations() {
		got = append(got, op.String()+" "+op.OperationID)
	}
	require.Equal(t, []string{
		"GET /api/v1/chats/{id} getChat",
		"GET /api/v1/chats/{id}/messages/next next",
		"GET /api/v1/chats/{id}/messages/{msg} ",
		"POST /api/v1/chats/{id}/messages ",
	}, got)
	require.Equal(t, "3.1.0", d.Version())
	require.Equal(t, 6, d.NumSchemas())
}

func TestResponse(t *testing.T) {
	t.Parallel()
	d := parseTestDoc(t)
	op := d.Find("GET", "/api/v1/chats/abc")
	require.NotNil(t, op)
	cases := []struct {
		status  int
		key     string // empty: undeclared
		hasBody bool
	}{
		{200, "200", true},
		{204, "204", false},
		{404, "4XX", true},
		{503, "5xx", false},
		{302, "default", false},
	}
	for _, tc := range cases {
		content, key, ok := op.Response(tc.status)
		require.True(t, ok, "%d", tc.status)
		require.Equal(t, tc.key, key, "%d", tc.status)
		require.Equal(t, tc.hasBody, content != nil, "%d", tc.status)
	}
	next := d.Find("GET", "/api/v1/chats/abc/messages/next")
	require.NotNil(t, next)
	_, _, ok := next.Response(200)
	require.False(t, ok, "an operation without responses declares nothing")
}

func TestParse_rejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, wantErr string
	}{
		{name: "not JSON", doc: `{`, wantErr: "parse: unexpected EOF"},
		{name: "trailing data", doc: `{} {}`, wantErr: "parse: trailing data after the JSON value"},
		{name: "not an object", doc: `[1]`, wantErr: "parse: the document is a JSON array, not an object"},
		{name: "broken ref", doc: strings.Replace(testDoc, `"#/components/schemas/Kind"`, `"#/components/schemas/Missing"`, 1), wantErr: `unresolvable $refs: $ref "#/components/schemas/Missing" names no schema`},
		{name: "ref outside schemas", doc: `{"paths": {}, "x": {"$ref": "other.json#/A"}}`, wantErr: `unresolvable $refs: $ref "other.json#/A" is outside #/components/schemas/`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := openapicheck.Parse([]byte(tc.doc))
			require.EqualError(t, err, tc.wantErr)
		})
	}
}

func TestDecodeJSON_keepsNumbersExact(t *testing.T) {
	t.Parallel()
	d := parseTestDoc(t)
	// 2^53+1 is not a float64; decoded exactly it is still an integer.
	v, err := openapicheck.DecodeJSON([]byte(`9007199254740993`))
	require.NoError(t, err)
	require.Empty(t, d.Validate(map[string]any{"type": "integer"}, v))
	v, err = openapicheck.DecodeJSON([]byte(`1e400`))
	require.NoError(t, err)
	require.Empty(t, d.Validate(map[string]any{"type": "integer"}, v))
}

// FuzzValidate checks that no document and no value make the parser or
// the validator panic or hang, and that Validate is deterministic.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(testDoc), []byte(`{"data": {"id": "x", "n": 1.5, "tags": [1]}}`))
	f.Add([]byte(`{"components": {"schemas": {"A": {"$ref": "#/components/schemas/A"}}}}`), []byte(`null`))
	f.Add([]byte(`{"components": {"schemas": {"A": {"type": "array", "items": {"$ref": "#/components/schemas/A"}}}}}`), []byte(`[[[[]]]]`))
	f.Fuzz(func(t *testing.T, doc, body []byte) {
		d, err := openapicheck.Parse(doc)
		if err != nil {
			return
		}
		v, err := openapicheck.DecodeJSON(body)
		if err != nil {
			return
		}
		for _, name := range []string{"A", "API/getChat_200", "Chat"} {
			schema := map[string]any{"$ref": openapicheck.SchemaPrefix + name}
			first := d.Validate(schema, v)
			require.Equal(t, first, d.Validate(schema, v))
		}
		for _, op := range d.Operations() {
			if got := d.Find(op.Method, strings.ReplaceAll(op.Template, "{", "x{")); got != nil {
				require.Equal(t, op.Method, got.Method)
			}
			_, _, _ = op.Response(200)
		}
	})
}
