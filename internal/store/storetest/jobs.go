package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// jobAt is a job of the bundle's workspace created at epoch plus d.
func jobAt(b *msgBundle, kind string, d time.Duration) store.Job {
	return store.Job{ID: jam.New[jam.JobID](b.minter), WorkspaceID: b.ws, Kind: kind, Payload: []byte(`{"n":1}`), MaxAttempts: 3,
		CreatedAt: epoch.Add(d)}
}

func enqueueJob(t *testing.T, b *msgBundle, j store.Job) store.Job {
	t.Helper()
	got, err := b.st.JobEnqueue(t.Context(), j)
	require.NoError(t, err)
	return got
}

func claimJob(ctx context.Context, st store.Store, ws jam.WorkspaceID, owner string, at time.Time, kinds ...string) (store.Job, error) {
	if len(kinds) == 0 {
		kinds = []string{"deliver"}
	}
	return st.JobClaim(ctx, store.JobClaimParams{WorkspaceID: ws, Kinds: kinds, Owner: owner, Lease: time.Minute, At: at})
}

func jobCases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Job_enqueueGetList", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		j := jobAt(b, "deliver", 0)
		got, err := b.st.JobEnqueue(ctx, j)
		require.NoError(t, err)
		want := j
		want.CreatedAt = epoch.UTC().Truncate(time.Microsecond)
		want.RunAfter, want.UpdatedAt, want.State = want.CreatedAt, want.CreatedAt, store.JobQueued
		require.Equal(t, want, got, "stored queued, due at once, times in UTC microseconds")
		again, err := b.st.JobGet(ctx, b.ws, j.ID)
		require.NoError(t, err)
		require.Equal(t, want, again)

		later := jobAt(b, "notify.slack", time.Second)
		later.Payload, later.RunAfter = nil, epoch.Add(time.Hour)
		later = enqueueJob(t, b, later)
		require.Nil(t, later.Payload, "no payload reads back as none")
		requireTime(t, epoch.Add(time.Hour), later.RunAfter)

		all, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{later.ID, j.ID}, jobIDs(all), "newest first")
		byKind, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Kind: "deliver"})
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{j.ID}, jobIDs(byKind))
		_, err = claimJob(ctx, b.st, b.ws, "w1", epoch)
		require.NoError(t, err)
		running, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, State: store.JobRunning})
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{j.ID}, jobIDs(running))
		one, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Limit: 1})
		require.NoError(t, err)
		require.Len(t, one, 1)
		foreign, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.other})
		require.NoError(t, err)
		require.Empty(t, foreign)

		dup := jobAt(b, "other", 0)
		dup.ID = j.ID
		_, err = b.st.JobEnqueue(ctx, dup)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "an id is taken once")
		stray := jobAt(b, "deliver", 0)
		stray.WorkspaceID = jam.New[jam.WorkspaceID](b.minter)
		_, err = b.st.JobEnqueue(ctx, stray)
		require.ErrorIs(t, err, jam.ErrNotFound, "a workspace that does not exist")
	})

	t.Run("Job_idempotencyKey", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		first := jobAt(b, "deliver", 0)
		first.IdempotencyKey = "pr-42/comment"
		first = enqueueJob(t, b, first)
		second := jobAt(b, "deliver", time.Second)
		second.IdempotencyKey, second.Payload = first.IdempotencyKey, []byte(`{"n":2}`)
		got, err := b.st.JobEnqueue(ctx, second)
		require.NoError(t, err, "a second enqueue of the key is not an error")
		require.Equal(t, first, got, "it returns the first job, as it was")

		// Once the first job has run, the key still names it.
		c, err := claimJob(ctx, b.st, b.ws, "w1", epoch)
		require.NoError(t, err)
		done, err := b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: c.ID, Generation: c.Generation, Result: []byte(`"ok"`), At: epoch})
		require.NoError(t, err)
		got, err = b.st.JobEnqueue(ctx, second)
		require.NoError(t, err)
		require.Equal(t, done, got)

		// The key is per workspace and kind; "" is no key at all.
		otherKind := jobAt(b, "deliver.retry", 0)
		otherKind.IdempotencyKey = first.IdempotencyKey
		require.Equal(t, otherKind.ID, enqueueJob(t, b, otherKind).ID)
		otherWS := jobAt(b, "deliver", 0)
		otherWS.WorkspaceID, otherWS.IdempotencyKey = b.other, first.IdempotencyKey
		require.Equal(t, otherWS.ID, enqueueJob(t, b, otherWS).ID)
		for range 2 {
			j := jobAt(b, "nokey", 0)
			require.Equal(t, j.ID, enqueueJob(t, b, j).ID)
		}
		list, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Len(t, list, 4, "the repeated enqueue stored nothing")
		// The same enqueue again, id and all (a retry after a crash).
		got, err = b.st.JobEnqueue(ctx, first)
		require.NoError(t, err)
		require.Equal(t, done, got)
	})

	t.Run("Job_stateMachine", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		j := jobAt(b, "deliver", 0)
		j.MaxAttempts = 2
		j = enqueueJob(t, b, j)
		_, err := claimJob(ctx, b.st, b.ws, "w1", epoch, "other")
		require.ErrorIs(t, err, jam.ErrNotFound, "no job of the kind")

		c, err := claimJob(ctx, b.st, b.ws, "w1", epoch)
		require.NoError(t, err)
		require.Equal(t, j.ID, c.ID)
		require.Equal(t, store.JobRunning, c.State)
		require.Equal(t, "w1", c.Owner)
		require.Equal(t, int64(1), c.Generation)
		require.Equal(t, 1, c.Attempt)
		requireTime(t, epoch.Add(time.Minute), c.LeaseUntil)
		requireTime(t, epoch, c.UpdatedAt)
		_, err = claimJob(ctx, b.st, b.ws, "w2", epoch.Add(time.Second))
		require.ErrorIs(t, err, jam.ErrNotFound, "a running job with a live lease is not due")

		require.NoError(t, b.st.JobHeartbeat(ctx, b.ws, j.ID, 1, epoch.Add(5*time.Minute)))
		_, err = claimJob(ctx, b.st, b.ws, "w2", epoch.Add(2*time.Minute))
		require.ErrorIs(t, err, jam.ErrNotFound, "the heartbeat extended the lease")

		f, err := b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: j.ID, Generation: 1, Error: "502 from upstream ü",
			RetryAt: epoch.Add(10 * time.Minute), At: epoch.Add(3 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, store.JobFailed, f.State, "an attempt left: failed, to retry")
		require.Equal(t, "502 from upstream ü", f.Error)
		requireTime(t, epoch.Add(10*time.Minute), f.RunAfter)
		require.True(t, f.LeaseUntil.IsZero())
		_, err = claimJob(ctx, b.st, b.ws, "w2", epoch.Add(9*time.Minute))
		require.ErrorIs(t, err, jam.ErrNotFound, "not due before its retry time")
		c, err = claimJob(ctx, b.st, b.ws, "w2", epoch.Add(10*time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(2), c.Generation)
		require.Equal(t, 2, c.Attempt)
		d, err := b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: j.ID, Generation: 2, Error: "again", At: epoch.Add(11 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, store.JobDead, d.State, "no attempt left: dead")
		_, err = claimJob(ctx, b.st, b.ws, "w2", epoch.Add(time.Hour))
		require.ErrorIs(t, err, jam.ErrNotFound, "a dead job is not claimed")
		_, err = b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: j.ID, Generation: 2, At: epoch})
		require.ErrorIs(t, err, jam.ErrLeaseLost, "a dead job is not completed")
		_, err = b.st.JobCancel(ctx, b.ws, j.ID, epoch)
		require.ErrorIs(t, err, jam.ErrConflict, "a dead job is not cancelled")

		r, err := b.st.JobRetry(ctx, b.ws, j.ID, epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, store.JobQueued, r.State)
		require.Equal(t, 0, r.Attempt, "a retry starts the attempts again")
		require.Equal(t, int64(2), r.Generation, "the generation keeps counting")
		require.Equal(t, "again", r.Error, "the last failure is kept")
		_, err = b.st.JobRetry(ctx, b.ws, j.ID, epoch)
		require.ErrorIs(t, err, jam.ErrConflict, "a queued job is not retried")

		pj := enqueueJob(t, b, jobAt(b, "permanent", 0))
		pc, err := claimJob(ctx, b.st, b.ws, "w3", epoch.Add(time.Hour), "permanent")
		require.NoError(t, err)
		require.Equal(t, 1, pc.Attempt, "attempts left")
		p, err := b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: pj.ID, Generation: pc.Generation, Error: "permanent",
			RetryAt: epoch.Add(2 * time.Hour), Dead: true, At: epoch.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, store.JobDead, p.State, "a Dead failure is dead with attempts left")
		require.Equal(t, "permanent", p.Error)
		_, err = claimJob(ctx, b.st, b.ws, "w3", epoch.Add(3*time.Hour), "permanent")
		require.ErrorIs(t, err, jam.ErrNotFound, "a dead job is not claimed at its RetryAt")
		c, err = claimJob(ctx, b.st, b.ws, "w3", epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(3), c.Generation)
		require.Equal(t, 1, c.Attempt)
		s, err := b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: j.ID, Generation: 3, Result: []byte(`{"url":"https://x/1"}`), At: epoch.Add(61 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, store.JobSucceeded, s.State)
		require.Equal(t, []byte(`{"url":"https://x/1"}`), s.Result)
		require.True(t, s.Terminal())
		for name, err := range map[string]error{
			"cancel":    errOf(b.st.JobCancel(ctx, b.ws, j.ID, epoch)),
			"retry":     errOf(b.st.JobRetry(ctx, b.ws, j.ID, epoch)),
			"fail":      errOf(b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: j.ID, Generation: 3, At: epoch})),
			"heartbeat": b.st.JobHeartbeat(ctx, b.ws, j.ID, 3, epoch),
		} {
			want := jam.ErrConflict
			if name == "fail" || name == "heartbeat" {
				want = jam.ErrLeaseLost
			}
			require.ErrorIs(t, err, want, "%s of a succeeded job", name)
		}
		final, err := b.st.JobGet(ctx, b.ws, j.ID)
		require.NoError(t, err)
		require.Equal(t, s, final, "a succeeded job stays as it is")
	})

	t.Run("Job_cancel", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		queued := enqueueJob(t, b, jobAt(b, "deliver", 0))
		c, err := b.st.JobCancel(ctx, b.ws, queued.ID, epoch.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, store.JobCancelled, c.State)
		_, err = b.st.JobCancel(ctx, b.ws, queued.ID, epoch.Add(time.Second))
		require.ErrorIs(t, err, jam.ErrConflict, "a cancelled job is not cancelled again")
		_, err = claimJob(ctx, b.st, b.ws, "w1", epoch.Add(time.Hour))
		require.ErrorIs(t, err, jam.ErrNotFound, "a cancelled job is not claimed")

		// A running job cancelled: its worker is refused every later write.
		running := enqueueJob(t, b, jobAt(b, "deliver", time.Second))
		cl, err := claimJob(ctx, b.st, b.ws, "w1", epoch.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, running.ID, cl.ID)
		_, err = b.st.JobCancel(ctx, b.ws, running.ID, epoch.Add(2*time.Second))
		require.NoError(t, err)
		_, err = b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: cl.ID, Generation: cl.Generation, At: epoch.Add(3 * time.Second)})
		require.ErrorIs(t, err, jam.ErrLeaseLost)
		require.ErrorIs(t, b.st.JobHeartbeat(ctx, b.ws, cl.ID, cl.Generation, epoch.Add(time.Hour)), jam.ErrLeaseLost)
		got, err := b.st.JobGet(ctx, b.ws, cl.ID)
		require.NoError(t, err)
		require.Equal(t, store.JobCancelled, got.State)

		// A failed job cancelled, then retried.
		failing := enqueueJob(t, b, jobAt(b, "deliver", 2*time.Second))
		cl, err = claimJob(ctx, b.st, b.ws, "w1", epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, failing.ID, cl.ID)
		_, err = b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: cl.ID, Generation: cl.Generation, Error: "x", RetryAt: epoch.Add(2 * time.Hour), At: epoch.Add(time.Hour)})
		require.NoError(t, err)
		c, err = b.st.JobCancel(ctx, b.ws, failing.ID, epoch.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, store.JobCancelled, c.State)
		r, err := b.st.JobRetry(ctx, b.ws, failing.ID, epoch.Add(3*time.Hour))
		require.NoError(t, err)
		require.Equal(t, store.JobQueued, r.State)
		requireTime(t, epoch.Add(3*time.Hour), r.RunAfter)
		require.Empty(t, r.Owner)
	})

	t.Run("Job_claimOrderAndKinds", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		late := enqueueJob(t, b, jobAt(b, "deliver", 3*time.Second))
		early := enqueueJob(t, b, jobAt(b, "deliver", time.Second))
		other := enqueueJob(t, b, jobAt(b, "notify", 2*time.Second))
		future := jobAt(b, "deliver", 0)
		future.RunAfter = epoch.Add(time.Hour)
		enqueueJob(t, b, future)
		at := epoch.Add(time.Minute)
		var order []jam.JobID
		for {
			c, err := claimJob(ctx, b.st, b.ws, "w", at, "deliver", "notify")
			if errors.Is(err, jam.ErrNotFound) {
				break
			}
			require.NoError(t, err)
			order = append(order, c.ID)
		}
		require.Equal(t, []jam.JobID{early.ID, other.ID, late.ID}, order, "oldest first, of the kinds, only the due")
		_, err := claimJob(ctx, b.st, b.other, "w", epoch.Add(2*time.Hour), "deliver", "notify")
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's claim sees none of them")
	})

	t.Run("Job_fencedByGeneration", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		j := enqueueJob(t, b, jobAt(b, "deliver", 0))
		stale, err := claimJob(ctx, b.st, b.ws, "w1", epoch)
		require.NoError(t, err)
		// The lease of w1 passes without a heartbeat: w2 claims the job.
		_, err = claimJob(ctx, b.st, b.ws, "w2", epoch.Add(time.Minute))
		require.ErrorIs(t, err, jam.ErrNotFound, "a lease that ends now has not passed yet")
		fresh, err := claimJob(ctx, b.st, b.ws, "w2", epoch.Add(time.Minute+time.Microsecond))
		require.NoError(t, err)
		require.Equal(t, j.ID, fresh.ID)
		require.Equal(t, stale.Generation+1, fresh.Generation)
		require.Equal(t, 2, fresh.Attempt, "a dead worker's claim counted an attempt")
		require.Equal(t, "w2", fresh.Owner)

		before, err := b.st.JobGet(ctx, b.ws, j.ID)
		require.NoError(t, err)
		at := epoch.Add(2 * time.Minute)
		require.ErrorIs(t, b.st.JobHeartbeat(ctx, b.ws, j.ID, stale.Generation, at.Add(time.Hour)), jam.ErrLeaseLost)
		_, err = b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: j.ID, Generation: stale.Generation, Result: []byte(`1`), At: at})
		require.ErrorIs(t, err, jam.ErrLeaseLost)
		_, err = b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: j.ID, Generation: stale.Generation, Error: "late", At: at})
		require.ErrorIs(t, err, jam.ErrLeaseLost)
		after, err := b.st.JobGet(ctx, b.ws, j.ID)
		require.NoError(t, err)
		require.Equal(t, before, after, "the stale worker changed nothing")

		done, err := b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: j.ID, Generation: fresh.Generation, At: at})
		require.NoError(t, err)
		require.Equal(t, store.JobSucceeded, done.State)
		require.Equal(t, "w2", done.Owner)
	})

	t.Run("Job_expireOwner", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		dead, live := enqueueJob(t, b, jobAt(b, "deliver", 0)), enqueueJob(t, b, jobAt(b, "deliver", time.Second))
		got, err := claimJob(ctx, b.st, b.ws, "node/run-1", epoch.Add(2*time.Second))
		require.NoError(t, err)
		require.Equal(t, dead.ID, got.ID)
		dead = got
		live, err = claimJob(ctx, b.st, b.ws, "node/run-2", epoch.Add(2*time.Second))
		require.NoError(t, err)
		at := epoch.Add(3 * time.Second)
		_, err = claimJob(ctx, b.st, b.ws, "node/run-3", at.Add(time.Microsecond))
		require.ErrorIs(t, err, jam.ErrNotFound, "both leases hold")

		n, err := b.st.JobExpireOwner(ctx, b.ws, "node/run-1", at)
		require.NoError(t, err)
		require.Equal(t, 1, n, "only the owner's running job")
		n, err = b.st.JobExpireOwner(ctx, b.ws, "node/run-1", at)
		require.NoError(t, err)
		require.Equal(t, 0, n, "expired already")
		n, err = b.st.JobExpireOwner(ctx, b.other, "node/run-2", at)
		require.NoError(t, err)
		require.Equal(t, 0, n, "another workspace's owner has nothing here")

		again, err := claimJob(ctx, b.st, b.ws, "node/run-3", at.Add(time.Microsecond))
		require.NoError(t, err, "the expired job is due at once")
		require.Equal(t, dead.ID, again.ID)
		require.Equal(t, dead.Generation+1, again.Generation)
		require.ErrorIs(t, b.st.JobHeartbeat(ctx, b.ws, dead.ID, dead.Generation, at.Add(time.Minute)), jam.ErrLeaseLost,
			"the expired owner is fenced out once the job is claimed again")
		require.NoError(t, b.st.JobHeartbeat(ctx, b.ws, live.ID, live.Generation, at.Add(time.Minute)), "the other owner keeps its job")
		_, err = claimJob(ctx, b.st, b.ws, "node/run-3", at.Add(2*time.Microsecond))
		require.ErrorIs(t, err, jam.ErrNotFound)

		for _, bad := range []func() error{
			func() error { _, err := b.st.JobExpireOwner(ctx, "", "o", at); return err },
			func() error { _, err := b.st.JobExpireOwner(ctx, b.ws, "", at); return err },
			func() error { _, err := b.st.JobExpireOwner(ctx, b.ws, "o", time.Time{}); return err },
		} {
			require.ErrorIs(t, bad(), jam.ErrInvalid)
		}
	})

	t.Run("Job_foreignWorkspaceNotFound", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		j := enqueueJob(t, b, jobAt(b, "deliver", 0))
		c, err := claimJob(ctx, b.st, b.ws, "w1", epoch)
		require.NoError(t, err)
		ws := b.other
		for name, err := range map[string]error{
			"get":       errOf(b.st.JobGet(ctx, ws, j.ID)),
			"heartbeat": b.st.JobHeartbeat(ctx, ws, j.ID, c.Generation, epoch.Add(time.Hour)),
			"complete":  errOf(b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: ws, ID: j.ID, Generation: c.Generation, At: epoch})),
			"fail":      errOf(b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: ws, ID: j.ID, Generation: c.Generation, At: epoch})),
			"cancel":    errOf(b.st.JobCancel(ctx, ws, j.ID, epoch)),
			"retry":     errOf(b.st.JobRetry(ctx, ws, j.ID, epoch)),
			"unknown":   errOf(b.st.JobGet(ctx, b.ws, jam.New[jam.JobID](b.minter))),
		} {
			require.ErrorIs(t, err, jam.ErrNotFound, name)
		}
		got, err := b.st.JobGet(ctx, b.ws, j.ID)
		require.NoError(t, err)
		require.Equal(t, c, got, "nothing of another workspace's calls reached the job")
	})

	t.Run("Job_bounds", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		// At the bounds: accepted.
		edge := jobAt(b, "a"+strings.Repeat("z.9_", 15)+"abc", 0)
		require.Len(t, edge.Kind, store.MaxJobKindLen)
		edge.Payload = []byte(`"` + strings.Repeat("p", store.MaxJobPayload-2) + `"`)
		edge.MaxAttempts, edge.IdempotencyKey = store.MaxJobAttempts, strings.Repeat("k", store.MaxJobKeyLen)
		got := enqueueJob(t, b, edge)
		require.Equal(t, edge.Payload, got.Payload)
		c, err := b.st.JobClaim(ctx, store.JobClaimParams{WorkspaceID: b.ws, Kinds: []string{edge.Kind}, Owner: strings.Repeat("o", store.MaxJobOwnerLen),
			Lease: store.MaxJobLease, At: epoch})
		require.NoError(t, err)
		f, err := b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: c.ID, Generation: c.Generation, Error: strings.Repeat("e", store.MaxJobError), At: epoch})
		require.NoError(t, err)
		require.Len(t, f.Error, store.MaxJobError)
		c, err = b.st.JobClaim(ctx, store.JobClaimParams{WorkspaceID: b.ws, Kinds: []string{edge.Kind}, Owner: "w", Lease: time.Minute, At: epoch})
		require.NoError(t, err)
		big := []byte(`[` + strings.Repeat("1,", store.MaxJobResult/2-2) + `10]`)
		require.Len(t, big, store.MaxJobResult)
		s, err := b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: c.ID, Generation: c.Generation, Result: big, At: epoch})
		require.NoError(t, err)
		require.Equal(t, big, s.Result)

		// Past them, or malformed: jam.ErrInvalid, before any write.
		job := func(mod func(*store.Job)) func() error {
			return func() error {
				j := jobAt(b, "deliver", 0)
				mod(&j)
				return errOf(b.st.JobEnqueue(ctx, j))
			}
		}
		claim := func(mod func(*store.JobClaimParams)) func() error {
			return func() error {
				p := store.JobClaimParams{WorkspaceID: b.ws, Kinds: []string{"deliver"}, Owner: "w", Lease: time.Minute, At: epoch}
				mod(&p)
				return errOf(b.st.JobClaim(ctx, p))
			}
		}
		id := jam.New[jam.JobID](b.minter)
		tests := []struct {
			name string
			call func() error
		}{
			{"empty kind", job(func(j *store.Job) { j.Kind = "" })},
			{"upper-case kind", job(func(j *store.Job) { j.Kind = "Deliver" })},
			{"kind from a digit", job(func(j *store.Job) { j.Kind = "1deliver" })},
			{"kind with a dash", job(func(j *store.Job) { j.Kind = "de-liver" })},
			{"long kind", job(func(j *store.Job) { j.Kind = strings.Repeat("k", store.MaxJobKindLen+1) })},
			{"payload over the bound", job(func(j *store.Job) { j.Payload = []byte(`"` + strings.Repeat("p", store.MaxJobPayload-1) + `"`) })},
			{"payload not JSON", job(func(j *store.Job) { j.Payload = []byte(`{"n":`) })},
			{"empty payload", job(func(j *store.Job) { j.Payload = []byte{} })},
			{"no attempts", job(func(j *store.Job) { j.MaxAttempts = 0 })},
			{"too many attempts", job(func(j *store.Job) { j.MaxAttempts = store.MaxJobAttempts + 1 })},
			{"long key", job(func(j *store.Job) { j.IdempotencyKey = strings.Repeat("k", store.MaxJobKeyLen+1) })},
			{"key with NUL", job(func(j *store.Job) { j.IdempotencyKey = "a\x00" })},
			{"zero creation", job(func(j *store.Job) { j.CreatedAt = time.Time{} })},
			{"malformed id", job(func(j *store.Job) { j.ID = "job_nope" })},
			{"wrong id prefix", job(func(j *store.Job) { j.ID = jam.JobID(jam.New[jam.ChangeSetID](b.minter)) })},
			{"malformed workspace", job(func(j *store.Job) { j.WorkspaceID = "ws_nope" })},
			{"claim no kinds", claim(func(p *store.JobClaimParams) { p.Kinds = nil })},
			{"claim too many kinds", claim(func(p *store.JobClaimParams) { p.Kinds = make([]string, store.MaxJobClaimKinds+1) })},
			{"claim bad kind", claim(func(p *store.JobClaimParams) { p.Kinds = []string{"deliver", "X"} })},
			{"claim no owner", claim(func(p *store.JobClaimParams) { p.Owner = "" })},
			{"claim long owner", claim(func(p *store.JobClaimParams) { p.Owner = strings.Repeat("o", store.MaxJobOwnerLen+1) })},
			{"claim zero lease", claim(func(p *store.JobClaimParams) { p.Lease = 0 })},
			{"claim long lease", claim(func(p *store.JobClaimParams) { p.Lease = store.MaxJobLease + time.Second })},
			{"claim zero time", claim(func(p *store.JobClaimParams) { p.At = time.Time{} })},
			{"heartbeat generation 0", func() error { return b.st.JobHeartbeat(ctx, b.ws, id, 0, epoch) }},
			{"heartbeat zero time", func() error { return b.st.JobHeartbeat(ctx, b.ws, id, 1, time.Time{}) }},
			{"complete result over the bound", func() error {
				return errOf(b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: id, Generation: 1, Result: append(big, ' '), At: epoch}))
			}},
			{"complete result not JSON", func() error {
				return errOf(b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: id, Generation: 1, Result: []byte("ok"), At: epoch}))
			}},
			{"complete generation 0", func() error {
				return errOf(b.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: b.ws, ID: id, At: epoch}))
			}},
			{"fail error over the bound", func() error {
				return errOf(b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: id, Generation: 1, Error: strings.Repeat("e", store.MaxJobError+1), At: epoch}))
			}},
			{"fail error not UTF-8", func() error {
				return errOf(b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: id, Generation: 1, Error: "\xff", At: epoch}))
			}},
			{"fail zero time", func() error {
				return errOf(b.st.JobFail(ctx, store.JobFailParams{WorkspaceID: b.ws, ID: id, Generation: 1}))
			}},
			{"cancel zero time", func() error { return errOf(b.st.JobCancel(ctx, b.ws, id, time.Time{})) }},
			{"retry malformed id", func() error { return errOf(b.st.JobRetry(ctx, b.ws, "job_x", epoch)) }},
			{"get empty workspace", func() error { return errOf(b.st.JobGet(ctx, "", id)) }},
			{"list limit over the bound", func() error {
				return errOf(b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Limit: store.MaxJobLimit + 1}))
			}},
			{"list negative limit", func() error { return errOf(b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Limit: -1})) }},
			{"list unknown state", func() error { return errOf(b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, State: "done"})) }},
			{"list bad kind", func() error { return errOf(b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Kind: "A"})) }},
		}
		for _, tt := range tests {
			require.ErrorIs(t, tt.call(), jam.ErrInvalid, tt.name)
		}
		list, err := b.st.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Limit: store.MaxJobLimit})
		require.NoError(t, err)
		require.Len(t, list, 1, "no refused enqueue stored a job")
	})
}

