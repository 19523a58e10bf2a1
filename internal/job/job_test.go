package job_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handles opens n handles on one fresh database of the dialect, holding
// one workspace.
type opener func(t *testing.T, n int) ([]store.Store, jam.WorkspaceID)

func dialects(t *testing.T, f func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, func(t *testing.T, n int) ([]store.Store, jam.WorkspaceID) {
			path := filepath.Join(t.TempDir(), "jam.db")
			var sts []store.Store
			for range n {
				st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, CheckpointInterval: time.Hour})
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, st.Close()) })
				sts = append(sts, st)
			}
			return sts, workspace(t, sts[0])
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, func(t *testing.T, n int) ([]store.Store, jam.WorkspaceID) {
			url := pgtest.URL(t)
			var sts []store.Store
			for range n {
				st, err := postgres.Open(t.Context(), postgres.Config{URL: url})
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, st.Close()) })
				sts = append(sts, st)
			}
			return sts, workspace(t, sts[0])
		})
	})
}

func workspace(t *testing.T, st store.Store) jam.WorkspaceID {
	w, err := st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "w", At: time.Now()})
	require.NoError(t, err)
	return w.ID
}

func runner(t *testing.T, st store.Store, ws jam.WorkspaceID, owner string, tune func(*job.Config)) *job.Runner {
	cfg := job.Config{Workspace: ws, Owner: owner, Lease: 10 * time.Second, Poll: 20 * time.Millisecond,
		BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Workers: 2}
	if tune != nil {
		tune(&cfg)
	}
	r, err := job.New(cfg, st)
	require.NoError(t, err)
	return r
}

// start runs r until the test ends and waits for it.
func start(t *testing.T, r *job.Runner) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { assert.ErrorIs(t, r.Run(ctx), context.Canceled) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// settle waits until the job is terminal and returns it.
func settle(t *testing.T, st store.Store, ws jam.WorkspaceID, id jam.JobID) store.Job {
	t.Helper()
	var j store.Job
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		j, err = st.JobGet(context.Background(), ws, id)
		require.NoError(c, err)
		assert.True(c, j.Terminal(), "state %s", j.State)
	}, 30*time.Second, 10*time.Millisecond)
	return j
}

func TestRunner_retriesThenSucceeds(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, open opener) {
		sts, ws := open(t, 1)
		r := runner(t, sts[0], ws, "w1", nil)
		var calls atomic.Int32
		require.NoError(t, r.Register("flaky", func(_ context.Context, j store.Job) ([]byte, error) {
			if calls.Add(1) < 3 {
				return nil, fmt.Errorf("attempt %d: %w", j.Attempt, jam.ErrUnavailable)
			}
			return []byte(`{"ok":true}`), nil
		}))
		require.Error(t, r.Register("flaky", nil), "a kind registered twice")
		start(t, r)
		j, err := r.Enqueue(t.Context(), job.Spec{Kind: "flaky", Key: "k1", Payload: []byte(`{"n":1}`)})
		require.NoError(t, err)
		again, err := r.Enqueue(t.Context(), job.Spec{Kind: "flaky", Key: "k1"})
		require.NoError(t, err)
		require.Equal(t, j.ID, again.ID, "the idempotency key returns the first job")
		done := settle(t, sts[0], ws, j.ID)
		require.Equal(t, store.JobSucceeded, done.State)
		require.Equal(t, 3, done.Attempt)
		require.JSONEq(t, `{"ok":true}`, string(done.Result))
		require.Contains(t, done.Error, "attempt 2", "the last failure is kept")
		require.EqualValues(t, 3, calls.Load())
	})
}

func TestRunner_permanentRetryAfterAndDead(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, open opener) {
		sts, ws := open(t, 1)
		r := runner(t, sts[0], ws, "w1", nil)
		var later sync.WaitGroup
		later.Add(1)
		var laterOnce sync.Once
		require.NoError(t, r.Register("perm", func(context.Context, store.Job) ([]byte, error) {
			return nil, job.Permanent(fmt.Errorf("bad token: %w", jam.ErrUnauthenticated))
		}))
		require.NoError(t, r.Register("always", func(context.Context, store.Job) ([]byte, error) {
			return nil, errors.New("still broken")
		}))
		require.NoError(t, r.Register("later", func(context.Context, store.Job) ([]byte, error) {
			laterOnce.Do(later.Done)
			return nil, job.RetryAfter(errors.New("rate limited"), time.Hour)
		}))
		require.NoError(t, r.Register("panics", func(context.Context, store.Job) ([]byte, error) { panic("boom") }))
		start(t, r)
		before := time.Now()
		p, err := r.Enqueue(t.Context(), job.Spec{Kind: "perm"})
		require.NoError(t, err)
		a, err := r.Enqueue(t.Context(), job.Spec{Kind: "always", MaxAttempts: 3})
		require.NoError(t, err)
		l, err := r.Enqueue(t.Context(), job.Spec{Kind: "later"})
		require.NoError(t, err)
		pn, err := r.Enqueue(t.Context(), job.Spec{Kind: "panics"})
		require.NoError(t, err)

		pj := settle(t, sts[0], ws, p.ID)
		require.Equal(t, store.JobDead, pj.State)
		require.Equal(t, 1, pj.Attempt, "a permanent error is not retried")
		require.Contains(t, pj.Error, "bad token")
		aj := settle(t, sts[0], ws, a.ID)
		require.Equal(t, store.JobDead, aj.State)
		require.Equal(t, 3, aj.Attempt, "dead once its attempts are spent")
		pnj := settle(t, sts[0], ws, pn.ID)
		require.Equal(t, store.JobDead, pnj.State)
		require.Contains(t, pnj.Error, "panicked: boom")

		later.Wait()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			lj, err := sts[0].JobGet(context.Background(), ws, l.ID)
			require.NoError(c, err)
			require.Equal(c, store.JobFailed, lj.State)
			assert.False(c, lj.RunAfter.Before(before.Add(time.Hour)), "due again no sooner than the Retry-After: %s", lj.RunAfter)
			assert.True(c, lj.RunAfter.Before(time.Now().Add(time.Hour+time.Minute)))
		}, 30*time.Second, 10*time.Millisecond)
	})
}

