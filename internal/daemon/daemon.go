package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/delivery"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/job"
	"github.com/jamhq/jam/internal/metrics"
	"github.com/jamhq/jam/internal/proc"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/version"
)

// DefaultWorkspace is the name of the workspace a single-user machine uses.
const DefaultWorkspace = "default"

// Streams are where the daemon writes: Out gets the start banner, Err the
// structured log.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// Run runs a daemon with cfg until ctx is cancelled, then stops it within
// cfg.ShutdownTimeout. It returns nil after a clean stop, and an error if
// the daemon could not start or did not stop cleanly.
func Run(ctx context.Context, cfg config.Config, streams Streams) (err error) {
	return RunWith(ctx, cfg, streams, Options{})
}

// Options are what a test may add to a daemon; the zero value is the
// daemon users run.
type Options struct {
	// WrapAPI wraps the control API's handler on every listener (a test's
	// validator of every answer against the OpenAPI document).
	WrapAPI func(http.Handler) http.Handler
}

// RunWith is Run with options.
func RunWith(ctx context.Context, cfg config.Config, streams Streams, opts Options) (err error) {
	if err := datadir.Prepare(cfg.DataDir); err != nil {
		return err
	}
	lock, err := datadir.Acquire(cfg.DataDir)
	if err != nil {
		return err
	}
	log := newLogger(cfg, streams.Err)

	d := &daemon{cfg: cfg, opts: opts, log: log, minter: jam.NewMinter(nil, nil), started: time.Now()}
	stack := &stopStack{log: log}
	stack.push("data directory lock", func(context.Context) error { return lock.Release() })

	if err := d.start(ctx, stack); err != nil {
		stopErr := stack.unwind(cfg.ShutdownTimeout)
		return errors.Join(err, stopErr)
	}
	d.printBanner(streams.Out)
	log.Info("jamd running", "pid", os.Getpid(), "data_dir", cfg.DataDir, "version", version.String())

	<-ctx.Done()
	log.Info("jamd stopping", "cause", context.Cause(ctx), "timeout", cfg.ShutdownTimeout)
	begun := time.Now()
	defer d.killOnSecondSignal()()
	if err := stack.unwind(cfg.ShutdownTimeout); err != nil {
		log.Error("jamd stopped uncleanly", "err", err, "took", time.Since(begun))
		return fmt.Errorf("stop: %w", err)
	}
	log.Info("jamd stopped", "took", time.Since(begun).Round(time.Millisecond))
	return nil
}

// daemon holds the running components.
type daemon struct {
	cfg     config.Config
	opts    Options
	log     *slog.Logger
	minter  *jam.Minter
	started time.Time

	procs     *proc.Ledger // the agent process groups this run started
	box       *secret.Box  // the daemon key: seals credentials and content at rest
	store     store.Store
	workspace store.Workspace
	run       store.DaemonRunStartResult
	api       *api.Server
	jobs      *job.Runner // the durable jobs of the workspace (jobs.go)
	// deliveries delivers change sets on the jobs (deliveries_api.go).
	deliveries *delivery.Service
	band       *bandLink
	msg        *messaging
	events     *events.Broker
	rooms      *roomFeeds
	activity   *roomActivity
	storage    storageHealth
	// metrics is the daemon's metric set, on a registry of its own,
	// handed to the spool, the engine, the owned runtimes and the API.
	metrics   *metrics.Metrics
	storeInfo store.Info // what the store was when it opened
}

// keyFile is the daemon key under the data directory.
const keyFile = "daemon.key"

