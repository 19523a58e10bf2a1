package api

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
)

// suiteOpenAPI validates every response of every Server the package's
// tests start (see wrapHandler); TestMain fails the run on a violation.
var suiteOpenAPI *apitest.OpenAPI

func TestMain(m *testing.M) {
	oas, err := apitest.LoadOpenAPI(openAPIDocument)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi.json:", err)
		os.Exit(1)
	}
	suiteOpenAPI = oas
	wrapHandler = oas.Middleware
	code := m.Run()
	if v := oas.Violations(); len(v) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d control API responses do not match openapi.json:\n%s\n", len(v), strings.Join(v, "\n\n"))
		code = 1
	}
	if code == 0 && !testing.Short() && runsEveryTest() {
		// After a full run, every documented operation answered at least
		// once and was validated: a route no test reaches is reported.
		var missing []string
		validated := oas.Validated()
		for _, op := range oas.Operations() {
			if len(validated[op]) == 0 {
				missing = append(missing, op)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "note: no test response validated for %d operations: %s\n", len(missing), strings.Join(missing, ", "))
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runsEveryTest reports whether no -run filter was given.
func runsEveryTest() bool {
	f := flag.Lookup("test.run")
	return f == nil || f.Value.String() == ""
}

// registeredRoutes returns every pattern the package's source registers
// with HandleFunc or Handle.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: a route registered with a pattern that is not a string literal", fset.Position(call.Pos()))
				return true
			}
			p, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			out = append(out, p)
			return true
		})
	}
	sort.Strings(out)
	return out
}

// Every route the source registers is in the document, and the document
// has no operation that is not a route.
func TestOpenAPI_coversEveryRoute(t *testing.T) {
	t.Parallel()
	routes := registeredRoutes(t)
	require.Greater(t, len(routes), 40, "the route scan found too few routes: %v", routes)
	ops := suiteOpenAPI.Operations()
	for _, r := range routes {
		require.Contains(t, ops, r, "route %s is missing from openapi.json (add it to openAPIRoutes and regenerate)", r)
	}
	for _, op := range ops {
		require.Contains(t, routes, op, "openapi.json documents %s, which is no route", op)
	}
	require.Len(t, ops, len(routes))
}

