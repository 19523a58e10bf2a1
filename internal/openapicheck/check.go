package openapicheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SchemaPrefix is where every $ref the checker resolves points.
const SchemaPrefix = "#/components/schemas/"

// Document is an OpenAPI document, reduced to what response validation
// needs. It is immutable once Parse returns, and so safe for concurrent use.
type Document struct {
	version string
	schemas map[string]any
	ops     []*Operation
}

// Operation is one method and path template of a document.
type Operation struct {
	Method      string // upper case: "GET"
	Template    string // "/v1/turns/{turn}"
	OperationID string // "" when the document gives none
	Responses   map[string]any

	segments []string // "" marks a {parameter}
	literals int
}

// Parse decodes an OpenAPI document and resolves every $ref in it.
func Parse(doc []byte) (*Document, error) {
	v, err := DecodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parse: the document is a JSON %s, not an object", jsonType(v))
	}
	d := &Document{}
	d.version, _ = root["openapi"].(string)
	components, _ := root["components"].(map[string]any)
	d.schemas, _ = components["schemas"].(map[string]any)
	paths, _ := root["paths"].(map[string]any)
	for tmpl, v := range paths {
		item, _ := v.(map[string]any)
		for method, v := range item {
			op, ok := v.(map[string]any)
			if !ok {
				continue
			}
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
			default:
				continue
			}
			id, _ := op["operationId"].(string)
			resp, _ := op["responses"].(map[string]any)
			d.ops = append(d.ops, newOperation(strings.ToUpper(method), tmpl, id, resp))
		}
	}
	sort.Slice(d.ops, func(i, j int) bool { return d.ops[i].String() < d.ops[j].String() })
	var bad []string
	walkRefs(root, func(ref string) {
		if _, err := d.Resolve(ref); err != nil {
			bad = append(bad, err.Error())
		}
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("unresolvable $refs: %s", strings.Join(bad, "; "))
	}
	return d, nil
}

// Version returns the document's "openapi" field.
func (d *Document) Version() string { return d.version }

// NumSchemas returns how many component schemas the document has.
func (d *Document) NumSchemas() int { return len(d.schemas) }

// Operations returns the document's operations sorted by String.
func (d *Document) Operations() []*Operation { return append([]*Operation(nil), d.ops...) }

func newOperation(method, tmpl, id string, responses map[string]any) *Operation {
	op := &Operation{Method: method, Template: tmpl, OperationID: id, Responses: responses}
	for _, seg := range strings.Split(strings.Trim(tmpl, "/"), "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			seg = ""
		} else {
			op.literals++
		}
		op.segments = append(op.segments, seg)
	}
	return op
}

// String returns "METHOD /path/{param}".
func (op *Operation) String() string { return op.Method + " " + op.Template }

func walkRefs(v any, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			fn(ref)
		}
		for _, c := range x {
			walkRefs(c, fn)
		}
	case []any:
		for _, c := range x {
			walkRefs(c, fn)
		}
	}
}

// DecodeJSON decodes one JSON value with numbers kept exact (json.Number),
// so "integer" can be checked. Trailing data is an error.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// Resolve returns the schema a $ref names. The name after
// #/components/schemas/ is taken literally first and as an RFC 6901
// pointer token second.
func (d *Document) Resolve(ref string) (any, error) {
	name, ok := strings.CutPrefix(ref, SchemaPrefix)
	if !ok {
		return nil, fmt.Errorf("$ref %q is outside %s", ref, SchemaPrefix)
	}
	if s, ok := d.schemas[name]; ok {
		return s, nil
	}
	unescaped := strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	if s, ok := d.schemas[unescaped]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("$ref %q names no schema", ref)
}

// Find returns the operation for a request path (query ignored), preferring
// the template with the most literal segments, or nil.
func (d *Document) Find(method, path string) *Operation {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var best *Operation
	for _, op := range d.ops {
		if op.Method != method || len(op.segments) != len(segs) {
			continue
		}
		match := true
		for j, s := range op.segments {
			if s != "" && s != segs[j] || s == "" && segs[j] == "" {
				match = false
				break
			}
		}
		if match && (best == nil || op.literals > best.literals) {
			best = op
		}
	}
	return best
}

// Response returns what the operation declares for a status: the exact
// code, else the 4XX-style range (either case), else default. content is
// the response's "content" map (nil when it declares no body); ok is false
// when nothing declared covers the status.
func (op *Operation) Response(status int) (content map[string]any, key string, ok bool) {
	code := strconv.Itoa(status)
	for _, key := range []string{code, code[:1] + "XX", code[:1] + "xx", "default"} {
		r, ok := op.Responses[key].(map[string]any)
		if !ok {
			continue
		}
		content, _ := r["content"].(map[string]any)
		return content, key, true
	}
	return nil, "", false
}

// Validate returns the violations of schema by v (a value decoded by
// DecodeJSON), one message each, prefixed with the JSON pointer of the
// offending value.
func (d *Document) Validate(schema, v any) []string {
	var errs []string
	d.check(schema, v, "", 0, &errs)
	return errs
}

// maxDepth stops a $ref cycle that consumes no data.
const maxDepth = 100

