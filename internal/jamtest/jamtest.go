// Package jamtest starts a real jam daemon in-process, on its embedded hub,
// for tests and benchmarks outside internal/daemon that need the whole
// system: the daemon's control API client, the hub's address and the
// embedded hub owner's Band client. Besides the mains it is the only
// package that may import internal/daemon (internal/arch enforces that),
// so everything else reaches a daemon through it or as a child process.
//
// It takes no *testing.T, so the benchmark command (module bench) can use
// it outside a test.
package jamtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/datadir"
)

// Options configure a daemon started by [Start].
type Options struct {
	// DataDir is the daemon's data directory. Keep it short: the control
	// socket lives there and unix socket paths are limited to about 100
	// bytes. Required.
	DataDir string
	// HTTP serves the HTTP API and the web UI on a free loopback port, as
	// `jam up` does by default; off otherwise.
	HTTP bool
	// Log receives the daemon's log (text). Nil discards it.
	Log io.Writer
	// LogLevel is the daemon's log level. Default "warn".
	LogLevel string
	// ReadyTimeout bounds the wait for the daemon to answer. Default 30s.
	ReadyTimeout time.Duration
	// Store is the daemon's store: "sqlite" (the default) or a
	// postgres:// URL of an empty or jam database (see [TestStore]).
	Store string
	// ShutdownTimeout bounds the daemon's graceful stop. Default 30s, not
	// jamd's 4s: benchmarks and tests share a loaded machine, where a
	// graceful stop (draining the hub's HTTP requests) can take longer
	// without anything being wrong with what they measure.
	ShutdownTimeout time.Duration
}

// Daemon is one running daemon. Stop it when done.
type Daemon struct {
	// Client talks to the daemon's control API.
	Client *apiclient.Client
	// Status is the daemon's status once it was ready.
	Status wire.Status

	cancel context.CancelFunc
	done   chan error // Run's result, sent once
	wg     sync.WaitGroup

	stopOnce sync.Once
	stopErr  error // set inside stopOnce

	mu    sync.Mutex
	httpc *band.HTTP // guarded by mu; created by the first Owner
}

// Start runs a daemon with the embedded hub until Stop, and returns once
// its control API answers. The daemon outlives ctx, which bounds only the
// start.
func Start(ctx context.Context, o Options) (*Daemon, error) {
	if o.DataDir == "" {
		return nil, errors.New("jamtest: data dir is required")
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	if o.Store == "" {
		o.Store = config.DefaultStore
	}
	cfg := config.Config{DataDir: o.DataDir, LogLevel: o.LogLevel, LogFormat: config.DefaultLogFormat,
		ShutdownTimeout: o.ShutdownTimeout, Store: o.Store, Band: config.BandEmbedded,
		HubAddr: "127.0.0.1:0"}
	if o.HTTP {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	begin := time.Now() // a daemon this Start runs started after it
	d := &Daemon{cancel: cancel, done: make(chan error, 1), Client: apiclient.New(filepath.Join(o.DataDir, datadir.SocketFile))}
	d.wg.Go(func() { d.done <- daemon.Run(runCtx, cfg, daemon.Streams{Out: io.Discard, Err: logw}) })

	readyCtx, cancelReady := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancelReady()
	type ready struct {
		st  wire.Status
		err error
	}
	readyc := make(chan ready, 1)
	var waiter sync.WaitGroup
	waiter.Go(func() {
		st, err := d.Client.WaitReady(readyCtx, 10*time.Millisecond)
		readyc <- ready{st, err}
	})
	defer waiter.Wait()
	select {
	case r := <-readyc:
		if r.err != nil {
			return nil, errors.Join(fmt.Errorf("jamtest: daemon not ready: %w", r.err), d.Stop())
		}
		if r.st.StartedAt.Before(begin) {
			// The socket answered for a daemon that ran on this data
			// directory before this one started: this one's own result
			// decides (it is refused, the directory being in use).
			select {
			case err := <-d.done:
				d.done <- err // for Stop
				return nil, errors.Join(fmt.Errorf("jamtest: daemon exited during start: %w", err), d.Stop())
			case <-readyCtx.Done():
				return nil, errors.Join(fmt.Errorf("jamtest: daemon not ready: another daemon (pid %d) answers on %s", r.st.PID, o.DataDir), d.Stop())
			}
		}
		d.Status = r.st
		return d, nil
	case err := <-d.done:
		cancelReady()
		d.done <- err // for Stop
		return nil, errors.Join(fmt.Errorf("jamtest: daemon exited during start: %w", err), d.Stop())
	}
}

// Stop stops the daemon and waits for it; it returns the daemon's error,
// if it did not stop cleanly. It is safe to call more than once.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() {
		d.cancel()
		d.stopErr = <-d.done
		d.wg.Wait()
		d.Client.Close()
		d.mu.Lock()
		httpc := d.httpc
		d.mu.Unlock()
		if httpc != nil {
			httpc.CloseIdle()
		}
	})
	return d.stopErr
}

// Owner returns a Band client of the embedded hub's owner, the person who
// posts in rooms.
func (d *Daemon) Owner() (*band.Client, error) {
	key, err := os.ReadFile(d.Status.Band.OwnerKeyFile)
	if err != nil {
		return nil, fmt.Errorf("jamtest: owner key: %w", err)
	}
	d.mu.Lock()
	if d.httpc == nil {
		d.httpc = band.NewHTTP(band.HTTPConfig{})
	}
	hc := d.httpc
	d.mu.Unlock()
	c, err := band.NewClient(hc, d.Status.Band.URL, band.APIKey(strings.TrimSpace(string(key))))
	if err != nil {
		return nil, fmt.Errorf("jamtest: owner client: %w", err)
	}
	return c, nil
}