func TestOpenAPI_servedAndValid(t *testing.T) {
	t.Parallel()
	b := setup(t, okBackend(), "")
	resp, err := b.unix.Get("http://jamd/v1/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, openAPIDocument, body)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Paths["/v1/turns/{turn}"], "get")
	_, err = apitest.LoadOpenAPI(body)
	require.NoError(t, err)
}

// The validator catches responses that break the document: a wrong type,
// a missing required field, an undeclared field, an undeclared status or
// content type, and a route that is not documented.
func TestOpenAPI_catchesWrongResponses(t *testing.T) {
	t.Parallel()
	oas, err := apitest.LoadOpenAPI(openAPIDocument)
	require.NoError(t, err)
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for _, tc := range []struct {
		name string
		r    apitest.Response
		want string // in the violation; "" for none
	}{
		{"valid status", apitest.Response{Method: "GET", Path: "/v1/status", Status: 200, Header: json, Body: mustJSON(t, wire.Status{State: wire.StateRunning, PID: 7})}, ""},
		{"valid error", apitest.Response{Method: "GET", Path: "/v1/turns/t1", Status: 404, Header: json, Body: []byte(`{"error":{"code":"not_found","message":"no turn"}}`)}, ""},
		{"wrong type", apitest.Response{Method: "POST", Path: "/v1/rooms/r/agents", Status: 200, Header: json, Body: []byte(`{"ok":"yes"}`)}, `/ok: want type boolean, got string`},
		{"missing field", apitest.Response{Method: "GET", Path: "/v1/accounts", Status: 200, Header: json, Body: []byte(`{}`)}, `required property "accounts" is missing`},
		{"undeclared field", apitest.Response{Method: "POST", Path: "/v1/turns/t/cancel", Status: 200, Header: json, Body: []byte(`{"ok":true,"extra":1}`)}, `/extra: no value is allowed here`},
		{"wrong status", apitest.Response{Method: "POST", Path: "/v1/bindings", Status: 200, Header: json, Body: []byte(`{"ok":true}`)}, `required property "error" is missing`},
		{"not JSON", apitest.Response{Method: "GET", Path: "/v1/sessions", Status: 200, Header: json, Body: []byte(`sessions`)}, `body is not JSON`},
		{"wrong content type", apitest.Response{Method: "GET", Path: "/v1/sessions", Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(`{"sessions":[]}`)}, `Content-Type text/html is not declared`},
		{"undocumented route", apitest.Response{Method: "GET", Path: "/v1/secret", Status: 200, Header: json, Body: []byte(`{}`)}, `matches no operation`},
		{"bad event line", apitest.Response{Method: "GET", Path: "/v1/events", Status: 200, Header: http.Header{"Content-Type": {"application/x-ndjson"}},
			Body: []byte(`{"seq":1,"kind":"k","at":"2026-01-02T03:04:05Z"}` + "\n" + `{"seq":"2","kind":"k","at":"2026-01-02T03:04:05Z"}` + "\n")}, `/seq: want type integer, got string`},
		{"bad date", apitest.Response{Method: "GET", Path: "/v1/events", Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: []byte("id: 1\ndata: {\"seq\":1,\"kind\":\"k\",\"at\":\"yesterday\"}\n\n")}, `"yesterday" is not a valid date-time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := oas.Check(tc.r)
			if tc.want == "" {
				require.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			require.Contains(t, strings.Join(errs, "\n"), tc.want)
		})
	}
}

// A deliberately wrong handler behind the same middleware the suite runs
// every Server behind is caught.
func TestOpenAPI_middlewareCatchesAWrongHandler(t *testing.T) {
	t.Parallel()
	oas, err := apitest.LoadOpenAPI(openAPIDocument)
	require.NoError(t, err)
	// Every path gets a turn list: right for a session's turns, wrong for
	// one turn.
	wrong := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.Turns{Turns: []wire.Turn{}})
	})
	srv := httptest.NewServer(oas.Middleware(wrong))
	t.Cleanup(srv.Close)
	for _, p := range []string{"/v1/sessions/s/turns", "/v1/turns/t1", "/ui/page"} {
		resp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	v := oas.Violations()
	require.Len(t, v, 1, "%v", v)
	require.Contains(t, v[0], "GET /v1/turns/{turn} 200")
	require.Contains(t, v[0], `/turns: no value is allowed here`)
}

// The suite's servers run behind the validator: a request that reaches a
// handler is validated and counted.
func TestOpenAPI_suiteServersAreValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, okBackend(), "")
	before := suiteOpenAPI.Validated()["GET /v1/status"]["200"]
	resp, err := b.unix.Get("http://jamd/v1/status")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.NoError(t, b.srv.Stop(context.Background())) // the handler has returned
	require.Greater(t, suiteOpenAPI.Validated()["GET /v1/status"]["200"], before)
	require.True(t, slices.Contains(suiteOpenAPI.Operations(), "GET /metrics"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// The routes no other test reaches answer as documented (the suite's
// validator checks the bodies).
func TestOpenAPI_remainingRoutes(t *testing.T) {
	t.Parallel()
	backend := okBackend()
	backend.QuarantineFunc = func(context.Context) ([]wire.QuarantinedRecord, error) {
		return []wire.QuarantinedRecord{{ID: 1, Source: "spool", Seq: 9, Reason: "unreadable", QuarantinedAt: created, SealedBytes: 12}}, nil
	}
	backend.CancelTurnFunc = func(context.Context, string) error { return nil }
	backend.WorktreeRestoreFunc = func(_ context.Context, session string, _ wire.WorktreeRestoreRequest) (wire.Worktree, error) {
		return wire.Worktree{ID: "w1", Session: session, Path: "/w"}, nil
	}
	b := setup(t, backend, "")
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/v1/quarantine", `"reason":"unreadable"`},
		{http.MethodPost, "/v1/turns/t1/cancel", `"ok":true`},
		{http.MethodPost, "/v1/worktrees/s1/restore", `"session":"s1"`},
	} {
		status, _, body := call(t, b, c.method, c.path, "")
		require.Equal(t, http.StatusOK, status, "%s %s: %s", c.method, c.path, body)
		require.Contains(t, body, c.want)
	}
}

// The client-side check (what the daemon's tests use) catches a wrong
// answer too, and hands the client the body it read.
func TestOpenAPI_transportCatchesAWrongAnswer(t *testing.T) {
	t.Parallel()
	oas, err := apitest.LoadOpenAPI(openAPIDocument)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/agents" {
			_, _ = io.WriteString(w, `{"agents":[]}`)
			return
		}
		_, _ = io.WriteString(w, `{"agents":[{"name":3}]}`)
	}))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: oas.Transport(http.DefaultTransport.(*http.Transport).Clone())}
	t.Cleanup(hc.CloseIdleConnections)
	for _, p := range []string{"/v1/agents", "/v1/accounts"} {
		resp, err := hc.Get(srv.URL + p)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(body), `{"agents":`), "the client still reads the body")
	}
	v := oas.Violations()
	require.Len(t, v, 1, "%v", v)
	require.Contains(t, v[0], "GET /v1/accounts 200")
	require.Contains(t, v[0], `required property "accounts" is missing`)
}

// FuzzOpenAPI_check: the validator never panics on any answer, and a body
// that is not JSON is never accepted for a JSON operation.
func FuzzOpenAPI_check(f *testing.F) {
	oas, err := apitest.LoadOpenAPI(openAPIDocument)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("GET", "/v1/status", 200, "application/json", []byte(`{"state":"running"}`))
	f.Add("GET", "/v1/events", 200, "text/event-stream", []byte("data: {\"seq\":1}\n\n"))
	f.Add("GET", "/v1/events", 200, "application/x-ndjson", []byte("{}\n[]\n"))
	f.Add("POST", "/v1/turns/x/cancel", 404, "application/json", []byte(`{"error":{"code":"not_found","message":"m"}}`))
	f.Add("GET", "/metrics", 200, "text/plain; version=0.0.4", []byte("# x\n"))
	f.Add("GET", "/v1/rooms/{room}/x", 301, "", []byte(nil))
	f.Fuzz(func(t *testing.T, method, path string, status int, ct string, body []byte) {
		if status < 100 || status > 999 {
			return
		}
		errs := oas.Check(apitest.Response{Method: method, Path: path, Status: status, Header: http.Header{"Content-Type": {ct}}, Body: body})
		if !json.Valid(body) && strings.HasPrefix(ct, "application/json") && len(errs) == 0 && len(body) > 0 {
			if status < 300 || status >= 400 {
				t.Fatalf("%s %s %d: invalid JSON %q accepted", method, path, status, body)
			}
		}
	})
}
