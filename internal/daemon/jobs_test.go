package daemon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The jobs of a running daemon through its control API: a job no
// handler claims stays queued, is listed, shown, cancelled and retried;
// a bad id, an unknown one and a move from the wrong state each get
// their code.
func TestJobsAPI(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	status := r.waitReady(t)
	st := openStore(t, cfg)
	ctx := t.Context()
	m := jam.NewMinter(nil, nil)
	j, err := st.JobEnqueue(ctx, store.Job{ID: jam.New[jam.JobID](m), WorkspaceID: status.Workspace.ID, Kind: "test.unclaimed",
		IdempotencyKey: "k", Payload: []byte(`{"secret":"never shown"}`), MaxAttempts: 3, CreatedAt: time.Now()})
	require.NoError(t, err)

	list, err := r.client.Jobs(ctx, wire.JobQuery{Kind: "test.unclaimed"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, string(j.ID), list[0].ID)
	require.Equal(t, "queued", list[0].State)
	require.Equal(t, "k", list[0].IdempotencyKey)
	none, err := r.client.Jobs(ctx, wire.JobQuery{State: "dead"})
	require.NoError(t, err)
	require.Empty(t, none)

	got, err := r.client.Job(ctx, string(j.ID))
	require.NoError(t, err)
	require.Equal(t, 3, got.MaxAttempts)
	require.Nil(t, got.LeaseUntil)

	c, err := r.client.JobCancel(ctx, string(j.ID))
	require.NoError(t, err)
	require.Equal(t, "cancelled", c.State)
	_, err = r.client.JobCancel(ctx, string(j.ID))
	requireCode(t, err, wire.CodeConflict)
	q, err := r.client.JobRetry(ctx, string(j.ID))
	require.NoError(t, err)
	require.Equal(t, "queued", q.State)
	_, err = r.client.JobRetry(ctx, string(j.ID))
	requireCode(t, err, wire.CodeConflict)

	_, err = r.client.Job(ctx, "not-a-job")
	requireCode(t, err, wire.CodeInvalidArgument)
	_, err = r.client.Job(ctx, string(jam.New[jam.JobID](m)))
	requireCode(t, err, wire.CodeNotFound)
	_, err = r.client.Jobs(ctx, wire.JobQuery{State: "sleeping"})
	requireCode(t, err, wire.CodeInvalidArgument)
}
