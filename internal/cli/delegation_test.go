package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var delegationAt = time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)

// submittedReview is a review whose child approved on its second
// attempt; runningTest has no child yet.
var (
	submittedReview = wire.Delegation{ID: "del_01", Parent: "sess_p", ParentRoom: "room-1", ParentAgent: "local/coder", Child: "sess_c",
		ChildRoom: "room-2", Role: "review", Agent: "local/reviewer", Instructions: "Review the change.\nMind the locks.",
		Inputs: wire.DelegationInputs{ChangeSet: "cs_01", Commit: "0123456789abcdef0123456789abcdef01234567"}, Contract: "review",
		State: "submitted", Attempts: 1, MaxAttempts: 3, Verdict: "approve", Created: delegationAt, Updated: delegationAt.Add(time.Minute)}
	runningTest = wire.Delegation{ID: "del_02", Parent: "sess_p", ParentRoom: "room-1", ParentAgent: "local/coder", Role: "test",
		Agent: "local/tester", Instructions: "Run the tests.", Inputs: wire.DelegationInputs{ChangeSet: "cs_01"}, Contract: "test",
		State: "pending", MaxAttempts: 3, Created: delegationAt.Add(2 * time.Minute), Updated: delegationAt.Add(2 * time.Minute)}
)

const reviewResult = `{"verdict":"approve","findings":[{"path":"a.go","line":3,"severity":"minor","message":"a typo"}]}`

