package cli_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var jobAt = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

var deadJob = wire.Job{ID: "job_01", Kind: "delivery.push", State: "dead", Attempt: 8, MaxAttempts: 8, RunAfter: jobAt, Owner: "node/run-3",
	Generation: 8, Error: "push: remote unreachable\nsecond line", Created: jobAt, Updated: jobAt.Add(time.Minute)}

func TestJobCommands(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name: "list with filters",
			backend: backend{JobFuncs: apitest.JobFuncs{JobsFunc: func(_ context.Context, q wire.JobQuery) ([]wire.Job, error) {
				assert.Equal(t, wire.JobQuery{State: "dead", Kind: "delivery.push", Limit: 5}, q)
				return []wire.Job{deadJob}, nil
			}}},
			inv: invocation{args: []string{"job", "list", "--state", "dead", "--kind", "delivery.push", "--limit", "5"}},
			wantStdout: "ID      KIND           STATE  ATTEMPT  UPDATED               ERROR\n" +
				"job_01  delivery.push  dead   8/8      2026-12-03T09:01:00Z  push: remote unreachable\n",
		},
		{
			name:       "list, none",
			backend:    backend{JobFuncs: apitest.JobFuncs{JobsFunc: func(context.Context, wire.JobQuery) ([]wire.Job, error) { return nil, nil }}},
			inv:        invocation{args: []string{"job", "list"}},
			wantStdout: "no jobs\n",
		},
		{
			name: "show",
			backend: backend{JobFuncs: apitest.JobFuncs{JobFunc: func(_ context.Context, id string) (wire.Job, error) {
				assert.Equal(t, "job_01", id)
				return deadJob, nil
			}}},
			inv: invocation{args: []string{"job", "show", "job_01"}},
			wantStdout: "job      job_01\nkind     delivery.push\nstate    dead\nattempt  8 of 8 (generation 8)\nowner    node/run-3\n" +
				"created  2026-12-03T09:00:00Z\nupdated  2026-12-03T09:01:00Z\nerror    push: remote unreachable\nsecond line\n",
		},
		{
			name: "retry, json",
			backend: backend{JobFuncs: apitest.JobFuncs{JobRetryFunc: func(_ context.Context, id string) (wire.Job, error) {
				j := deadJob
				j.State, j.Attempt, j.Error = "queued", 0, ""
				return j, nil
			}}},
			inv: invocation{args: []string{"job", "retry", "job_01", "--json"}},
			wantJSON: `{"id":"job_01","kind":"delivery.push","state":"queued","attempt":0,"max_attempts":8,"run_after":"2026-12-03T09:00:00Z",` +
				`"owner":"node/run-3","generation":8,"created_at":"2026-12-03T09:00:00Z","updated_at":"2026-12-03T09:01:00Z"}`,
		},
		{
			name: "cancel, in a final state",
			backend: backend{JobFuncs: apitest.JobFuncs{JobCancelFunc: func(_ context.Context, id string) (wire.Job, error) {
				return wire.Job{}, fmt.Errorf("%w: the job is succeeded", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"job", "cancel", "job_01"}},
			wantCode:   5,
			wantStderr: "jam: cancel job job_01: conflict: the job is succeeded (conflict)\n",
		},
		{
			name:       "show needs an id",
			inv:        invocation{args: []string{"job", "show"}},
			wantCode:   2,
			wantStderr: "jam: accepts 1 arg(s), received 0 (see jam job show --help)\n",
		},
	})
}
