package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// delegationsBackend holds a submitted review (del_1) and a running test
// (del_2) of parent sess_p; every other id is not found, as the daemon
// answers for another workspace's. It records the queries it was asked.
func delegationsBackend(at time.Time) (fakeBackend, func() []wire.DelegationQuery) {
	var (
		mu      sync.Mutex
		queries []wire.DelegationQuery
	)
	review := wire.Delegation{ID: "del_1", Parent: "sess_p", ParentRoom: "room-1", ParentAgent: "local/coder", Child: "sess_c", ChildRoom: "room-1",
		Role: "review", Agent: "local/reviewer", Instructions: "Review the change.", Inputs: wire.DelegationInputs{ChangeSet: "cs_1"},
		Contract: "review", State: "submitted", Attempts: 1, MaxAttempts: 3, Verdict: "approve", Created: at, Updated: at.Add(time.Minute)}
	test := wire.Delegation{ID: "del_2", Parent: "sess_p", ParentRoom: "room-1", ParentAgent: "local/coder", Role: "test", Agent: "local/tester",
		Instructions: "Run the tests.", Inputs: wire.DelegationInputs{Commit: "0123456789abcdef0123456789abcdef01234567"}, Contract: "test",
		State: "running", MaxAttempts: 3, Created: at.Add(2 * time.Minute), Updated: at.Add(2 * time.Minute)}
	byID := map[string]*wire.Delegation{"del_1": &review, "del_2": &test}
	lookup := func(id string) (*wire.Delegation, error) {
		if v, ok := byID[id]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("delegation %s: %w", id, jam.ErrNotFound)
	}
	return fakeBackend{DelegationFuncs: apitest.DelegationFuncs{
			DelegationsFunc: func(_ context.Context, q wire.DelegationQuery) ([]wire.Delegation, error) {
				mu.Lock()
				defer mu.Unlock()
				queries = append(queries, q)
				if q.Parent == "sess_none" {
					return nil, nil
				}
				return []wire.Delegation{test, review}, nil
			},
			DelegationFunc: func(_ context.Context, id string) (wire.DelegationDetail, error) {
				mu.Lock()
				defer mu.Unlock()
				v, err := lookup(id)
				if err != nil {
					return wire.DelegationDetail{}, err
				}
				out := wire.DelegationDetail{Delegation: *v, Schema: json.RawMessage(`{"type":"object","required":["verdict"]}`)}
				if v.State == "submitted" {
					out.Result = &wire.DelegationResult{Result: json.RawMessage(`{"verdict":"approve","findings":[]}`), Digest: "ab12", Submitted: v.Updated}
				}
				return out, nil
			},
			DelegationCancelFunc: func(_ context.Context, id string) (wire.Delegation, error) {
				mu.Lock()
				defer mu.Unlock()
				v, err := lookup(id)
				if err != nil {
					return wire.Delegation{}, err
				}
				if v.State != "pending" && v.State != "running" {
					return wire.Delegation{}, fmt.Errorf("%w: delegation %s is %s", jam.ErrConflict, id, v.State)
				}
				v.State, v.Reason = "cancelled", "cancelled"
				return *v, nil
			},
		}}, func() []wire.DelegationQuery {
			mu.Lock()
			defer mu.Unlock()
			return append([]wire.DelegationQuery(nil), queries...)
		}
}

