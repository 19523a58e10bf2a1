package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Store is the part of the store the runner uses.
type Store interface {
	JobEnqueue(ctx context.Context, j store.Job) (store.Job, error)
	JobClaim(ctx context.Context, p store.JobClaimParams) (store.Job, error)
	JobHeartbeat(ctx context.Context, ws jam.WorkspaceID, id jam.JobID, generation int64, leaseUntil time.Time) error
	JobComplete(ctx context.Context, p store.JobCompleteParams) (store.Job, error)
	JobFail(ctx context.Context, p store.JobFailParams) (store.Job, error)
}

// Handler runs one attempt of a job and returns its result (opaque JSON,
// nil for none). ctx ends when the runner stops or the job's lease is
// lost; a handler must then return promptly. Wrap the error with
// Permanent when no retry can mend it, with RetryAfter to say when to
// try again.
type Handler func(ctx context.Context, j store.Job) ([]byte, error)

// Defaults of Config.
const (
	DefaultLease       = 30 * time.Second
	DefaultPoll        = time.Second
	DefaultWorkers     = 2
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 5 * time.Minute
	DefaultMaxAttempts = 8
	// MaxRetryAfter bounds the delay a handler may ask for.
	MaxRetryAfter = time.Hour
)

// Config configures a Runner.
type Config struct {
	Workspace jam.WorkspaceID
	// Owner names this runner in claims (a daemon's run ID, say).
	Owner string
	// Lease is how long a claim holds without a heartbeat.
	Lease time.Duration
	// Poll is how often an idle worker looks for due jobs when nothing
	// woke it (a job of another handle, a retry coming due).
	Poll    time.Duration
	Workers int
	// BackoffBase and BackoffMax shape the delay after a failed attempt:
	// BackoffBase × 2^(attempt-1), at most BackoffMax.
	BackoffBase, BackoffMax time.Duration
	Minter                  *jam.Minter
	Now                     func() time.Time
	Logger                  *slog.Logger
}

// Runner runs the registered kinds' jobs.
type Runner struct {
	cfg      Config
	st       Store
	log      *slog.Logger
	mu       sync.Mutex
	handlers map[string]Handler // guarded by mu; fixed once Run starts
	running  bool               // guarded by mu
	wake     chan struct{}
}

// New returns a runner of cfg over st.
func New(cfg Config, st Store) (*Runner, error) {
	if cfg.Workspace == "" || cfg.Owner == "" {
		return nil, fmt.Errorf("%w: job runner: a workspace and an owner are required", jam.ErrInvalid)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease > store.MaxJobLease {
		return nil, fmt.Errorf("%w: job runner: lease %s over %s", jam.ErrInvalid, cfg.Lease, store.MaxJobLease)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = DefaultBackoffBase
	}
	if cfg.BackoffMax < cfg.BackoffBase {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffBase)
	}
	if cfg.Minter == nil {
		cfg.Minter = jam.NewMinter(nil, nil)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, st: st, log: log.With("component", "job"), handlers: map[string]Handler{}, wake: make(chan struct{}, 1)}, nil
}

// Register sets the handler of kind; it must be called before Run.
func (r *Runner) Register(kind string, h Handler) error {
	if err := store.ValidateJobKind(kind); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.running:
		return fmt.Errorf("%w: job runner: kind %q registered after Run", jam.ErrConflict, kind)
	case r.handlers[kind] != nil:
		return fmt.Errorf("%w: job runner: kind %q registered twice", jam.ErrAlreadyExists, kind)
	case len(r.handlers) >= store.MaxJobClaimKinds:
		return fmt.Errorf("%w: job runner: more than %d kinds", jam.ErrInvalid, store.MaxJobClaimKinds)
	}
	r.handlers[kind] = h
	return nil
}

// Spec describes a job to enqueue.
type Spec struct {
	Kind string
	// Key, when not "", makes the enqueue idempotent: a job of this kind
	// and key enqueued before (in any state) is returned instead.
	Key     string
	Payload []byte
	// MaxAttempts bounds the attempts (0: DefaultMaxAttempts).
	MaxAttempts int
	// RunAfter delays the first attempt (zero: now).
	RunAfter time.Time
}

// Enqueue stores a job and wakes a worker of this runner.
func (r *Runner) Enqueue(ctx context.Context, s Spec) (store.Job, error) {
	attempts := s.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	j, err := r.st.JobEnqueue(ctx, store.Job{ID: jam.New[jam.JobID](r.cfg.Minter), WorkspaceID: r.cfg.Workspace, Kind: s.Kind,
		IdempotencyKey: s.Key, Payload: s.Payload, MaxAttempts: attempts, RunAfter: s.RunAfter, CreatedAt: r.cfg.Now()})
	if err != nil {
		return store.Job{}, fmt.Errorf("enqueue %s job: %w", s.Kind, err)
	}
	r.Wake()
	return j, nil
}