func (d *Document) check(schema, v any, ptr string, depth int, errs *[]string) {
	at := ptr
	if at == "" {
		at = "/"
	}
	fail := func(format string, args ...any) { *errs = append(*errs, at+": "+fmt.Sprintf(format, args...)) }
	if depth > maxDepth {
		fail("schema nesting deeper than %d (a $ref cycle?)", maxDepth)
		return
	}
	switch s := schema.(type) {
	case bool:
		if !s {
			fail("no value is allowed here")
		}
		return
	case map[string]any:
		d.checkObject(s, v, ptr, depth, errs, fail)
	default:
		fail("schema is neither an object nor a boolean: %v", schema)
	}
}

func (d *Document) checkObject(s map[string]any, v any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
	if ref, ok := s["$ref"].(string); ok {
		target, err := d.Resolve(ref)
		if err != nil {
			fail("%v", err)
			return
		}
		d.check(target, v, ptr, depth+1, errs)
	}
	if v == nil {
		if n, _ := s["nullable"].(bool); n { // OpenAPI 3.0 style
			return
		}
	}
	if typ, ok := s["type"]; ok && !typeMatches(typ, v) {
		fail("want type %v, got %s", typ, jsonType(v))
		return
	}
	if enum, ok := s["enum"].([]any); ok && !contains(enum, v) {
		fail("%s is not one of %s", compact(v), compact(enum))
	}
	if c, ok := s["const"]; ok && !equalJSON(c, v) {
		fail("%s is not the constant %s", compact(v), compact(c))
	}
	d.checkComposition(s, v, ptr, depth, errs, fail)
	switch x := v.(type) {
	case map[string]any:
		d.checkProperties(s, x, ptr, depth, errs, fail)
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range x {
				d.check(items, e, ptr+"/"+strconv.Itoa(i), depth+1, errs)
			}
		}
		if n, ok := number(s["minItems"]); ok && float64(len(x)) < n {
			fail("%d items, want at least %v", len(x), n)
		}
		if n, ok := number(s["maxItems"]); ok && float64(len(x)) > n {
			fail("%d items, want at most %v", len(x), n)
		}
	case string:
		if f, ok := s["format"].(string); ok {
			if err := checkFormat(f, x); err != nil {
				fail("%q is not a valid %s: %v", x, f, err)
			}
		}
		if n, ok := number(s["minLength"]); ok && float64(utf8.RuneCountInString(x)) < n {
			fail("%q is shorter than %v", x, n)
		}
		if n, ok := number(s["maxLength"]); ok && float64(utf8.RuneCountInString(x)) > n {
			fail("string of %d characters is longer than %v", utf8.RuneCountInString(x), n)
		}
	case json.Number:
		f, _ := x.Float64()
		if n, ok := number(s["minimum"]); ok && f < n {
			fail("%s is below the minimum %v", x, n)
		}
		if n, ok := number(s["maximum"]); ok && f > n {
			fail("%s is above the maximum %v", x, n)
		}
	}
}

func (d *Document) checkComposition(s map[string]any, v any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
	matches := func(sub any) (bool, []string) {
		var e []string
		d.check(sub, v, ptr, depth+1, &e)
		return len(e) == 0, e
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			d.check(sub, v, ptr, depth+1, errs)
		}
	}
	if any_, ok := s["anyOf"].([]any); ok {
		var why []string
		ok := false
		for _, sub := range any_ {
			m, e := matches(sub)
			ok = ok || m
			why = append(why, e...)
		}
		if !ok {
			fail("matches none of anyOf: %s", strings.Join(why, "; "))
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		var why []string
		n := 0
		for _, sub := range one {
			m, e := matches(sub)
			if m {
				n++
			}
			why = append(why, e...)
		}
		switch {
		case n == 0:
			fail("matches none of oneOf: %s", strings.Join(why, "; "))
		case n > 1:
			fail("matches %d branches of oneOf, want exactly one", n)
		}
	}
}

func (d *Document) checkProperties(s map[string]any, x map[string]any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := x[name]; !ok {
				fail("required property %q is missing", name)
			}
		}
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		if p, ok := props[k]; ok {
			d.check(p, x[k], child, depth+1, errs)
			continue
		}
		if ap, ok := s["additionalProperties"]; ok {
			d.check(ap, x[k], child, depth+1, errs)
		}
	}
}

func typeMatches(typ, v any) bool {
	switch t := typ.(type) {
	case string:
		return isType(t, v)
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && isType(s, v) {
				return true
			}
		}
	}
	return false
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(n.String())
		return ok && r.IsInt()
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func contains(enum []any, v any) bool {
	for _, e := range enum {
		if equalJSON(e, v) {
			return true
		}
	}
	return false
}

// equalJSON compares two decoded values; numbers compare by value.
func equalJSON(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		ar, ok1 := new(big.Rat).SetString(an.String())
		br, ok2 := new(big.Rat).SetString(bn.String())
		return ok1 && ok2 && ar.Cmp(br) == 0
	}
	return compact(a) == compact(b)
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// checkFormat asserts the formats the document uses; others are
// annotations only.
func checkFormat(format, s string) error {
	switch format {
	case "uuid":
		if !uuidRE.MatchString(s) {
			return errors.New("want 8-4-4-4-12 hex digits")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return err
		}
	case "email":
		at := strings.LastIndexByte(s, '@')
		if at <= 0 || at == len(s)-1 {
			return errors.New("want local@domain")
		}
	}
	return nil
}
