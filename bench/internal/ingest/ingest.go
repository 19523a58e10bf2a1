package ingest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/bench/internal/measure"
)

// Target is one implementation under test.
type Target interface {
	// Push makes payload durable for producer and returns once it is
	// acknowledged, with the latency of the push alone (what the target
	// does after the acknowledgement to consume the message is not
	// counted).
	Push(ctx context.Context, producer int, payload []byte) (time.Duration, error)
	// Extra returns figures specific to the target (may be nil).
	Extra() map[string]float64
	// Close releases the target.
	Close() error
}

// Names of the targets, as Open takes them.
const (
	// Jam is jam's spool over SQLite, undrained (see the package doc).
	Jam = "jam"
	// JamDrained is Jam with the spool drained as messages come.
	JamDrained = "jam-drained"
	// JamPostgres and JamPostgresDrained are the same over PostgreSQL
	// (Env.PostgresURL).
	JamPostgres        = "jam-postgres"
	JamPostgresDrained = "jam-postgres-drained"
	FileSpool          = "filespool"
	JetStream          = "jetstream"
)

// Targets lists the targets that need no server, jam first; the
// baselines' ratios are taken against Jam.
var Targets = []string{Jam, JamDrained, FileSpool, JetStream}

// PostgresTargets are the targets that need Env.PostgresURL.
var PostgresTargets = []string{JamPostgres, JamPostgresDrained}

// Env is what some targets need from outside.
type Env struct {
	// PostgresURL names a PostgreSQL server on which the postgres targets
	// may create (and drop) a database of their own per Open.
	PostgresURL string
}

// Open opens the named target with its data under dir.
func Open(ctx context.Context, name, dir string) (Target, error) {
	return OpenEnv(ctx, name, dir, Env{})
}

// OpenEnv is Open with env.
func OpenEnv(ctx context.Context, name, dir string, env Env) (Target, error) {
	switch name {
	case Jam, JamDrained:
		return openJam(ctx, dir, name == JamDrained)
	case JamPostgres, JamPostgresDrained:
		return openJamPostgres(ctx, dir, env.PostgresURL, name == JamPostgresDrained)
	case FileSpool:
		return openFileSpool(dir)
	case JetStream:
		return openJetStream(ctx, dir)
	}
	return nil, fmt.Errorf("ingest: unknown target %q", name)
}

// Options shape one run.
type Options struct {
	Producers int
	// Size is the payload size in bytes. Default 1024.
	Size int
	// Count, if positive, is the number of pushes; otherwise the run lasts
	// Duration (pushes begun before it ends complete).
	Count    int
	Duration time.Duration
}

// Result is the outcome of one run.
type Result struct {
	measure.Stats
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Run pushes with o.Producers concurrent producers into t and measures.
func Run(ctx context.Context, t Target, o Options) (Result, error) {
	if o.Producers < 1 {
		return Result{}, errors.New("ingest: producers must be positive")
	}
	if o.Size == 0 {
		o.Size = 1 << 10
	}
	payload := make([]byte, o.Size)
	_, _ = rand.Read(payload)
	var next atomic.Int64
	more := func() bool { return next.Add(1) <= int64(o.Count) }
	if o.Count <= 0 {
		deadline := time.Now().Add(o.Duration)
		more = func() bool { return time.Now().Before(deadline) }
	}
	var rec measure.Recorder
	errs := make([]error, o.Producers)
	var wg sync.WaitGroup
	start := time.Now()
	for p := range o.Producers {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			defer func() { rec.AddAll(lat) }()
			for more() && ctx.Err() == nil {
				d, err := t.Push(ctx, p, payload)
				if err != nil {
					errs[p] = fmt.Errorf("producer %d: %w", p, err)
					return
				}
				lat = append(lat, d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return Result{Stats: rec.Stats(elapsed), Extra: t.Extra()}, nil
}