// Two runners on two handles of one database run 40 jobs: every job runs
// exactly once, never two of one at once.
func TestRunner_twoHandlesNeverRunOneJobAtOnce(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, open opener) {
		sts, ws := open(t, 2)
		var mu sync.Mutex
		runs := map[jam.JobID]int{}
		active := map[jam.JobID]int{}
		var overlap atomic.Bool
		h := func(_ context.Context, j store.Job) ([]byte, error) {
			mu.Lock()
			runs[j.ID]++
			active[j.ID]++
			if active[j.ID] > 1 {
				overlap.Store(true)
			}
			mu.Unlock()
			mu.Lock()
			active[j.ID]--
			mu.Unlock()
			return nil, nil
		}
		var rs []*job.Runner
		for i, st := range sts {
			r := runner(t, st, ws, fmt.Sprintf("w%d", i), func(c *job.Config) { c.Workers = 3 })
			require.NoError(t, r.Register("race", h))
			rs = append(rs, r)
		}
		var ids []jam.JobID
		for i := range 40 {
			j, err := rs[i%2].Enqueue(t.Context(), job.Spec{Kind: "race"})
			require.NoError(t, err)
			ids = append(ids, j.ID)
		}
		for _, r := range rs {
			start(t, r)
		}
		for _, id := range ids {
			j := settle(t, sts[0], ws, id)
			require.Equal(t, store.JobSucceeded, j.State)
			require.Equal(t, 1, j.Attempt)
		}
		mu.Lock()
		defer mu.Unlock()
		require.False(t, overlap.Load())
		for _, id := range ids {
			require.Equal(t, 1, runs[id], "job %s", id)
		}
	})
}

// A worker that dies holding a job: the job is claimed again once the
// lease lapses, and the dead worker's late completion is refused.
func TestRunner_deadWorkersJobClaimedAgain(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, open opener) {
		sts, ws := open(t, 2)
		r := runner(t, sts[1], ws, "alive", nil)
		require.NoError(t, r.Register("work", func(context.Context, store.Job) ([]byte, error) { return []byte(`"alive"`), nil }))
		j, err := r.Enqueue(t.Context(), job.Spec{Kind: "work"})
		require.NoError(t, err)
		c, err := sts[0].JobClaim(t.Context(), store.JobClaimParams{WorkspaceID: ws, Kinds: []string{"work"}, Owner: "dead",
			Lease: 300 * time.Millisecond, At: time.Now()})
		require.NoError(t, err)
		require.Equal(t, j.ID, c.ID)
		start(t, r)
		done := settle(t, sts[0], ws, j.ID)
		require.Equal(t, store.JobSucceeded, done.State)
		require.Equal(t, "alive", done.Owner)
		require.Equal(t, int64(2), done.Generation)
		require.JSONEq(t, `"alive"`, string(done.Result))
		_, err = sts[0].JobComplete(t.Context(), store.JobCompleteParams{WorkspaceID: ws, ID: j.ID, Generation: c.Generation,
			Result: []byte(`"dead"`), At: time.Now()})
		require.ErrorIs(t, err, jam.ErrLeaseLost, "the dead worker's result is refused")
	})
}

// A job cancelled while it runs: the next heartbeat is refused, the
// handler's context ends, and the job stays cancelled.
func TestRunner_lostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, open opener) {
		sts, ws := open(t, 1)
		r := runner(t, sts[0], ws, "w1", func(c *job.Config) { c.Lease = 150 * time.Millisecond })
		running := make(chan struct{})
		stopped := make(chan error, 1)
		require.NoError(t, r.Register("long", func(ctx context.Context, _ store.Job) ([]byte, error) {
			close(running)
			<-ctx.Done()
			stopped <- context.Cause(ctx)
			return []byte(`"too late"`), nil
		}))
		start(t, r)
		j, err := r.Enqueue(t.Context(), job.Spec{Kind: "long"})
		require.NoError(t, err)
		<-running
		_, err = sts[0].JobCancel(t.Context(), ws, j.ID, time.Now())
		require.NoError(t, err)
		require.ErrorIs(t, <-stopped, jam.ErrLeaseLost)
		got, err := sts[0].JobGet(t.Context(), ws, j.ID)
		require.NoError(t, err)
		require.Equal(t, store.JobCancelled, got.State)
		require.Nil(t, got.Result)
	})
}

func TestNew_andRegister_refuse(t *testing.T) {
	t.Parallel()
	_, err := job.New(job.Config{Owner: "w"}, nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = job.New(job.Config{Workspace: "ws_x"}, nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = job.New(job.Config{Workspace: "ws_x", Owner: "w", Lease: 48 * time.Hour}, nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
	r, err := job.New(job.Config{Workspace: "ws_x", Owner: "w"}, nil)
	require.NoError(t, err)
	require.ErrorIs(t, r.Register("Bad Kind", nil), jam.ErrInvalid)
}
