package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
)

// updateOpenAPI rewrites openapi.json from openAPIRoutes and the wire
// types: go test ./internal/api -run TestOpenAPIDocumentIsCurrent -update-openapi
var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite openapi.json from the route table and the wire types")

// docRoute is one operation of the document.
type docRoute struct {
	pattern string // as routes.go registers it
	summary string
	status  int // the success status
	resp    any // the success body's wire type; nil for none
	// media overrides the success body's media types (default
	// application/json); a nil schema means text the document does not
	// describe.
	media   []string
	req     any  // the request body's wire type; nil for none
	reqOpt  bool // the body may be left out
	query   []string
	noError bool // no JSON error envelope (none besides the mux's)
}

// openAPIRoutes is the control API as the document describes it; a test
// checks it against the routes registered in the package's source.
var openAPIRoutes = []docRoute{
	{pattern: "GET /v1/status", summary: "The daemon's status", status: 200, resp: wire.Status{}},
	{pattern: "GET /v1/accounts", summary: "List accounts", status: 200, resp: wire.AccountList{}},
	{pattern: "POST /v1/accounts", summary: "Add an account", status: 201, resp: wire.Account{}, req: wire.AccountAddRequest{}},
	{pattern: "POST /v1/accounts/{profile}/remove", summary: "Remove an account no agent uses", status: 200, resp: wire.AccountRemoved{}, req: struct{}{}, reqOpt: true},
	{pattern: "GET /v1/agents", summary: "List agents", status: 200, resp: wire.AgentList{}},
	{pattern: "POST /v1/agents", summary: "Add an agent", status: 201, resp: wire.Agent{}, req: wire.AgentAddRequest{}},
	{pattern: "POST /v1/agents/{agent}/config", summary: "Change an owned agent's configuration", status: 200, resp: wire.AgentRuntimeStatus{}, req: wire.AgentConfigRequest{}},
	{pattern: "POST /v1/agents/{agent}/remove", summary: "Remove an agent", status: 200, resp: wire.AgentRemoved{}, req: wire.AgentRemoveRequest{}, reqOpt: true},
	{pattern: "POST /v1/agents/{agent}/restart", summary: "Restart an owned agent's processes", status: 200, resp: wire.AgentRestarted{}, req: struct{}{}, reqOpt: true},
	{pattern: "GET /v1/rooms", summary: "List rooms", status: 200, resp: wire.RoomList{}, query: []string{"account"}},
	{pattern: "POST /v1/rooms", summary: "Create a room", status: 201, resp: wire.Room{}, req: wire.RoomCreateRequest{}},
	{pattern: "POST /v1/rooms/{room}/agents", summary: "Add an agent to a room", status: 200, resp: wire.OK{}, req: wire.RoomAddRequest{}},
	{pattern: "POST /v1/rooms/{room}/leave", summary: "Take an agent out of a room", status: 200, resp: wire.RoomLeft{}, req: wire.RoomLeaveRequest{}},
	{pattern: "GET /v1/rooms/{room}/messages", summary: "A room's messages", status: 200, resp: wire.RoomMessages{}, query: []string{"account", "limit"}},
	{pattern: "POST /v1/rooms/{room}/messages", summary: "Post to a room as a person", status: 201, resp: wire.RoomPostResult{}, req: wire.RoomPostRequest{}},
	{pattern: "GET /v1/rooms/{room}/participants", summary: "A room's participants", status: 200, resp: wire.ParticipantList{}, query: []string{"account"}},
	{pattern: "POST /v1/bindings", summary: "Bind an agent to a room", status: 201, resp: wire.Binding{}, req: wire.BindRequest{}},
	{pattern: "DELETE /v1/bindings/{binding}", summary: "Detach a binding", status: 200, resp: wire.OK{}},
	{pattern: "GET /v1/inbox", summary: "An attached agent's queued messages", status: 200, resp: wire.Inbox{}, query: []string{"agent", "room", "unrouted", "limit", "after"}},
	{pattern: "POST /v1/waitInbox", summary: "Wait for a queued message (long poll)", status: 200, resp: wire.Inbox{}, req: wire.WaitRequest{}, reqOpt: true},
	{pattern: "POST /v1/messages/{msg}/reply", summary: "Reply to a queued message, settling it", status: 200, resp: wire.ReplyResult{}, req: wire.ReplyRequest{}},
	{pattern: "POST /v1/messages/{msg}/ack", summary: "Acknowledge a queued message without a reply", status: 200, resp: wire.OK{}, req: wire.AckRequest{}, reqOpt: true},
	{pattern: "POST /v1/send", summary: "Send a message as an agent", status: 200, resp: wire.SendResult{}, req: wire.SendRequest{}},
	{pattern: "POST /v1/notices", summary: "Queue a local notice for an agent", status: 200, resp: wire.NoticeResult{}, req: wire.NoticeRequest{}},
	{pattern: "GET /v1/events", summary: "The event stream (NDJSON, or Server-Sent Events)", status: 200, resp: wire.Event{}, media: []string{"application/x-ndjson", "text/event-stream"}, query: []string{"after", "format"}},
	{pattern: "GET /v1/sessions", summary: "List sessions", status: 200, resp: wire.Sessions{}},
	{pattern: "POST /v1/sessions/{session}/archive", summary: "Archive a session", status: 200, resp: wire.Session{}, req: struct{}{}, reqOpt: true},
	{pattern: "POST /v1/sessions/{session}/close", summary: "Close a session for good", status: 200, resp: wire.Session{}, req: struct{}{}, reqOpt: true},
	{pattern: "GET /v1/sessions/{session}/turns", summary: "A session's turns", status: 200, resp: wire.Turns{}},
	{pattern: "GET /v1/sessions/{session}/messages", summary: "A session's accepted messages", status: 200, resp: wire.SessionMessages{}},
	{pattern: "POST /v1/sessions/{session}/messages", summary: "Send a person's message to a session", status: 200, resp: wire.SessionSendResult{}, req: wire.SessionSendRequest{}},
	{pattern: "GET /v1/turns/{turn}", summary: "One turn with its executions", status: 200, resp: wire.Turn{}},
	{pattern: "POST /v1/turns/{turn}/cancel", summary: "Cancel a queued or running turn", status: 200, resp: wire.OK{}, req: struct{}{}, reqOpt: true},
	{pattern: "POST /v1/turns/{turn}/retry", summary: "Run a failed turn's message again", status: 200, resp: wire.Turn{}, req: struct{}{}, reqOpt: true},
	{pattern: "GET /v1/turns/{turn}/output", summary: "What a turn streamed", status: 200, resp: wire.TurnOutput{}},
	{pattern: "GET /v1/usage", summary: "Token usage and cost", status: 200, resp: wire.UsageReport{}, query: []string{"by", "since"}},
	{pattern: "GET /v1/worktrees", summary: "List the sessions' worktrees", status: 200, resp: wire.Worktrees{}},
	{pattern: "POST /v1/worktrees/{session}/archive", summary: "Archive a session's worktree", status: 200, resp: wire.Worktree{}, req: struct{}{}, reqOpt: true},
	{pattern: "POST /v1/worktrees/{session}/remove", summary: "Remove a session's worktree", status: 200, resp: wire.Worktree{}, req: wire.WorktreeRemoveRequest{}, reqOpt: true},
	{pattern: "POST /v1/worktrees/{session}/restore", summary: "Restore a session's archived or removed worktree from a checkpoint", status: 200, resp: wire.Worktree{}, req: wire.WorktreeRestoreRequest{}, reqOpt: true},
	{pattern: "GET /v1/quarantine", summary: "Records taken out of the inbound pipeline", status: 200, resp: wire.QuarantineList{}},
	{pattern: "POST /v1/ui/login", summary: "Mint a one-time web UI sign-in link", status: 200, resp: wire.UILogin{}},
	{pattern: "GET /v1/changesets", summary: "List change sets, newest first", status: 200, resp: wire.ChangeSets{}, query: []string{"session", "turn", "limit"}},
	{pattern: "GET /v1/changesets/{cs}", summary: "One change set's manifest and figures", status: 200, resp: wire.ChangeSet{}},
	{pattern: "GET /v1/changesets/{cs}/patch", summary: "One change set's binary patch (git diff --binary --full-index)", status: 200, media: []string{"text/x-diff"}},
	{pattern: "GET /v1/sessions/{session}/changesets", summary: "A session's change sets, newest first", status: 200, resp: wire.ChangeSets{}, query: []string{"turn", "limit"}},
	{pattern: "POST /v1/sessions/{session}/changesets", summary: "Capture a change set of a session's worktree now (origin request)", status: 201, resp: wire.ChangeSet{}, req: wire.ChangeSetCaptureRequest{}, reqOpt: true},
	{pattern: "GET /v1/sessions/{session}/checkpoints", summary: "A session's checkpoints", status: 200, resp: wire.Checkpoints{}},
	{pattern: "GET /v1/connections", summary: "List the live connections, oldest first", status: 200, resp: wire.Connections{}},
	{pattern: "POST /v1/connections", summary: "Add a connection with its first credential (the secret in the body only)", status: 201, resp: wire.Connection{}, req: wire.ConnectionAddRequest{}},
	{pattern: "GET /v1/connections/{connection}", summary: "One connection, by id, PROVIDER/NAME or NAME (never its secret)", status: 200, resp: wire.Connection{}},
	{pattern: "POST /v1/connections/{connection}/rotate", summary: "Append a credential version and disable the active one", status: 200, resp: wire.Connection{}, req: wire.ConnectionRotateRequest{}},
	{pattern: "DELETE /v1/connections/{connection}", summary: "Remove a connection and disable its credential", status: 200, resp: wire.Connection{}},
	{pattern: "GET /v1/jobs", summary: "List the durable jobs, newest first", status: 200, resp: wire.Jobs{}, query: []string{"state", "kind", "limit"}},
	{pattern: "GET /v1/jobs/{job}", summary: "One durable job: state, attempts, lease, latest error, result", status: 200, resp: wire.Job{}},
	{pattern: "POST /v1/jobs/{job}/retry", summary: "Queue a dead or cancelled job again", status: 200, resp: wire.Job{}},
	{pattern: "POST /v1/jobs/{job}/cancel", summary: "Cancel a queued, failed or running job", status: 200, resp: wire.Job{}},
	{pattern: "POST /v1/deliveries", summary: "Deliver a change set: a branch of a remote and, with pr, one draft pull request (the steps run as jobs)", status: 202, resp: wire.Delivery{}, req: wire.DeliverRequest{}},
	{pattern: "GET /v1/deliveries", summary: "List the deliveries, newest first", status: 200, resp: wire.Deliveries{}, query: []string{"change_set", "state", "limit"}},
	{pattern: "GET /v1/deliveries/{delivery}", summary: "One delivery: its intent, state, commit, branch and pull request", status: 200, resp: wire.Delivery{}},
	{pattern: "POST /v1/deliveries/{delivery}/follow", summary: "Read the delivery's pull request from GitHub now (state, head, checks)", status: 200, resp: wire.Delivery{}},
	{pattern: "POST /v1/deliveries/{delivery}/merge", summary: "Merge the delivery's pull request behind its gates (open, approved, head unchanged, checks green)", status: 202, resp: wire.Operation{}, req: wire.MergeRequest{}},
	{pattern: "GET /v1/approvals", summary: "List the questions owned agents ask the person (permission ask), oldest first", status: 200, resp: wire.Approvals{}},
	{pattern: "POST /v1/approvals/{approval}", summary: "Answer an approval: allow, always (for the session and kind of tool) or deny", status: 200, resp: wire.ApprovalAnswer{}, req: wire.ApproveRequest{}},
	{pattern: "GET /v1/delegations", summary: "List the delegations of agents' sessions to child sessions, newest first", status: 200, resp: wire.Delegations{}, query: []string{"parent", "limit"}},
	{pattern: "GET /v1/delegations/{delegation}", summary: "One delegation: its parent and child, instructions, inputs, state and attempts, its contract's JSON Schema and, once submitted, its result and digest", status: 200, resp: wire.DelegationDetail{}},
	{pattern: "POST /v1/delegations/{delegation}/cancel", summary: "Cancel a pending or running delegation (its child's later result is refused)", status: 200, resp: wire.Delegation{}},
	{pattern: "GET /v1/operations", summary: "List the long actions (deliver, merge, capture, worktree archive, remove and restore), newest first", status: 200, resp: wire.Operations{}, query: []string{"kind", "subject", "limit"}},
	{pattern: "GET /v1/operations/{operation}", summary: "One long action (deliver, merge): state, progress, result, error, jobs and every step's evidence", status: 200, resp: wire.Operation{}},
	{pattern: "GET /v1/openapi.json", summary: "This document", status: 200, resp: map[string]any{}},
	{pattern: "GET /metrics", summary: "The daemon's metrics in the Prometheus text format", status: 200, media: []string{"text/plain"}},
}