func TestDelegationCommands(t *testing.T) {
	t.Parallel()
	list := func(want wire.DelegationQuery, out ...wire.Delegation) backend {
		return backend{DelegationFuncs: apitest.DelegationFuncs{DelegationsFunc: func(_ context.Context, q wire.DelegationQuery) ([]wire.Delegation, error) {
			assert.Equal(t, want, q)
			return out, nil
		}}}
	}
	show := backend{DelegationFuncs: apitest.DelegationFuncs{DelegationFunc: func(_ context.Context, id string) (wire.DelegationDetail, error) {
		switch id {
		case "del_01":
			return wire.DelegationDetail{Delegation: submittedReview, Schema: json.RawMessage(`{"type":"object"}`),
				Result: &wire.DelegationResult{Result: json.RawMessage(reviewResult), Digest: "ab12cd", Submitted: delegationAt.Add(time.Minute)}}, nil
		case "del_02":
			return wire.DelegationDetail{Delegation: runningTest, Schema: json.RawMessage(`{"type":"object"}`)}, nil
		}
		return wire.DelegationDetail{}, jam.ErrNotFound
	}}}
	runCases(t, []cmdCase{
		{
			name:    "list",
			backend: list(wire.DelegationQuery{}, runningTest, submittedReview),
			inv:     invocation{args: []string{"delegation", "list"}},
			wantStdout: "ID      ROLE    AGENT           STATE      VERDICT  PARENT  CHILD   CREATED\n" +
				"del_02  test    local/tester    pending    -        sess_p  -       2026-12-04T01:02:00Z\n" +
				"del_01  review  local/reviewer  submitted  approve  sess_p  sess_c  2026-12-04T01:00:00Z\n",
		},
		{
			name:       "list of a parent, none",
			backend:    list(wire.DelegationQuery{Parent: "sess_q", Limit: 5}),
			inv:        invocation{args: []string{"delegation", "list", "--parent", "sess_q", "--limit", "5"}},
			wantStdout: "no delegations\n",
		},
		{
			name:     "list, json",
			backend:  list(wire.DelegationQuery{}, runningTest),
			inv:      invocation{args: []string{"delegation", "list", "--json"}},
			wantJSON: `{"delegations":[` + runningTestJSON + `]}`,
		},
		{
			name:     "list, none, json",
			backend:  list(wire.DelegationQuery{}),
			inv:      invocation{args: []string{"delegation", "list", "--json"}},
			wantJSON: `{"delegations":[]}`,
		},
		{
			name:    "show a submitted review",
			backend: show,
			inv:     invocation{args: []string{"delegation", "show", "del_01"}},
			wantStdout: "delegation  del_01\nstate       submitted\nverdict     approve\nrole        review\nagent       local/reviewer\n" +
				"contract    review\nparent      sess_p (of local/coder, in room room-1)\nchild       sess_c (in room room-2)\n" +
				"change set  cs_01\ncommit      0123456789abcdef0123456789abcdef01234567\nattempts    1 of 3 refused\n" +
				"created     2026-12-04T01:00:00Z\nupdated     2026-12-04T01:01:00Z\n" +
				"\ninstructions:\n  Review the change.\n  Mind the locks.\n" +
				"\nresult (submitted 2026-12-04T01:01:00Z, sha256 ab12cd):\n" +
				"  {\n    \"verdict\": \"approve\",\n    \"findings\": [\n      {\n        \"path\": \"a.go\",\n        \"line\": 3,\n" +
				"        \"severity\": \"minor\",\n        \"message\": \"a typo\"\n      }\n    ]\n  }\n",
		},
		{
			name:    "show a delegation whose child has not started",
			backend: show,
			inv:     invocation{args: []string{"delegation", "show", "del_02"}},
			wantStdout: "delegation  del_02\nstate       pending\nrole        test\nagent       local/tester\ncontract    test\n" +
				"parent      sess_p (of local/coder, in room room-1)\nchild       not started\nchange set  cs_01\nattempts    0 of 3 refused\n" +
				"created     2026-12-04T01:02:00Z\nupdated     2026-12-04T01:02:00Z\n\ninstructions:\n  Run the tests.\n",
		},
		{
			name:     "show, json",
			backend:  show,
			inv:      invocation{args: []string{"delegation", "show", "del_02", "--json"}},
			wantJSON: `{"delegation":` + runningTestJSON + `,"schema":{"type":"object"}}`,
		},
		{
			name:       "show an unknown delegation",
			backend:    show,
			inv:        invocation{args: []string{"delegation", "show", "del_09"}},
			wantCode:   4,
			wantStderr: "jam: delegation del_09: not found (not_found)\n",
		},
		{
			name: "cancel",
			backend: backend{DelegationFuncs: apitest.DelegationFuncs{DelegationCancelFunc: func(_ context.Context, id string) (wire.Delegation, error) {
				assert.Equal(t, "del_02", id)
				d := runningTest
				d.State, d.Reason = "cancelled", "cancelled"
				return d, nil
			}}},
			inv:        invocation{args: []string{"delegation", "cancel", "del_02"}},
			wantStdout: "del_02: cancelled (test by local/tester)\n",
		},
		{
			name: "cancel, json",
			backend: backend{DelegationFuncs: apitest.DelegationFuncs{DelegationCancelFunc: func(context.Context, string) (wire.Delegation, error) {
				d := runningTest
				d.State, d.Reason = "cancelled", "cancelled"
				return d, nil
			}}},
			inv: invocation{args: []string{"delegation", "cancel", "del_02", "--json"}},
			wantJSON: `{"id":"del_02","parent":"sess_p","parent_room":"room-1","parent_agent":"local/coder","child":"","child_room":"",` +
				`"role":"test","agent":"local/tester","instructions":"Run the tests.","inputs":{"change_set_id":"cs_01"},"contract":"test",` +
				`"state":"cancelled","reason":"cancelled","attempts":0,"max_attempts":3,"created_at":"2026-12-04T01:02:00Z","updated_at":"2026-12-04T01:02:00Z"}`,
		},
		{
			name: "cancel a submitted delegation",
			backend: backend{DelegationFuncs: apitest.DelegationFuncs{DelegationCancelFunc: func(context.Context, string) (wire.Delegation, error) {
				return wire.Delegation{}, fmt.Errorf("%w: delegation del_01 is submitted", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"delegation", "cancel", "del_01"}},
			wantCode:   5,
			wantStderr: "jam: cancel delegation del_01: conflict: delegation del_01 is submitted (conflict)\n",
		},
		{
			name:       "show needs an id",
			inv:        invocation{args: []string{"delegation", "show"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam delegation show --help)\n",
		},
	})
}

const runningTestJSON = `{"id":"del_02","parent":"sess_p","parent_room":"room-1","parent_agent":"local/coder","child":"","child_room":"",` +
	`"role":"test","agent":"local/tester","instructions":"Run the tests.","inputs":{"change_set_id":"cs_01"},"contract":"test",` +
	`"state":"pending","attempts":0,"max_attempts":3,"created_at":"2026-12-04T01:02:00Z","updated_at":"2026-12-04T01:02:00Z"}`

// TestDelegationShow_terminalSafe: what an agent wrote cannot send escape
// sequences to the terminal.
func TestDelegationShow_terminalSafe(t *testing.T) {
	t.Parallel()
	d := runningTest
	d.Instructions = "clear\x1b[2Jthe screen\tplease\n\x9bno"
	d.Error = "bad\x07bell"
	b := backend{DelegationFuncs: apitest.DelegationFuncs{DelegationFunc: func(context.Context, string) (wire.DelegationDetail, error) {
		return wire.DelegationDetail{Delegation: d, Schema: json.RawMessage(`{}`)}, nil
	}}}
	r := setup(t, b).jam(t, "delegation", "show", "del_02")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "  clear\uFFFD[2Jthe screen\tplease\n  \uFFFDno\n")
	assert.Contains(t, r.stdout, "error       bad\uFFFDbell\n")
	assert.NotContains(t, r.stdout, "\x1b")
}