// Wake makes an idle worker look for due jobs now (after a retry through
// the API, say).
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run runs the workers until ctx ends, then waits for them (a running
// handler sees its context cancelled) and returns ctx's error. A runner
// runs once.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return fmt.Errorf("%w: job runner: Run called twice", jam.ErrConflict)
	}
	r.running = true
	kinds := make([]string, 0, len(r.handlers))
	for k := range r.handlers {
		kinds = append(kinds, k)
	}
	r.mu.Unlock()
	if len(kinds) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() { r.work(ctx, kinds) })
	}
	wg.Wait()
	return ctx.Err()
}

// work is one worker's loop: claim, run, settle; idle until woken or
// the poll interval passes when nothing is due.
func (r *Runner) work(ctx context.Context, kinds []string) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
		case <-r.wake:
		}
		for ctx.Err() == nil {
			j, err := r.st.JobClaim(ctx, store.JobClaimParams{WorkspaceID: r.cfg.Workspace, Kinds: kinds, Owner: r.cfg.Owner,
				Lease: r.cfg.Lease, At: r.cfg.Now()})
			if err != nil {
				if !errors.Is(err, jam.ErrNotFound) && ctx.Err() == nil {
					r.log.Warn("claiming a job failed", "err", err)
				}
				break
			}
			// Another job may be due too: let an idle sibling look.
			r.Wake()
			r.runOne(ctx, j)
		}
		idle.Reset(r.cfg.Poll)
	}
}

// runOne runs one claimed attempt under a heartbeat and settles it.
func (r *Runner) runOne(ctx context.Context, j store.Job) {
	r.mu.Lock()
	h := r.handlers[j.Kind]
	r.mu.Unlock()
	log := r.log.With("job", j.ID, "kind", j.Kind, "attempt", j.Attempt, "generation", j.Generation)
	hctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.heartbeat(hctx, cancel, j) })
	result, herr := runHandler(hctx, h, j)
	lost := context.Cause(hctx)
	cancel(nil)
	wg.Wait()
	if ctx.Err() != nil {
		// The runner stops: the attempt's outcome is unknown; the lease
		// lapses and the job is claimed again.
		return
	}
	if errors.Is(lost, jam.ErrLeaseLost) {
		log.Warn("job lost its lease while running; its result is dropped", "err", lost)
		return
	}
	now := r.cfg.Now()
	if herr == nil {
		_, err := r.st.JobComplete(ctx, store.JobCompleteParams{WorkspaceID: j.WorkspaceID, ID: j.ID, Generation: j.Generation, Result: result, At: now})
		r.settled(log, err, "succeeded")
		return
	}
	msg := herr.Error()
	if len(msg) > store.MaxJobError {
		msg = msg[:store.MaxJobError]
	}
	_, err := r.st.JobFail(ctx, store.JobFailParams{WorkspaceID: j.WorkspaceID, ID: j.ID, Generation: j.Generation, Error: msg,
		RetryAt: now.Add(r.delay(j.Attempt, herr)), Dead: IsPermanent(herr), At: now})
	log.Info("job attempt failed", "err", herr, "permanent", IsPermanent(herr))
	r.settled(log, err, "failed")
}

func (r *Runner) settled(log *slog.Logger, err error, what string) {
	switch {
	case err == nil:
		log.Debug("job " + what)
	case errors.Is(err, jam.ErrLeaseLost):
		log.Warn("a stale worker's result was refused", "err", err)
	default:
		// The lease lapses and the job runs again: handlers are
		// idempotent.
		log.Warn("recording a job's outcome failed", "err", err)
	}
}

// runHandler runs h, turning a panic into a permanent failure so one bad
// job cannot take the daemon down.
func runHandler(ctx context.Context, h Handler, j store.Job) (result []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Permanent(fmt.Errorf("job handler panicked: %v", p))
		}
	}()
	return h(ctx, j)
}

// heartbeat extends j's lease at a third of the lease until ctx ends; a
// refused heartbeat cancels ctx with the refusal.
func (r *Runner) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, j store.Job) {
	t := time.NewTicker(r.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.st.JobHeartbeat(ctx, j.WorkspaceID, j.ID, j.Generation, r.cfg.Now().Add(r.cfg.Lease))
		switch {
		case errors.Is(err, jam.ErrLeaseLost), errors.Is(err, jam.ErrNotFound):
			cancel(fmt.Errorf("job %s: %w", j.ID, jam.ErrLeaseLost))
			return
		case err != nil && ctx.Err() == nil:
			r.log.Warn("a job's heartbeat failed", "job", j.ID, "err", err)
		}
	}
}

// delay is when a failed attempt is tried again: the backoff of the
// attempt, or the handler's RetryAfter when that is later.
func (r *Runner) delay(attempt int, err error) time.Duration {
	d := r.cfg.BackoffBase
	for i := 1; i < attempt && d < r.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, r.cfg.BackoffMax)
	var ra *retryAfterError
	if errors.As(err, &ra) {
		d = max(d, min(ra.after, MaxRetryAfter))
	}
	return d
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as one no retry can mend: the job goes dead at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent says whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter asks that the next attempt come no sooner than after (a
// server's Retry-After, say; at most MaxRetryAfter).
func RetryAfter(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err, after}
}