// errOf is the error of a two-result call.
func errOf[T any](_ T, err error) error { return err }

func jobIDs(js []store.Job) []jam.JobID {
	out := make([]jam.JobID, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// jobRaces claims and enqueues through two handles at once. A handle
// knows nothing of the other's claims or enqueues: only the database's
// locking (the claim's write lock or SKIP LOCKED, the key's unique index)
// keeps a job from being claimed twice in one generation or enqueued
// twice.
func jobRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("JobClaim_twoClaimersTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		// drain claims the jobs of kind through both handles at once until
		// neither finds one due at at, and checks that each job of want
		// went to exactly one claimer, in generation gen, as stored.
		drain := func(round int, kind string, want map[jam.JobID]bool, at time.Time, gen int64) [2]int {
			t.Helper()
			var got [2][]store.Job
			var errs [2]error
			owner := func(i int) string { return fmt.Sprintf("w%d-r%d-gen%d", i, round, gen) }
			claimer := func(i int) func() {
				return func() {
					for {
						j, err := claimJob(ctx, handles[i], b.ws, owner(i), at, kind)
						if errors.Is(err, jam.ErrNotFound) {
							return
						}
						if err != nil {
							errs[i] = err
							return
						}
						got[i] = append(got[i], j)
					}
				}
			}
			race(claimer(0), claimer(1))
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			seen := map[jam.JobID]string{}
			for i := range got {
				for _, j := range got[i] {
					prev, dup := seen[j.ID]
					require.False(t, dup, "round %d, generation %d: job %s claimed by %s and %s", round, gen, j.ID, prev, owner(i))
					seen[j.ID] = owner(i)
					require.Equal(t, gen, j.Generation, "round %d: job %s claimed by %s", round, j.ID, owner(i))
					require.Equal(t, owner(i), j.Owner)
				}
			}
			require.Len(t, seen, len(want), "round %d, generation %d: every job claimed once", round, gen)
			for id, o := range seen {
				require.True(t, want[id])
				stored, err := b.st.JobGet(ctx, b.ws, id)
				require.NoError(t, err)
				require.Equal(t, o, stored.Owner, "round %d, generation %d: the stored owner is the claimer told it won", round, gen)
				require.Equal(t, gen, stored.Generation)
			}
			return [2]int{len(got[0]), len(got[1])}
		}
		const perRound = 4
		var split [2]int
		for round := range raceRounds {
			kind := fmt.Sprintf("deliver.r%d", round)
			want := map[jam.JobID]bool{}
			for i := range perRound {
				want[enqueueJob(t, b, jobAt(b, kind, time.Duration(i)*time.Millisecond)).ID] = true
			}
			n := drain(round, kind, want, epoch.Add(time.Second), 1)
			// Every lease (a minute) has passed: the jobs are a dead
			// worker's, and both claimers take them again.
			m := drain(round, kind, want, epoch.Add(2*time.Minute), 2)
			split[0] += n[0] + m[0]
			split[1] += n[1] + m[1]
		}
		t.Logf("claims through each handle: %d and %d", split[0], split[1])
	})

	t.Run("JobEnqueue_sameKeyTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		for round := range raceRounds {
			js := [2]store.Job{jobAt(b, "deliver", 0), jobAt(b, "deliver", time.Second)}
			js[0].IdempotencyKey = fmt.Sprintf("key-%d", round)
			js[1].IdempotencyKey = js[0].IdempotencyKey
			var got [2]store.Job
			var errs [2]error
			race(
				func() { got[0], errs[0] = handles[0].JobEnqueue(ctx, js[0]) },
				func() { got[1], errs[1] = handles[1].JobEnqueue(ctx, js[1]) },
			)
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			require.Equal(t, got[0], got[1], "round %d: both enqueues answer with one job", round)
			require.Contains(t, []jam.JobID{js[0].ID, js[1].ID}, got[0].ID, "round %d", round)
		}
		list, err := other.JobList(ctx, store.JobListParams{WorkspaceID: b.ws, Limit: store.MaxJobLimit})
		require.NoError(t, err)
		require.Len(t, list, raceRounds, "one job per key")
	})
}