func TestDelegationRoutes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	backend, queries := delegationsBackend(at)
	b := setup(t, backend, "")
	oas, err := apitest.LoadOpenAPI(OpenAPIDocument())
	require.NoError(t, err)
	c := apiclient.NewWrapped(b.socket, oas.Transport)
	ctx := t.Context()

	list, err := c.Delegations(ctx, wire.DelegationQuery{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []string{"del_2", "del_1"}, []string{list[0].ID, list[1].ID})
	assert.Equal(t, "approve", list[1].Verdict)
	none, err := c.Delegations(ctx, wire.DelegationQuery{Parent: "sess_none", Limit: wire.MaxDelegationLimit})
	require.NoError(t, err)
	require.Empty(t, none)
	assert.Equal(t, []wire.DelegationQuery{{}, {Parent: "sess_none", Limit: wire.MaxDelegationLimit}}, queries(), "parent and limit reach the daemon")

	detail, err := c.Delegation(ctx, "del_1")
	require.NoError(t, err)
	require.NotNil(t, detail.Result)
	assert.JSONEq(t, `{"verdict":"approve","findings":[]}`, string(detail.Result.Result))
	assert.JSONEq(t, `{"type":"object","required":["verdict"]}`, string(detail.Schema))
	running, err := c.Delegation(ctx, "del_2")
	require.NoError(t, err)
	assert.Nil(t, running.Result, "a delegation without a result has none")
	_, err = c.Delegation(ctx, "del_foreign")
	assertCode(t, wire.CodeNotFound, err)

	cancelled, err := c.DelegationCancel(ctx, "del_2")
	require.NoError(t, err)
	assert.Equal(t, "cancelled", cancelled.State)
	_, err = c.DelegationCancel(ctx, "del_1")
	assertCode(t, wire.CodeConflict, err)
	_, err = c.DelegationCancel(ctx, "del_foreign")
	assertCode(t, wire.CodeNotFound, err)
	assert.Empty(t, oas.Violations(), "every answer is as the document describes it")

	// Unknown ids are not_found in the error envelope, with a 404.
	for _, req := range []struct{ method, path string }{{http.MethodGet, "/v1/delegations/del_foreign"}, {http.MethodPost, "/v1/delegations/del_foreign/cancel"}} {
		r, err := http.NewRequestWithContext(ctx, req.method, "http://jamd"+req.path, nil)
		require.NoError(t, err)
		resp, err := b.unix.Do(r)
		require.NoError(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, req.path)
		assert.Equal(t, wire.CodeNotFound, decodeError(t, resp).Code, req.path)
	}

	for _, bad := range []string{"/v1/delegations?limit=0", "/v1/delegations?limit=501", "/v1/delegations?limit=x", "/v1/delegations?limit=-1",
		"/v1/delegations?state=running", "/v1/delegations?parent=a&parent=b", "/v1/delegations/del_1?x=1"} {
		resp := b.get(t, bad)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
		assert.Equal(t, wire.CodeInvalidArgument, decodeError(t, resp).Code, bad)
	}
	assert.Len(t, queries(), 2, "a refused query never reaches the daemon")
}

// TestDelegationRoutes_shapes: the bodies carry exactly the names the web
// UI reads; the schema and the result are the JSON documents themselves,
// not strings; an empty list is [] and a missing result is left out.
func TestDelegationRoutes_shapes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	backend, _ := delegationsBackend(at)
	b := setup(t, backend, "")
	body := func(path string) string {
		t.Helper()
		resp := b.get(t, path)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(raw)
	}
	assert.JSONEq(t, `{"delegation":{"id":"del_1","parent":"sess_p","parent_room":"room-1","parent_agent":"local/coder","child":"sess_c",
		"child_room":"room-1","role":"review","agent":"local/reviewer","instructions":"Review the change.","inputs":{"change_set_id":"cs_1"},
		"contract":"review","state":"submitted","attempts":1,"max_attempts":3,"verdict":"approve",
		"created_at":"2026-12-04T01:00:00Z","updated_at":"2026-12-04T01:01:00Z"},
		"schema":{"type":"object","required":["verdict"]},
		"result":{"result":{"verdict":"approve","findings":[]},"digest":"ab12","submitted_at":"2026-12-04T01:01:00Z"}}`, body("/v1/delegations/del_1"))
	assert.JSONEq(t, `{"delegation":{"id":"del_2","parent":"sess_p","parent_room":"room-1","parent_agent":"local/coder","child":"","child_room":"",
		"role":"test","agent":"local/tester","instructions":"Run the tests.","inputs":{"commit":"0123456789abcdef0123456789abcdef01234567"},
		"contract":"test","state":"running","attempts":0,"max_attempts":3,"created_at":"2026-12-04T01:02:00Z","updated_at":"2026-12-04T01:02:00Z"},
		"schema":{"type":"object","required":["verdict"]}}`, body("/v1/delegations/del_2"), "a child not started yet is \"\", never left out")
	assert.JSONEq(t, `{"delegations":[]}`, body("/v1/delegations?parent=sess_none"))
}
