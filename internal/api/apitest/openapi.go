package apitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// OpenAPI is the control API's OpenAPI document, reduced to what response
// validation needs, with the record of what it validated and of the
// responses that did not match. It is safe for concurrent use.
type OpenAPI struct {
	schemas map[string]any
	ops     []operation

	mu         sync.Mutex
	validated  map[string]map[string]int // operation → status → responses
	violations []string
}

// operation is one method and path template of the document.
type operation struct {
	id        string // "GET /v1/turns/{turn}"
	method    string
	segments  []string // "" marks a {parameter}
	literals  int
	responses map[string]any
}

const schemaPrefix = "#/components/schemas/"

// LoadOpenAPI parses an OpenAPI 3.1 document and resolves every $ref in
// it, so a broken document fails loudly rather than validating nothing.
func LoadOpenAPI(doc []byte) (*OpenAPI, error) {
	v, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("parse openapi document: %w", err)
	}
	root, _ := v.(map[string]any)
	if ver, _ := root["openapi"].(string); !strings.HasPrefix(ver, "3.1") {
		return nil, fmt.Errorf("openapi document: version %q, want 3.1.x", ver)
	}
	components, _ := root["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	paths, _ := root["paths"].(map[string]any)
	if len(paths) == 0 {
		return nil, errors.New("openapi document has no paths")
	}
	o := &OpenAPI{schemas: schemas, validated: map[string]map[string]int{}}
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
			resp, _ := op["responses"].(map[string]any)
			if len(resp) == 0 {
				return nil, fmt.Errorf("openapi document: %s %s declares no responses", strings.ToUpper(method), tmpl)
			}
			o.ops = append(o.ops, newOperation(strings.ToUpper(method), tmpl, resp))
		}
	}
	sort.Slice(o.ops, func(i, j int) bool { return o.ops[i].id < o.ops[j].id })
	var bad []string
	walkRefs(root, func(ref string) {
		if _, err := o.resolve(ref); err != nil {
			bad = append(bad, err.Error())
		}
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("openapi document has unresolvable $refs: %s", strings.Join(bad, "; "))
	}
	return o, nil
}

// Operations lists the document's operations as "METHOD /path/{param}",
// sorted.
func (o *OpenAPI) Operations() []string {
	out := make([]string, len(o.ops))
	for i, op := range o.ops {
		out[i] = op.id
	}
	return out
}

