package postgres

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// TestJobs_sealedAtRest: a job's payload, result and error are stored
// sealed, each bound to its row, and read back as written; an empty
// value stays empty.
func TestJobs_sealedAtRest(t *testing.T) {
	t.Parallel()
	s := sealedOpener(t)(t)
	ctx := t.Context()
	m := jam.NewMinter(time.Now, rand.Reader)
	at := time.Now()
	w, err := s.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "w", At: at})
	require.NoError(t, err)
	canary := "canary" + rand.Text()
	payload, result := []byte(`{"token":"`+canary+`-p"}`), []byte(`{"url":"`+canary+`-r"}`)
	j, err := s.JobEnqueue(ctx, store.Job{ID: jam.New[jam.JobID](m), WorkspaceID: w.ID, Kind: "deliver", Payload: payload, MaxAttempts: 2, CreatedAt: at})
	require.NoError(t, err)
	bare, err := s.JobEnqueue(ctx, store.Job{ID: jam.New[jam.JobID](m), WorkspaceID: w.ID, Kind: "other", MaxAttempts: 1, CreatedAt: at})
	require.NoError(t, err)
	c, err := s.JobClaim(ctx, store.JobClaimParams{WorkspaceID: w.ID, Kinds: []string{"deliver"}, Owner: "w", Lease: time.Minute, At: at})
	require.NoError(t, err)
	_, err = s.JobFail(ctx, store.JobFailParams{WorkspaceID: w.ID, ID: j.ID, Generation: c.Generation, Error: canary + "-e", At: at})
	require.NoError(t, err)
	c, err = s.JobClaim(ctx, store.JobClaimParams{WorkspaceID: w.ID, Kinds: []string{"deliver"}, Owner: "w", Lease: time.Minute, At: at})
	require.NoError(t, err)
	_, err = s.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: w.ID, ID: j.ID, Generation: c.Generation, Result: result, At: at})
	require.NoError(t, err)

	var rawPayload, rawResult, rawErr []byte
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT payload, result, error FROM jobs WHERE id = $1`, j.ID).Scan(&rawPayload, &rawResult, &rawErr))
	for _, raw := range [][]byte{rawPayload, rawResult, rawErr} {
		require.NotEmpty(t, raw)
		require.NotContains(t, string(raw), canary)
	}
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT payload, result, error FROM jobs WHERE id = $1`, bare.ID).Scan(&rawPayload, &rawResult, &rawErr))
	require.Empty(t, rawPayload)
	got, err := s.JobGet(ctx, w.ID, j.ID)
	require.NoError(t, err)
	require.Equal(t, payload, got.Payload)
	require.Equal(t, result, got.Result)
	require.Equal(t, canary+"-e", got.Error)

	// Moved to another job, a sealed value no longer opens.
	_, err = s.pool.Exec(ctx, `UPDATE jobs SET payload = (SELECT payload FROM jobs WHERE id = $1) WHERE id = $2`, j.ID, bare.ID)
	require.NoError(t, err)
	_, err = s.JobGet(ctx, w.ID, bare.ID)
	require.ErrorIs(t, err, secret.ErrCorrupt)
}
