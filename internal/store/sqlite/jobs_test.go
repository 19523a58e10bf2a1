package sqlite

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// TestJobs_sealedAtRest: a job's payload, result and error are sealed in
// the file, each bound to its row, and read back as written.
func TestJobs_sealedAtRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	m := jam.NewMinter(time.Now, rand.Reader)
	at := time.Now()
	w, err := b.st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: at})
	require.NoError(t, err)
	canary := "canary" + rand.Text()
	payload, result := []byte(`{"token":"`+canary+`-p"}`), []byte(`{"url":"`+canary+`-r"}`)
	enqueue := func() store.Job {
		j, err := b.st.JobEnqueue(ctx, store.Job{ID: jam.New[jam.JobID](m), WorkspaceID: w.ID, Kind: "deliver", Payload: payload, MaxAttempts: 2, CreatedAt: at})
		require.NoError(t, err)
		return j
	}
	claim := func() store.Job {
		c, err := b.st.JobClaim(ctx, store.JobClaimParams{WorkspaceID: w.ID, Kinds: []string{"deliver"}, Owner: "w", Lease: time.Minute, At: at})
		require.NoError(t, err)
		return c
	}
	failed, done := enqueue(), enqueue()
	c := claim()
	_, err = b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: w.ID, ID: c.ID, Generation: c.Generation, Error: canary + "-e", RetryAt: at.Add(time.Hour), At: at})
	require.NoError(t, err)
	c = claim()
	require.Equal(t, done.ID, c.ID)
	_, err = b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: w.ID, ID: c.ID, Generation: c.Generation, Result: result, At: at})
	require.NoError(t, err)
	require.NoError(t, b.st.Close())
	require.False(t, fileHolds(t, b.cfg.Path, canary))

	st, err := Open(ctx, b.cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	got, err := st.JobGet(ctx, w.ID, failed.ID)
	require.NoError(t, err)
	require.Equal(t, payload, got.Payload)
	require.Equal(t, canary+"-e", got.Error)
	got, err = st.JobGet(ctx, w.ID, done.ID)
	require.NoError(t, err)
	require.Equal(t, result, got.Result)

	// Moved to another job, a sealed value no longer opens.
	_, err = st.writer.ExecContext(ctx, `UPDATE jobs SET payload = (SELECT payload FROM jobs WHERE id = ?) WHERE id = ?`, failed.ID, done.ID)
	require.NoError(t, err)
	_, err = st.JobGet(ctx, w.ID, done.ID)
	require.ErrorIs(t, err, secret.ErrCorrupt)
}

// TestJobs_claimUsesAnIndex keeps the claim's choice of the due job off a
// scan of the whole table.
func TestJobs_claimUsesAnIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows, err := b.st.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+jobClaim, "w", 1, 1, "ws", `["deliver"]`, 1, 1)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	t.Logf("plan: %q", plan)
	for _, d := range plan {
		require.NotRegexp(t, `^SCAN jobs$`, d, "plan: %q", plan)
	}
	require.Contains(t, plan, "SEARCH jobs USING INDEX jobs_by_workspace (workspace_id=?)", "plan: %q", plan)
}
