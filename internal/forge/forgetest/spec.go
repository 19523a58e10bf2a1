package forgetest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jamhq/jam/internal/openapicheck"
)

// openapiJSON is the subset of GitHub's own REST description that holds
// the operations jam uses, unchanged.
//
//go:embed testdata/openapi.json
var openapiJSON []byte

// spec is the description prepared for the double: openapicheck's
// document, plus per operation what openapicheck does not read (request
// bodies and parameters).
type spec struct {
	doc     *openapicheck.Document
	schemas map[string]any
	ops     map[string]*opSpec // by operationId
}

type opSpec struct {
	op       *openapicheck.Operation
	body     any  // the request body's JSON schema; nil when none is declared
	bodyReq  bool // the request body is required
	query    map[string]any
	pathArgs map[string]any // path parameter name → schema
}

var (
	specOnce sync.Once
	specVal  *spec
	specErr  error
)

// loadSpec parses the embedded description once. openapicheck resolves
// only $refs under #/components/schemas/, so the others (parameters,
// responses, headers, examples) are inlined first; the document is
// otherwise what GitHub publishes.
func loadSpec() (*spec, error) {
	specOnce.Do(func() {
		v, err := openapicheck.DecodeJSON(openapiJSON)
		if err != nil {
			specErr = err
			return
		}
		root := v.(map[string]any)
		inlined, err := inline(root, root, 0)
		if err != nil {
			specErr = err
			return
		}
		root = inlined.(map[string]any)
		b, err := json.Marshal(root)
		if err != nil {
			specErr = err
			return
		}
		doc, err := openapicheck.Parse(b)
		if err != nil {
			specErr = err
			return
		}
		s := &spec{doc: doc, ops: map[string]*opSpec{}}
		comps, _ := root["components"].(map[string]any)
		s.schemas, _ = comps["schemas"].(map[string]any)
		paths, _ := root["paths"].(map[string]any)
		for _, op := range doc.Operations() {
			item, _ := paths[op.Template].(map[string]any)
			raw, _ := item[strings.ToLower(op.Method)].(map[string]any)
			o := &opSpec{op: op, query: map[string]any{}, pathArgs: map[string]any{}}
			params, _ := raw["parameters"].([]any)
			if ip, ok := item["parameters"].([]any); ok {
				params = append(ip, params...)
			}
			for _, p := range params {
				pm, _ := p.(map[string]any)
				name, _ := pm["name"].(string)
				switch pm["in"] {
				case "query":
					o.query[name] = pm["schema"]
				case "path":
					o.pathArgs[name] = pm["schema"]
				}
			}
			if rb, ok := raw["requestBody"].(map[string]any); ok {
				o.bodyReq, _ = rb["required"].(bool)
				content, _ := rb["content"].(map[string]any)
				if mt, ok := content["application/json"].(map[string]any); ok {
					o.body = mt["schema"]
				}
			}
			s.ops[op.OperationID] = o
		}
		specVal = s
	})
	return specVal, specErr
}

// inline replaces every $ref outside #/components/schemas/ with what it
// names, and drops examples (annotations the double never uses).
func inline(root, v any, depth int) (any, error) {
	if depth > 64 {
		return nil, fmt.Errorf("$refs nest deeper than 64")
	}
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && !strings.HasPrefix(ref, openapicheck.SchemaPrefix) {
			target, err := pointer(root, ref)
			if err != nil {
				return nil, err
			}
			return inline(root, target, depth+1)
		}
		out := make(map[string]any, len(x))
		for k, c := range x {
			if k == "examples" || k == "example" {
				continue
			}
			ic, err := inline(root, c, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = ic
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			ic, err := inline(root, c, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = ic
		}
		return out, nil
	}
	return v, nil
}

// pointer follows a local JSON pointer ref ("#/a/b").
func pointer(root any, ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	cur := root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, nil
}

// responseSchema is the JSON schema declared for status, and whether the
// status is declared at all.
func (o *opSpec) responseSchema(status int) (schema any, declared bool) {
	content, _, ok := o.op.Response(status)
	if !ok {
		return nil, false
	}
	if mt, ok := content["application/json"].(map[string]any); ok {
		return mt["schema"], true
	}
	return nil, true
}

// checkQuery validates a request's query parameters against the declared
// ones: each must be declared and its value of the declared schema.
func (s *spec) checkQuery(o *opSpec, q url.Values) []string {
	var bad []string
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		schema, ok := o.query[k]
		if !ok {
			bad = append(bad, fmt.Sprintf("query parameter %q is not declared", k))
			continue
		}
		for _, v := range q[k] {
			for _, e := range s.doc.Validate(schema, paramValue(schema, v)) {
				bad = append(bad, fmt.Sprintf("query parameter %q: %s", k, e))
			}
		}
	}
	return bad
}

