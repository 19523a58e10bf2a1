package bandtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jamhq/jam/internal/openapicheck"
)

// openAPIEnv names an OpenAPI document to use instead of the one next to
// the repository.
const openAPIEnv = "JAM_BAND_OPENAPI"

// openAPI is Band's OpenAPI document, plus the record of what was
// validated.
type openAPI struct {
	path string
	doc  *openapicheck.Document

	mu        sync.Mutex
	validated map[string]map[string]int // operation (or push) → status → bodies validated
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
	doc, err := openapicheck.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if doc.NumSchemas() == 0 || len(doc.Operations()) == 0 {
		return nil, fmt.Errorf("%s has no components.schemas or paths", path)
	}
	return &openAPI{path: path, doc: doc, validated: map[string]map[string]int{}}, nil
}

// find returns the operation for a request path (query ignored), or nil.
func (o *openAPI) find(method, path string) *openapicheck.Operation {
	return o.doc.Find(method, path)
}

// opID names an operation by its operationId, else by method and template.
func opID(op *openapicheck.Operation) string {
	if op.OperationID != "" {
		return op.OperationID
	}
	return op.String()
}

// responseSchema returns the JSON schema declared for a status (the exact
// code, then 4XX-style ranges, then default): the schema of its first
// JSON media type. ok is false when the status is undeclared or declared
// without a JSON body.
func responseSchema(op *openapicheck.Operation, status int) (any, bool) {
	content, _, ok := op.Response(status)
	if !ok {
		return nil, false
	}
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
	schema, ok := responseSchema(op, r.Status)
	if !ok {
		return
	}
	v, err := openapicheck.DecodeJSON(r.Body)
	if err != nil {
		t.Errorf("OpenAPI %s %d: body is not JSON (%v): %s", opID(op), r.Status, err, r)
		return
	}
	if errs := o.doc.Validate(schema, v); len(errs) > 0 {
		t.Errorf("OpenAPI %s %d: body does not match the declared schema:\n  %s\nbody: %s", opID(op), r.Status, strings.Join(errs, "\n  "), r)
	}
	o.record(opID(op), strconv.Itoa(r.Status))
}

// checkSchema validates a JSON value against a named component schema.
func (o *openAPI) checkSchema(t *testing.T, what, schema string, b []byte) {
	t.Helper()
	v, err := openapicheck.DecodeJSON(b)
	if err != nil {
		t.Errorf("OpenAPI %s: not JSON (%v): %s", what, err, b)
		return
	}
	if errs := o.doc.Validate(map[string]any{"$ref": openapicheck.SchemaPrefix + schema}, v); len(errs) > 0 {
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
