package bandtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// openAPIEnv names an OpenAPI document to use instead of the one next to
// the repository.
const openAPIEnv = "JAM_BAND_OPENAPI"

const schemaPrefix = "#/components/schemas/"

// openAPI is Band's OpenAPI document, reduced to what response validation
// needs, plus the record of what was validated.
type openAPI struct {
	path    string
	schemas map[string]any
	ops     []operation

	mu        sync.Mutex
	validated map[string]map[string]int // operation (or push) → status → bodies validated
}

// operation is one method and path template of the document.
type operation struct {
	id        string
	method    string
	segments  []string // "" marks a {parameter}
	literals  int
	responses map[string]any
}

// findOpenAPI locates the document: $JAM_BAND_OPENAPI, else
// ../shared/docs/band/openapi.json from the module root. It returns "" when
// there is none.
func findOpenAPI() string {
	if p := os.Getenv(openAPIEnv); p != "" {
		return p
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return ""
	}
	root := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	p := filepath.Join(root, "..", "shared", "docs", "band", "openapi.json")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// loadOpenAPI parses the document at path and resolves every $ref it
// contains, so a broken document fails loudly rather than validating
// nothing.
func loadOpenAPI(path string) (*openAPI, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := decodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	root, _ := doc.(map[string]any)
	components, _ := root["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	paths, _ := root["paths"].(map[string]any)
	if len(schemas) == 0 || len(paths) == 0 {
		return nil, fmt.Errorf("%s has no components.schemas or paths", path)
	}
	o := &openAPI{path: path, schemas: schemas, validated: map[string]map[string]int{}}
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
			if id == "" {
				id = strings.ToUpper(method) + " " + tmpl
			}
			resp, _ := op["responses"].(map[string]any)
			o.ops = append(o.ops, newOperation(id, strings.ToUpper(method), tmpl, resp))
		}
	}
	var bad []string
	walkRefs(root, func(ref string) {
		if _, err := o.resolve(ref); err != nil {
			bad = append(bad, err.Error())
		}
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("%s has unresolvable $refs: %s", path, strings.Join(bad, "; "))
	}
	return o, nil
}

func newOperation(id, method, tmpl string, responses map[string]any) operation {
	op := operation{id: id, method: method, responses: responses}
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

// decodeJSON decodes with numbers kept exact, so "integer" can be checked.
func decodeJSON(b []byte) (any, error) {
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

// resolve returns the schema a $ref names. Band's schema names contain "/"
// and spaces unescaped, so the name after #/components/schemas/ is taken
// literally first and as an RFC 6901 pointer token second.
func (o *openAPI) resolve(ref string) (any, error) {
	name, ok := strings.CutPrefix(ref, schemaPrefix)
	if !ok {
		return nil, fmt.Errorf("$ref %q is outside %s", ref, schemaPrefix)
	}
	if s, ok := o.schemas[name]; ok {
		return s, nil
	}
	unescaped := strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	if s, ok := o.schemas[unescaped]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("$ref %q names no schema", ref)
}

// find returns the operation for a request path (query ignored), preferring
// the template with the most literal segments.
func (o *openAPI) find(method, path string) *operation {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var best *operation
	for i := range o.ops {
		op := &o.ops[i]
		if op.method != method || len(op.segments) != len(segs) {
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

// responseSchema returns the JSON schema declared for a status, trying the
// exact code, then 4XX-style ranges, then default.
func (op *operation) responseSchema(status int) (any, bool) {
	code := strconv.Itoa(status)
	for _, key := range []string{code, code[:1] + "XX", code[:1] + "xx", "default"} {
		r, ok := op.responses[key].(map[string]any)
		if !ok {
			continue
		}
		content, _ := r["content"].(map[string]any)
		for ct, v := range content {
			if !strings.Contains(ct, "json") {
				continue
			}
			media, _ := v.(map[string]any)
			if s, ok := media["schema"]; ok {
				return s, true
			}
		}
		return nil, false // declared without a JSON body
	}
	return nil, false
}

// checkResponse validates a REST response against its operation's schema
// for that status and records it. Undocumented paths and statuses are not
// the validator's business: the scenario checks status codes itself.
func (o *openAPI) checkResponse(t *testing.T, r response) {
	t.Helper()
	op := o.find(r.Method, r.Path)
	if op == nil {
		t.Errorf("OpenAPI: %s %s matches no operation of %s", r.Method, r.Path, o.path)
		return
	}
	schema, ok := op.responseSchema(r.Status)
	if !ok {
		return
	}
	v, err := decodeJSON(r.Body)
	if err != nil {
		t.Errorf("OpenAPI %s %d: body is not JSON (%v): %s", op.id, r.Status, err, r)
		return
	}
	if errs := o.validate(schema, v); len(errs) > 0 {
		t.Errorf("OpenAPI %s %d: body does not match the declared schema:\n  %s\nbody: %s", op.id, r.Status, strings.Join(errs, "\n  "), r)
	}
	o.record(op.id, strconv.Itoa(r.Status))
}

// checkSchema validates a JSON value against a named component schema.
func (o *openAPI) checkSchema(t *testing.T, what, schema string, b []byte) {
	t.Helper()
	v, err := decodeJSON(b)
	if err != nil {
		t.Errorf("OpenAPI %s: not JSON (%v): %s", what, err, b)
		return
	}
	if errs := o.validate(map[string]any{"$ref": schemaPrefix + schema}, v); len(errs) > 0 {
		t.Errorf("OpenAPI %s: does not match %s:\n  %s\nvalue: %s", what, schema, strings.Join(errs, "\n  "), b)
	}
	o.record(what, schema)
}

func (o *openAPI) record(what, status string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.validated[what] == nil {
		o.validated[what] = map[string]int{}
	}
	o.validated[what][status]++
}

// summary lists what was validated, one operation per line.
func (o *openAPI) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var lines []string
	for what, statuses := range o.validated {
		var parts []string
		for st, n := range statuses {
			parts = append(parts, fmt.Sprintf("%s×%d", st, n))
		}
		sort.Strings(parts)
		lines = append(lines, what+" "+strings.Join(parts, " "))
	}
	sort.Strings(lines)
	return fmt.Sprintf("%d operations/pushes validated against %s:\n%s", len(lines), o.path, strings.Join(lines, "\n"))
}

// validate returns one message per violation, each prefixed with the JSON
// pointer of the offending value.
func (o *openAPI) validate(schema, v any) []string {
	var errs []string
	o.check(schema, v, "", 0, &errs)
	return errs
}

// maxDepth stops a $ref cycle that consumes no data.
const maxDepth = 100

func (o *openAPI) check(schema, v any, ptr string, depth int, errs *[]string) {
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
		o.checkObject(s, v, ptr, depth, errs, fail)
	default:
		fail("schema is neither an object nor a boolean: %v", schema)
	}
}

func (o *openAPI) checkObject(s map[string]any, v any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
	if ref, ok := s["$ref"].(string); ok {
		target, err := o.resolve(ref)
		if err != nil {
			fail("%v", err)
			return
		}
		o.check(target, v, ptr, depth+1, errs)
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
	o.checkComposition(s, v, ptr, depth, errs, fail)
	switch x := v.(type) {
	case map[string]any:
		o.checkProperties(s, x, ptr, depth, errs, fail)
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range x {
				o.check(items, e, ptr+"/"+strconv.Itoa(i), depth+1, errs)
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

func (o *openAPI) checkComposition(s map[string]any, v any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
	matches := func(sub any) (bool, []string) {
		var e []string
		o.check(sub, v, ptr, depth+1, &e)
		return len(e) == 0, e
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			o.check(sub, v, ptr, depth+1, errs)
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

func (o *openAPI) checkProperties(s map[string]any, x map[string]any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
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
			o.check(p, x[k], child, depth+1, errs)
			continue
		}
		if ap, ok := s["additionalProperties"]; ok {
			o.check(ap, x[k], child, depth+1, errs)
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
