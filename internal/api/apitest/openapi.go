package apitest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jamhq/jam/internal/openapicheck"
)

// OpenAPI is the control API's OpenAPI document, reduced to what response
// validation needs, with the record of what it validated and of the
// responses that did not match. It is safe for concurrent use.
type OpenAPI struct {
	doc *openapicheck.Document

	mu         sync.Mutex
	validated  map[string]map[string]int // operation → status → responses
	violations []string
}

const schemaPrefix = openapicheck.SchemaPrefix

// LoadOpenAPI parses an OpenAPI 3.1 document and resolves every $ref in
// it, so a broken document fails loudly rather than validating nothing.
func LoadOpenAPI(doc []byte) (*OpenAPI, error) {
	d, err := openapicheck.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	if ver := d.Version(); !strings.HasPrefix(ver, "3.1") {
		return nil, fmt.Errorf("openapi document: version %q, want 3.1.x", ver)
	}
	ops := d.Operations()
	if len(ops) == 0 {
		return nil, errors.New("openapi document has no paths")
	}
	for _, op := range ops {
		if len(op.Responses) == 0 {
			return nil, fmt.Errorf("openapi document: %s declares no responses", op)
		}
	}
	return &OpenAPI{doc: d, validated: map[string]map[string]int{}}, nil
}

// Operations lists the document's operations as "METHOD /path/{param}",
// sorted.
func (o *OpenAPI) Operations() []string {
	ops := o.doc.Operations()
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.String()
	}
	return out
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
	op := o.doc.Find(r.Method, r.Path)
	if op == nil {
		if r.Status == http.StatusNotFound || r.Status == http.StatusMethodNotAllowed || r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			// No such route (or refused before routing): the error envelope.
			return o.checkBody("unrouted", r, map[string]any{"$ref": schemaPrefix + "ErrorBody"}, "application/json")
		}
		return []string{fmt.Sprintf("%s %s matches no operation of the document: %s", r.Method, r.Path, r)}
	}
	content, key, ok := op.Response(r.Status)
	if !ok {
		return []string{fmt.Sprintf("%s: status %d is not declared: %s", op.String(), r.Status, r)}
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if len(content) == 0 {
		if len(r.Body) > 0 {
			return []string{fmt.Sprintf("%s %s: declared without a body, got %q: %s", op.String(), key, mt, r)}
		}
		o.record(op.String(), r.Status)
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("%s %d: Content-Type %q: %v: %s", op.String(), r.Status, r.Header.Get("Content-Type"), err, r)}
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		var have []string
		for k := range content {
			have = append(have, k)
		}
		sort.Strings(have)
		return []string{fmt.Sprintf("%s %d: Content-Type %s is not declared (declared: %s): %s", op.String(), r.Status, mt, strings.Join(have, ", "), r)}
	}
	schema, ok := media["schema"]
	if !ok {
		o.record(op.String(), r.Status)
		return nil // a body the document does not describe (text/plain)
	}
	errs := o.checkBody(op.String(), r, schema, mt)
	if len(errs) == 0 {
		o.record(op.String(), r.Status)
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
		v, err := openapicheck.DecodeJSON(b)
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
func (o *OpenAPI) Validate(schema, v any) []string { return o.doc.Validate(schema, v) }

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