// schemaGen turns Go types into JSON Schemas under components/schemas,
// with encoding/json's rules: a field without omitempty is required; a
// nil slice, map or pointer without omitempty encodes as null; an object
// has no properties beyond its fields.
type schemaGen struct {
	schemas map[string]any
}

var timeType = reflect.TypeFor[time.Time]()
var rawType = reflect.TypeFor[json.RawMessage]()

func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{} // any JSON value
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		if _, ok := g.schemas[t.Name()]; !ok {
			g.schemas[t.Name()] = true // placeholder against recursion
			g.schemas[t.Name()] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + t.Name()}
	}
	panic(fmt.Sprintf("openapi: no schema for %s", t))
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	return s
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			g.fields(f.Type, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		s := g.of(f.Type)
		k := f.Type.Kind()
		if !omit && (k == reflect.Pointer || k == reflect.Slice || k == reflect.Map || k == reflect.Interface) && f.Type != rawType {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[name] = s
		if !omit {
			*required = append(*required, name)
		}
	}
}

// buildOpenAPI renders the document.
func buildOpenAPI() ([]byte, error) {
	g := &schemaGen{schemas: map[string]any{}}
	errRef := g.of(reflect.TypeFor[wire.ErrorBody]())
	paths := map[string]any{}
	for _, r := range openAPIRoutes {
		method, path, _ := strings.Cut(r.pattern, " ")
		op := map[string]any{"summary": r.summary, "operationId": strings.ToLower(method) + opName(path)}
		var params []any
		for _, seg := range strings.Split(path, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				params = append(params, map[string]any{"name": strings.TrimSuffix(name, "}"), "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
			}
		}
		for _, q := range r.query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": false, "schema": map[string]any{"type": "string"}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if r.req != nil {
			op["requestBody"] = map[string]any{"required": !r.reqOpt, "content": map[string]any{"application/json": map[string]any{"schema": g.of(reflect.TypeOf(r.req))}}}
		}
		success := map[string]any{"description": "OK"}
		content := map[string]any{}
		media := r.media
		if media == nil {
			media = []string{"application/json"}
		}
		for _, m := range media {
			if r.resp == nil {
				content[m] = map[string]any{}
			} else {
				content[m] = map[string]any{"schema": g.of(reflect.TypeOf(r.resp))}
			}
		}
		success["content"] = content
		op["responses"] = map[string]any{
			fmt.Sprint(r.status): success,
			"default":            map[string]any{"description": "An error, in the error envelope", "content": map[string]any{"application/json": map[string]any{"schema": errRef}}},
		}
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[strings.ToLower(method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "jamd control API",
			"version": "1",
			"description": "The control API of jamd, on the unix socket of its data directory and, when http_addr is set, on a loopback TCP listener " +
				"that requires the bearer token of api.token (or a signed-in web UI session). Every error is the error envelope.",
		},
		"components": map[string]any{
			"schemas":         g.schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "The token in api.token of the data directory (TCP listener only)."}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
		"paths":    paths,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// opName turns /v1/rooms/{room}/messages into RoomsRoomMessages.
func opName(path string) string {
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/v1"), "/") {
		seg = strings.Trim(seg, "{}")
		seg = strings.NewReplacer(".", "", "_", "").Replace(seg)
		if seg != "" {
			b.WriteString(strings.ToUpper(seg[:1]) + seg[1:])
		}
	}
	return b.String()
}

// The committed document is what the route table and the wire types
// generate, so a wire type changed without regenerating fails here (and
// its responses fail validation).
func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	got, err := buildOpenAPI()
	require.NoError(t, err)
	if *updateOpenAPI {
		require.NoError(t, os.WriteFile("openapi.json", got, 0o644))
		return
	}
	require.Equal(t, string(got), string(openAPIDocument), "openapi.json is stale: run go test ./internal/api -run TestOpenAPIDocumentIsCurrent -update-openapi")
}