// checkPath validates the path parameters the route captured.
func (s *spec) checkPath(o *opSpec, args map[string]string) []string {
	var bad []string
	for name, v := range args {
		schema, ok := o.pathArgs[name]
		if !ok {
			bad = append(bad, fmt.Sprintf("path parameter %q is not declared", name))
			continue
		}
		for _, e := range s.doc.Validate(schema, paramValue(schema, v)) {
			bad = append(bad, fmt.Sprintf("path parameter %q: %s", name, e))
		}
	}
	return bad
}

// paramValue reads a parameter's text as the JSON value its schema wants
// (a query or path parameter is always text on the wire).
func paramValue(schema any, v string) any {
	m, _ := schema.(map[string]any)
	switch m["type"] {
	case "integer", "number":
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return json.Number(v)
		}
	case "boolean":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

// instance returns a value of the named component schema with every
// required property present: nullable ones null, enums their first value,
// strings of their format (uris under base), numbers 1. The handlers then
// set the fields that carry the double's state; the rest is filler that
// validates, so a response is always complete.
func (s *spec) instance(name, base string) map[string]any {
	v, _ := s.fill(map[string]any{"$ref": openapicheck.SchemaPrefix + name}, base, 0).(map[string]any)
	if v == nil {
		v = map[string]any{}
	}
	return v
}

func (s *spec) fill(schema any, base string, depth int) any {
	m, ok := schema.(map[string]any)
	if !ok || depth > 40 {
		return nil
	}
	if ref, ok := m["$ref"].(string); ok {
		target, err := s.doc.Resolve(ref)
		if err != nil {
			return nil
		}
		return s.fill(target, base, depth+1)
	}
	if n, _ := m["nullable"].(bool); n {
		return nil
	}
	if all, ok := m["allOf"].([]any); ok {
		out := map[string]any{}
		for _, sub := range all {
			if o, ok := s.fill(sub, base, depth+1).(map[string]any); ok {
				for k, v := range o {
					out[k] = v
				}
			}
		}
		return out
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts, ok := m[key].([]any); ok {
			for _, alt := range alts {
				if am, ok := alt.(map[string]any); ok && am["type"] == "null" {
					return nil
				}
			}
			if len(alts) > 0 {
				return s.fill(alts[0], base, depth+1)
			}
		}
	}
	if enum, ok := m["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ := m["type"]
	if ts, ok := typ.([]any); ok {
		for _, t := range ts {
			if t == "null" {
				return nil
			}
		}
		if len(ts) > 0 {
			typ = ts[0]
		}
	}
	if typ == nil && m["properties"] != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			out[name] = s.fill(props[name], base, depth+1)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return json.Number("1")
	case "boolean":
		return false
	case "string":
		switch m["format"] {
		case "date-time":
			return "2026-01-01T00:00:00Z"
		case "uri":
			return base + "placeholder"
		case "email":
			return "forgetest@example.invalid"
		}
		out := "x"
		if n, ok := m["minLength"].(json.Number); ok {
			if k, err := n.Int64(); err == nil && k > 1 && k < 1000 {
				out = strings.Repeat("0", int(k))
			}
		}
		return out
	}
	return nil
}