// start brings components up in dependency order, pushing each one's stop
// onto stack as soon as it is running.
func (d *daemon) start(ctx context.Context, stack *stopStack) error {
	d.metrics = metrics.New()
	// Before any agent starts: end those a previous run left (stop.go).
	if err := d.startProcesses(ctx, stack); err != nil {
		return err
	}
	box, err := secret.LoadOrCreate(filepath.Join(d.cfg.DataDir, keyFile))
	if err != nil {
		return err
	}
	d.box = box
	st, err := d.openStore(ctx)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	d.store = st
	stack.push("store", func(context.Context) error { return st.Close() })
	if d.storeInfo, err = st.Info(ctx); err != nil {
		return d.redactStoreErr(err)
	}
	d.startStoreCheck(stack)
	d.startRetention(stack)

	ws, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](d.minter), Name: DefaultWorkspace, At: time.Now()})
	if err != nil {
		return fmt.Errorf("ensure default workspace: %w", err)
	}
	d.workspace = ws
	if err := d.repairDemoAgents(ctx); err != nil {
		return err
	}

	node, err := os.Hostname()
	if err != nil || node == "" {
		node = "localhost"
	}
	run, err := st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: node, PID: os.Getpid(), Version: version.String(), At: d.started})
	if err != nil {
		return fmt.Errorf("record daemon start: %w", err)
	}
	d.run = run
	if prev := run.Previous; prev != nil && !prev.Clean() {
		d.log.Warn("previous run ended without a clean stop; recovering", "previous_pid", prev.PID, "previous_started_at", prev.StartedAt)
	}
	stack.push("daemon run record", func(ctx context.Context) error {
		return st.DaemonRunStop(ctx, run.Run.ID, time.Now())
	})

	if err := d.startJobs(stack); err != nil {
		return err
	}
	if err := d.startEvents(ctx, stack); err != nil {
		return err
	}
	if err := d.startActivity(stack); err != nil {
		return err
	}
	if err := d.startBand(ctx, stack); err != nil {
		return err
	}
	if err := d.startMessaging(ctx, stack); err != nil {
		return err
	}
	if err := d.startRoomFeeds(ctx, stack); err != nil {
		return err
	}

	ui, err := d.newUI()
	if err != nil {
		return err
	}
	srv, err := api.New(api.Config{
		SocketPath: filepath.Join(d.cfg.DataDir, datadir.SocketFile),
		HTTPAddr:   d.cfg.HTTPAddr,
		TokenPath:  filepath.Join(d.cfg.DataDir, datadir.TokenFile),
		Logger:     d.log,
		UI:         ui,
		Metrics:    d.metrics,
		// Only the default address: one given stops the start when taken.
		HTTPFallback: !d.cfg.HTTPAddrSet && d.cfg.HTTPAddr == config.DefaultHTTPAddr,
		WrapHandler:  d.opts.WrapAPI,
	}, d)
	if err != nil {
		return err
	}
	// Set before Start: handlers read d.api as soon as the listener serves.
	d.api = srv
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("start control api: %w", err)
	}
	stack.push("control api", srv.Stop)
	return nil
}

// Status implements api.Backend.
func (d *daemon) Status(ctx context.Context) (wire.Status, error) {
	ss := d.storeStatus(ctx)
	st := wire.Status{
		State:         wire.StateRunning,
		Version:       version.String(),
		PID:           os.Getpid(),
		StartedAt:     d.started.UTC(),
		UptimeSeconds: time.Since(d.started).Seconds(),
		DataDir:       d.cfg.DataDir,
		Socket:        filepath.Join(d.cfg.DataDir, datadir.SocketFile),
		HTTPAddr:      d.api.HTTPAddr(),
		Store: wire.StoreStatus{Driver: ss.info.Driver, Location: ss.info.Location, SchemaVersion: ss.info.SchemaVersion,
			ServerVersion: ss.info.ServerVersion, Error: ss.problem, Check: d.storage.checkResult()},
		Workspace: wire.WorkspaceStatus{ID: d.workspace.ID, Name: d.workspace.Name},
		Band:      d.band.status(),
	}
	if prev := d.run.Previous; prev != nil {
		rs := &wire.RunStatus{PID: prev.PID, Version: prev.Version, StartedAt: prev.StartedAt, Clean: prev.Clean()}
		if prev.Clean() {
			t := prev.StoppedAt
			rs.StoppedAt = &t
		}
		st.PreviousRun = rs
	}
	return st, nil
}

func (d *daemon) printBanner(w io.Writer) {
	fmt.Fprintf(w, "jamd %s running (pid %d)\n", version.String(), os.Getpid())
	fmt.Fprintf(w, "  data dir     %s\n", d.cfg.DataDir)
	fmt.Fprintf(w, "  control api  unix:%s\n", filepath.Join(d.cfg.DataDir, datadir.SocketFile))
	if addr := d.api.HTTPAddr(); addr != "" {
		fmt.Fprintf(w, "  http api     http://%s (bearer token in %s)\n", addr, filepath.Join(d.cfg.DataDir, datadir.TokenFile))
		d.printUILink(w)
	}
	fmt.Fprintf(w, "  store        %s %s\n", d.storeInfo.Driver, d.storeInfo.Location)
	if d.band.mode == "embedded" {
		fmt.Fprintf(w, "  hub          %s (owner key in %s)\n", d.band.url, d.band.keyFile)
	} else {
		fmt.Fprintf(w, "  band         %s\n", d.band.url)
	}
	fmt.Fprintf(w, "  workspace    %s (%s)\n", d.workspace.Name, d.workspace.ID)
}

// RunCLI adapts Run to the command line's RunDaemonFunc.
func RunCLI(ctx context.Context, cfg config.Config, io *cli.IOStreams) error {
	return Run(ctx, cfg, Streams{Out: io.Out, Err: io.ErrOut})
}

// RunCLIWith is RunCLI with options (a test's).
func RunCLIWith(opts Options) cli.RunDaemonFunc {
	return func(ctx context.Context, cfg config.Config, io *cli.IOStreams) error {
		return RunWith(ctx, cfg, Streams{Out: io.Out, Err: io.ErrOut}, opts)
	}
}