func newOperation(method, tmpl string, responses map[string]any) operation {
	op := operation{id: method + " " + tmpl, method: method, responses: responses}
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

func (o *OpenAPI) resolve(ref string) (any, error) {
	name, ok := strings.CutPrefix(ref, schemaPrefix)
	if !ok {
		return nil, fmt.Errorf("$ref %q is outside %s", ref, schemaPrefix)
	}
	if s, ok := o.schemas[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("$ref %q names no schema", ref)
}

// find returns the operation for a request path (query ignored), preferring
// the template with the most literal segments.
func (o *OpenAPI) find(method, path string) *operation {
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

// response returns what the document declares for a status: the exact
// code, else the 4XX-style range, else default. ok is false when it
// declares nothing that covers the status.
func (op *operation) response(status int) (content map[string]any, key string, ok bool) {
	code := strconv.Itoa(status)
	for _, key := range []string{code, code[:1] + "XX", "default"} {
		r, ok := op.responses[key].(map[string]any)
		if !ok {
			continue
		}
		content, _ := r["content"].(map[string]any)
		return content, key, true
	}
	return nil, "", false
}

// Response is one answer of the API, as the client received it.
type Response struct {
	Method string
	Path   string // the request's path, query included or not
	Status int
	Header http.Header
	Body   []byte
}

func (r Response) String() string {
	b := r.Body
	if len(b) > 2000 {
		b = append(b[:2000:2000], "…"...)
	}
	return fmt.Sprintf("%s %s → %d %s", r.Method, r.Path, r.Status, b)
}

// IsAPIPath reports whether a path is the API's (and so documented),
// rather than the web UI's.
func IsAPIPath(p string) bool {
	p, _, _ = strings.Cut(p, "?")
	return p == "/v1" || strings.HasPrefix(p, "/v1/") || p == "/metrics"
}

// Check validates one response against the document: the path and method
// must be an operation (a 404 or 405 in the error envelope answers one
// that is not), the status must be declared, the Content-Type must be one
// the status declares, and a JSON body (each line of an NDJSON one, each
// data line of an event stream) must match its schema. It returns one
// message per violation, and records what it validated.
func (o *OpenAPI) Check(r Response) []string {
	if r.Status >= 300 && r.Status < 400 && len(r.Body) == 0 {
		return nil // ServeMux's path-cleaning redirect
	}
	op := o.find(r.Method, r.Path)
	if op == nil {
		if r.Status == http.StatusNotFound || r.Status == http.StatusMethodNotAllowed || r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			// No such route (or refused before routing): the error envelope.
			return o.checkBody("unrouted", r, map[string]any{"$ref": schemaPrefix + "ErrorBody"}, "application/json")
		}
		return []string{fmt.Sprintf("%s %s matches no operation of the document: %s", r.Method, r.Path, r)}
	}
	content, key, ok := op.response(r.Status)
	if !ok {
		return []string{fmt.Sprintf("%s: status %d is not declared: %s", op.id, r.Status, r)}
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if len(content) == 0 {
		if len(r.Body) > 0 {
			return []string{fmt.Sprintf("%s %s: declared without a body, got %q: %s", op.id, key, mt, r)}
		}
		o.record(op.id, r.Status)
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("%s %d: Content-Type %q: %v: %s", op.id, r.Status, r.Header.Get("Content-Type"), err, r)}
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		var have []string
		for k := range content {
			have = append(have, k)
		}
		sort.Strings(have)
		return []string{fmt.Sprintf("%s %d: Content-Type %s is not declared (declared: %s): %s", op.id, r.Status, mt, strings.Join(have, ", "), r)}
	}
	schema, ok := media["schema"]
	if !ok {
		o.record(op.id, r.Status)
		return nil // a body the document does not describe (text/plain)
	}
	errs := o.checkBody(op.id, r, schema, mt)
	if len(errs) == 0 {
		o.record(op.id, r.Status)
	}
	return errs
}

// checkBody validates a body of media type mt against schema.
func (o *OpenAPI) checkBody(id string, r Response, schema any, mt string) []string {
	var values [][]byte
	switch mt {
	case "application/json":
		values = [][]byte{r.Body}
	case "application/x-ndjson":
		for _, line := range bytes.Split(r.Body, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				values = append(values, line)
			}
		}
	case "text/event-stream":
		sc := bufio.NewScanner(bytes.NewReader(r.Body))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				values = append(values, append([]byte(nil), bytes.TrimSpace(data)...))
			}
		}
	default:
		return []string{fmt.Sprintf("%s %d: no JSON schema applies to %s: %s", id, r.Status, mt, r)}
	}
	var errs []string
	for _, b := range values {
		v, err := decodeJSON(b)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %d: body is not JSON (%v): %s", id, r.Status, err, r))
			continue
		}
		if e := o.Validate(schema, v); len(e) > 0 {
			errs = append(errs, fmt.Sprintf("%s %d: body does not match the declared schema:\n  %s\n%s", id, r.Status, strings.Join(e, "\n  "), r))
		}
	}
	return errs
}

func (o *OpenAPI) record(id string, status int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.validated[id] == nil {
		o.validated[id] = map[string]int{}
	}
	o.validated[id][strconv.Itoa(status)]++
}

// Validated returns, per operation, the statuses validated and how often.
func (o *OpenAPI) Validated() map[string]map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]map[string]int{}
	for id, st := range o.validated {
		out[id] = map[string]int{}
		for k, n := range st {
			out[id][k] = n
		}
	}
	return out
}

// Violations returns the messages of every response Middleware saw that
// did not match.
func (o *OpenAPI) Violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.violations...)
}

// Middleware checks every response next writes to an API path (see
// IsAPIPath) once the handler returns, and keeps the violations (see
// Violations). The writer it hands to next unwraps to the original, so
// http.ResponseController (flushes, deadlines) still reaches it.
func (o *OpenAPI) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.truncated && rec.limit == maxRecorded {
			o.mu.Lock()
			o.violations = append(o.violations, fmt.Sprintf("%s %s: body over %d bytes, not validated", r.Method, r.URL.Path, maxRecorded))
			o.mu.Unlock()
			return
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		if errs := o.Check(Response{Method: r.Method, Path: r.URL.EscapedPath(), Status: status, Header: w.Header(), Body: rec.recorded()}); len(errs) > 0 {
			o.mu.Lock()
			o.violations = append(o.violations, errs...)
			o.mu.Unlock()
		}
	})
}

// maxRecorded bounds the body bytes kept of one response; a stream's
// (NDJSON, event stream) keeps only its first maxStreamRecorded bytes, so
// recording never slows a stream down, and its complete lines are checked.
const (
	maxRecorded       = 8 << 20
	maxStreamRecorded = 64 << 10
)

type recorder struct {
	http.ResponseWriter
	status    int
	limit     int
	body      bytes.Buffer
	truncated bool
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
		r.limit = maxRecorded
		if mt, _, _ := mime.ParseMediaType(r.Header().Get("Content-Type")); mt == "application/x-ndjson" || mt == "text/event-stream" {
			r.limit = maxStreamRecorded
		}
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if room := r.limit - r.body.Len(); room >= len(b) {
		r.body.Write(b)
	} else if !r.truncated {
		r.body.Write(b[:max(room, 0)])
		r.truncated = true
	}
	return r.ResponseWriter.Write(b)
}

// recorded returns the body kept: when it was cut, up to its last complete
// line.
func (r *recorder) recorded() []byte {
	b := r.body.Bytes()
	if r.truncated {
		b = b[:bytes.LastIndexByte(b, '\n')+1]
	}
	return b
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Validate returns the violations of schema by v (a value decoded with
// json.Number), one message each, prefixed with the JSON pointer of the
// offending value.
func (o *OpenAPI) Validate(schema, v any) []string {
	var errs []string
	o.check(schema, v, "", 0, &errs)
	return errs
}

// maxDepth stops a $ref cycle that consumes no data.
const maxDepth = 100

func (o *OpenAPI) check(schema, v any, ptr string, depth int, errs *[]string) {
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

func (o *OpenAPI) checkObject(s map[string]any, v any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
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

func (o *OpenAPI) checkComposition(s map[string]any, v any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
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

func (o *OpenAPI) checkProperties(s map[string]any, x map[string]any, ptr string, depth int, errs *[]string, fail func(string, ...any)) {
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

// Transport returns a RoundTripper that checks, on the client's side,
// every JSON answer base receives for an API path, and keeps the
// violations (see Violations). A stream (NDJSON, event stream) passes
// through unchecked: it has no end to wait for.
func (o *OpenAPI) Transport(base http.RoundTripper) http.RoundTripper {
	return roundTripper{o: o, base: base}
}

type roundTripper struct {
	o    *OpenAPI
	base http.RoundTripper
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || !IsAPIPath(req.URL.Path) {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/x-ndjson" || mt == "text/event-stream" {
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxRecorded+1))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{rerr}))
		return resp, nil // the client sees the read error; nothing to check
	}
	if errs := t.o.Check(Response{Method: req.Method, Path: req.URL.EscapedPath(), Status: resp.StatusCode, Header: resp.Header, Body: body}); len(errs) > 0 {
		t.o.mu.Lock()
		t.o.violations = append(t.o.violations, errs...)
		t.o.mu.Unlock()
	}
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// CloseIdleConnections closes base's idle connections, so
// http.Client.CloseIdleConnections reaches it through the wrapper.
func (t roundTripper) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
