package suite

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jamhq/jam/bench/internal/endtoend"
	"github.com/jamhq/jam/bench/internal/fanout"
	"github.com/jamhq/jam/bench/internal/footprint"
	"github.com/jamhq/jam/bench/internal/harnessturn"
	"github.com/jamhq/jam/bench/internal/ingest"
	"github.com/jamhq/jam/bench/internal/measure"
	"github.com/jamhq/jam/bench/internal/recovery"
	"github.com/jamhq/jam/internal/realagent"
)

// Scenario names, as --only takes them, in the order they run.
var scenarios = []string{"ingest", "endtoend", "footprint", "fanout", "recovery", "harness-turn"}

// Sizes are the knobs of a run; defaults and --quick differ only here.
type Sizes struct {
	IngestProducers []int         `json:"ingest_producers"`
	IngestDuration  time.Duration `json:"ingest_duration_ns"`
	// IngestRepeats is how many times each ingest cell runs (the targets
	// take turns); the table shows the run of median throughput.
	IngestRepeats int           `json:"ingest_repeats"`
	E2ERate       float64       `json:"e2e_rate"`
	E2EDuration   time.Duration `json:"e2e_duration_ns"`
	E2EPosters    int           `json:"e2e_posters"`
	Agents        int           `json:"footprint_agents"`
	Rooms         int           `json:"footprint_rooms"`
	Idle          time.Duration `json:"footprint_idle_ns"`
	FanoutEvents  int           `json:"fanout_events"`
	// RecoveryMessages are queued across RecoveryRooms rooms; jam and the
	// hub-alone baseline stop after RecoveryJamSample and RecoveryHubSample
	// of them and extrapolate.
	RecoveryMessages  int `json:"recovery_messages"`
	RecoveryRooms     int `json:"recovery_rooms"`
	RecoveryJamSample int `json:"recovery_jam_sample"`
	RecoveryHubSample int `json:"recovery_hub_sample"`
	// HarnessTurns is how many measured turns each harness takes each
	// way; Harnesses are the harnesses measured (those whose CLI is not
	// installed are skipped).
	HarnessTurns int      `json:"harness_turns"`
	Harnesses    []string `json:"harnesses"`
	// PostgresURL, when set, adds the ingest scenario's PostgreSQL
	// targets and the recovery scenario's jam over PostgreSQL, run on
	// databases they create on that server and drop. It is never
	// written out (it may hold a password); Postgres says it was set.
	PostgresURL string `json:"-"`
	Postgres    bool   `json:"postgres"`
}

var (
	defaultSizes = Sizes{IngestProducers: []int{1, 8, 64}, IngestDuration: 4 * time.Second, IngestRepeats: 3,
		E2ERate: 20, E2EDuration: 10 * time.Second, E2EPosters: 16,
		Agents: 50, Rooms: 500, Idle: 5 * time.Second, FanoutEvents: 50_000,
		RecoveryMessages: 100_000, RecoveryRooms: 1_000, RecoveryJamSample: 5_000, RecoveryHubSample: 5_000,
		HarnessTurns: 30, Harnesses: harnessturn.Harnesses}
	quickSizes = Sizes{IngestProducers: []int{1, 64}, IngestDuration: time.Second, IngestRepeats: 1,
		E2ERate: 10, E2EDuration: 2 * time.Second, E2EPosters: 8,
		Agents: 5, Rooms: 50, Idle: time.Second, FanoutEvents: 5_000,
		RecoveryMessages: 2_000, RecoveryRooms: 50, RecoveryJamSample: 2_000, RecoveryHubSample: 2_000,
		// The demo agent alone: seconds, and no CLI to install.
		HarnessTurns: 5, Harnesses: []string{"demo"}}
)

// Report is the JSON document of a run.
type Report struct {
	Started  time.Time      `json:"started"`
	Seconds  float64        `json:"seconds"`
	Quick    bool           `json:"quick"`
	Machine  Machine        `json:"machine"`
	Sizes    Sizes          `json:"sizes"`
	Rows     []Row          `json:"rows"`
	Details  map[string]any `json:"details"`
	Warnings []string       `json:"warnings,omitempty"`
}

// Main runs the command and returns its exit code. When the environment
// asks for the footprint or the recovery child, it is that instead (see
// packages footprint and recovery).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The harness-turn scenario re-executes this binary as the demo agent
	// and as the network bridge of an isolated CLI.
	realagent.RunBridgeIfAsked()
	harnessturn.RunDemoIfAsked()
	if dir := os.Getenv(footprint.ChildEnv); dir != "" {
		if err := footprint.Child(ctx, dir, os.Stdin, stdout); err != nil {
			fmt.Fprintln(stderr, "jambench footprint child:", err)
			return 1
		}
		return 0
	}
	if dir := os.Getenv(recovery.ChildEnv); dir != "" {
		if err := recovery.Child(ctx, dir, os.Getenv(recovery.StoreEnv), os.Stdin); err != nil {
			fmt.Fprintln(stderr, "jambench recovery child:", err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("jambench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonFile := fs.String("json", "", "also write the table and every run's details as JSON to `FILE`")
	quick := fs.Bool("quick", false, "short runs with small sizes (a smoke test, not a measurement)")
	only := fs.String("only", strings.Join(scenarios, ","), "comma-separated `scenarios` to run")
	markdown := fs.Bool("markdown", false, "print the table as Markdown")
	rate := fs.Float64("rate", 0, "offered load of the fixed-load end-to-end run, in msgs/s (default 20, or 10 with --quick)")
	turns := fs.Int("turns", 0, "measured turns per harness and way of the harness-turn scenario (default 30, or 5 with --quick)")
	pgURL := fs.String("postgres", os.Getenv("JAM_BENCH_POSTGRES_URL"), "a PostgreSQL server `URL` on which ingest and recovery also run over jam's PostgreSQL store, in databases they create and drop (default $JAM_BENCH_POSTGRES_URL)")
	harnesses := fs.String("harnesses", "", "comma-separated `harnesses` of the harness-turn scenario (default "+strings.Join(harnessturn.Harnesses, ",")+", or demo with --quick)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: jambench [flags]\n\nRuns jam's benchmarks beside their baselines and prints a table.\nScenarios: %s.\n\n", strings.Join(scenarios, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	selected := map[string]bool{}
	for s := range strings.SplitSeq(*only, ",") {
		if s = strings.TrimSpace(s); !slices.Contains(scenarios, s) {
			fmt.Fprintf(stderr, "jambench: unknown scenario %q (have %s)\n", s, strings.Join(scenarios, ", "))
			return 2
		}
		selected[s] = true
	}
	sizes := defaultSizes
	if *quick {
		sizes = quickSizes
	}
	if *rate > 0 {
		sizes.E2ERate = *rate
	}
	if *turns > 0 {
		sizes.HarnessTurns = *turns
	}
	sizes.PostgresURL, sizes.Postgres = *pgURL, *pgURL != ""
	if *harnesses != "" {
		sizes.Harnesses = nil
		for h := range strings.SplitSeq(*harnesses, ",") {
			if h = strings.TrimSpace(h); !slices.Contains(harnessturn.Harnesses, h) {
				fmt.Fprintf(stderr, "jambench: unknown harness %q (have %s)\n", h, strings.Join(harnessturn.Harnesses, ", "))
				return 2
			}
			sizes.Harnesses = append(sizes.Harnesses, h)
		}
	}
	rep, err := run(ctx, sizes, *quick, selected, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jambench:", err)
		return 1
	}
	if *markdown {
		markdownTable(stdout, rep.Rows)
	} else if err := printTable(stdout, rep.Rows); err != nil {
		fmt.Fprintln(stderr, "jambench:", err)
		return 1
	}
	if ht, ok := rep.Details["harness-turn"].([]harnessturn.Result); ok {
		fmt.Fprintln(stdout, "\nTurn time per harness (ms), through jam and the same CLI driven directly, interleaved:")
		if err := harnessturn.WriteTable(stdout, ht, *markdown); err != nil {
			fmt.Fprintln(stderr, "jambench:", err)
			return 1
		}
		fmt.Fprintln(stdout, "\nWhere a turn through jam spends its time (ms, medians; jamd's event times):")
		if err := harnessturn.WritePhases(stdout, ht, *markdown); err != nil {
			fmt.Fprintln(stderr, "jambench:", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "\n%d CPUs (%s), kernel %s, %s; load average %s before, %s after; %.0f s\n",
		rep.Machine.CPUs, rep.Machine.CPU, rep.Machine.Kernel, rep.Machine.Go, rep.Machine.LoadBefore, rep.Machine.LoadAfter, rep.Seconds)
	for _, w := range rep.Warnings {
		fmt.Fprintln(stdout, "warning:", w)
	}
	if *jsonFile != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonFile, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "jambench:", err)
			return 1
		}
	}
	return 0
}

// run runs the selected scenarios, in a temporary directory it removes.
func run(ctx context.Context, sizes Sizes, quick bool, selected map[string]bool, log io.Writer) (*Report, error) {
	dir, err := os.MkdirTemp("", "jb") // short: unix socket paths are limited
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &Report{Started: time.Now(), Quick: quick, Machine: describeMachine(), Sizes: sizes, Details: map[string]any{}}
	steps := []struct {
		name string
		fn   func(context.Context, Sizes, string, *Report, io.Writer) error
	}{
		{"ingest", runIngest}, {"endtoend", runEndToEnd}, {"footprint", runFootprint}, {"fanout", runFanout},
		{"recovery", runRecovery}, {"harness-turn", runHarnessTurn},
	}
	for _, s := range steps {
		if !selected[s.name] {
			continue
		}
		sub, err := os.MkdirTemp(dir, s.name[:2])
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "== %s\n", s.name)
		if err := s.fn(ctx, sizes, sub, rep, log); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Machine.LoadAfter = loadavg()
	return rep, nil
}

func runIngest(ctx context.Context, sizes Sizes, dir string, rep *Report, log io.Writer) error {
	details := map[string][]ingest.Result{}
	targets := ingest.Targets
	if sizes.PostgresURL != "" {
		targets = append(slices.Clone(targets), ingest.PostgresTargets...)
	}
	env := ingest.Env{PostgresURL: sizes.PostgresURL}
	for _, p := range sizes.IngestProducers {
		runs := map[string][]ingest.Result{}
		for i := range max(sizes.IngestRepeats, 1) {
			for _, name := range targets {
				r, err := ingestOnce(ctx, name, p, sizes.IngestDuration, dir, env)
				if err != nil {
					return fmt.Errorf("%s, %d producers: %w", name, p, err)
				}
				fmt.Fprintf(log, "%-9s %2d producers, run %d: %8.0f msgs/s  p50 %6.2f ms  p99 %7.2f ms\n", name, p, i+1, r.PerSec, measure.Ms(r.P50), measure.Ms(r.P99))
				runs[name] = append(runs[name], r)
				details[fmt.Sprintf("%s/producers=%d", name, p)] = runs[name]
			}
		}
		scen := fmt.Sprintf("durable ingest, %d producer%s, 1 KiB", p, map[bool]string{true: "s"}[p > 1])
		jam := median(runs[ingest.Jam])
		for _, base := range []struct{ key, name string }{{ingest.FileSpool, "file spool"}, {ingest.JetStream, "JetStream"}} {
			b := median(runs[base.key])
			rep.Rows = append(rep.Rows,
				row(scen, "acked msgs/s vs "+base.name, "msgs/s", jam.PerSec, b.PerSec, base.name, "higher"),
				row(scen, "ack p50 vs "+base.name, "ms", measure.Ms(jam.P50), measure.Ms(b.P50), base.name, "lower"),
				row(scen, "ack p99 vs "+base.name, "ms", measure.Ms(jam.P99), measure.Ms(b.P99), base.name, "lower"))
		}
		// jam against itself: drained against undrained, PostgreSQL
		// against SQLite.
		for _, c := range []struct{ key, base, metric, baseName string }{
			{ingest.JamDrained, ingest.Jam, "SQLite drained vs undrained", "SQLite undrained"},
			{ingest.JamPostgres, ingest.Jam, "PostgreSQL vs SQLite, undrained", "SQLite undrained"},
			{ingest.JamPostgresDrained, ingest.JamDrained, "PostgreSQL vs SQLite, drained", "SQLite drained"},
		} {
			if len(runs[c.key]) == 0 {
				continue
			}
			j, b := median(runs[c.key]), median(runs[c.base])
			rep.Rows = append(rep.Rows,
				row(scen, "acked msgs/s, "+c.metric, "msgs/s", j.PerSec, b.PerSec, c.baseName, "higher"),
				row(scen, "ack p99, "+c.metric, "ms", measure.Ms(j.P99), measure.Ms(b.P99), c.baseName, "lower"))
		}
		for _, name := range targets {
			var xs []string
			for _, r := range runs[name] {
				xs = append(xs, fmt.Sprintf("%.0f", r.PerSec))
			}
			lo, hi := spread(runs[name])
			fmt.Fprintf(log, "%d producers: %-20s msgs/s per run: %s (spread %.0f–%.0f)\n", p, name, strings.Join(xs, " / "), lo, hi)
		}
		if n := len(runs[ingest.Jam]); n > 1 {
			var ratios []string
			for i := range n {
				ratios = append(ratios, fmt.Sprintf("%.1f", runs[ingest.Jam][i].PerSec/runs[ingest.FileSpool][i].PerSec))
			}
			fmt.Fprintf(log, "%d producers: jam / file spool per run: %s\n", p, strings.Join(ratios, ", "))
		}
	}
	rep.Details["ingest"] = details
	return nil
}

// ingestOnce runs one ingest cell on a fresh target.
func ingestOnce(ctx context.Context, name string, producers int, d time.Duration, dir string, env ingest.Env) (ingest.Result, error) {
	sub, err := os.MkdirTemp(dir, name)
	if err != nil {
		return ingest.Result{}, err
	}
	t, err := ingest.OpenEnv(ctx, name, sub, env)
	if err != nil {
		return ingest.Result{}, errors.Join(err, os.RemoveAll(sub))
	}
	r, err := ingest.Run(ctx, t, ingest.Options{Producers: producers, Duration: d})
	return r, errors.Join(err, t.Close(), os.RemoveAll(sub))
}

// spread returns the lowest and highest throughput of runs.
func spread(runs []ingest.Result) (lo, hi float64) {
	for i, r := range runs {
		if i == 0 || r.PerSec < lo {
			lo = r.PerSec
		}
		hi = max(hi, r.PerSec)
	}
	return lo, hi
}

// median returns the run of median throughput (the lower middle one of an
// even number).
func median(runs []ingest.Result) ingest.Result {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b ingest.Result) int { return cmp.Compare(a.PerSec, b.PerSec) })
	return sorted[(len(sorted)-1)/2]
}

func runEndToEnd(ctx context.Context, sizes Sizes, dir string, rep *Report, log io.Writer) error {
	o := endtoend.Options{Rate: sizes.E2ERate, Duration: sizes.E2EDuration, Posters: sizes.E2EPosters, Dir: dir}
	jam, err := endtoend.RunJam(ctx, o)
	if err != nil {
		return err
	}
	hub, err := endtoend.RunHub(ctx, o)
	if err != nil {
		return err
	}
	rep.Details["endtoend"] = map[string][]endtoend.Result{"jam": jam, "hub": hub}
	for i, j := range jam {
		h := hub[i]
		scen := "end to end on the hub, saturation"
		if j.Load == endtoend.Fixed {
			scen = fmt.Sprintf("end to end on the hub, %.0f msgs/s offered", j.Offered)
		}
		for _, r := range []endtoend.Result{j, h} {
			if r.Lost > 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %d messages not settled within the drain", scen, r.Lost))
			}
		}
		fmt.Fprintf(log, "%s: jam %0.f msgs/s (deliver p99 %.1f ms, settle p99 %.1f ms), hub %0.f msgs/s (deliver p99 %.1f ms, settle p99 %.1f ms)\n",
			scen, j.Settlement.PerSec, measure.Ms(j.Delivery.P99), measure.Ms(j.Settlement.P99),
			h.Settlement.PerSec, measure.Ms(h.Delivery.P99), measure.Ms(h.Settlement.P99))
		rep.Rows = append(rep.Rows,
			row(scen, "settled msgs/s", "msgs/s", j.Settlement.PerSec, h.Settlement.PerSec, "hub alone", "higher"),
			row(scen, "post → delivery p50", "ms", measure.Ms(j.Delivery.P50), measure.Ms(h.Delivery.P50), "hub alone", "lower"),
			row(scen, "post → delivery p99", "ms", measure.Ms(j.Delivery.P99), measure.Ms(h.Delivery.P99), "hub alone", "lower"),
			row(scen, "post → settled p50", "ms", measure.Ms(j.Settlement.P50), measure.Ms(h.Settlement.P50), "hub alone", "lower"),
			row(scen, "post → settled p99", "ms", measure.Ms(j.Settlement.P99), measure.Ms(h.Settlement.P99), "hub alone", "lower"))
	}
	return nil
}

func runFootprint(ctx context.Context, sizes Sizes, dir string, rep *Report, log io.Writer) error {
	empty, err := footprint.Run(ctx, footprint.Options{Idle: sizes.Idle, Dir: dir})
	if err != nil {
		return err
	}
	loaded, err := footprint.Run(ctx, footprint.Options{Agents: sizes.Agents, Rooms: sizes.Rooms, Idle: sizes.Idle, Dir: dir})
	if err != nil {
		return err
	}
	rep.Details["footprint"] = map[string]footprint.Result{"empty": empty, "loaded": loaded}
	fmt.Fprintf(log, "idle daemon: empty %d KiB / %d goroutines; %d agents, %d rooms (set up in %.1f s): %d KiB / %d goroutines\n",
		empty.Figures.RSSKiBAfterGC, empty.Figures.Goroutines, loaded.Agents, loaded.Rooms, loaded.Setup, loaded.Figures.RSSKiBAfterGC, loaded.Figures.Goroutines)
	scen := fmt.Sprintf("idle daemon, %d agents, %d bound rooms", loaded.Agents, loaded.Rooms)
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	rep.Rows = append(rep.Rows,
		row(scen, "resident memory after a GC", "MiB", mib(loaded.Figures.RSSKiBAfterGC), mib(empty.Figures.RSSKiBAfterGC), "idle daemon with nothing", "lower"),
		row(scen, "resident memory as found", "MiB", mib(loaded.Figures.RSSKiB), mib(empty.Figures.RSSKiB), "idle daemon with nothing", "lower"),
		row(scen, "goroutines", "count", float64(loaded.Figures.Goroutines), float64(empty.Figures.Goroutines), "idle daemon with nothing", "lower"))
	return nil
}

func runFanout(ctx context.Context, sizes Sizes, dir string, rep *Report, log io.Writer) error {
	results := map[string]fanout.Result{}
	for _, o := range []fanout.Options{{Readers: 1}, {Readers: 10}, {Readers: 100}, {Readers: 10, Stalled: true}} {
		sub, err := os.MkdirTemp(dir, "fo")
		if err != nil {
			return err
		}
		o.Events, o.Dir = sizes.FanoutEvents, sub
		r, err := fanout.Run(ctx, o)
		if err = errors.Join(err, os.RemoveAll(sub)); err != nil {
			return err
		}
		key := fmt.Sprintf("subs=%d/stalled=%t", o.Readers, o.Stalled)
		fmt.Fprintf(log, "%-22s %8.0f events/s  %9.0f deliveries/s  %d resyncs\n", key, r.PerSec, r.DeliveriesPerSec, r.Resyncs)
		results[key] = r
	}
	rep.Details["fanout"] = results
	one, ten, hundred, stalled := results["subs=1/stalled=false"], results["subs=10/stalled=false"], results["subs=100/stalled=false"], results["subs=10/stalled=true"]
	scen := fmt.Sprintf("event fan-out, %d events", sizes.FanoutEvents)
	rep.Rows = append(rep.Rows,
		row(scen, "events/s to 10 subscribers", "events/s", ten.PerSec, one.PerSec, "1 subscriber", "higher"),
		row(scen, "events/s to 100 subscribers", "events/s", hundred.PerSec, one.PerSec, "1 subscriber", "higher"),
		row(scen, "deliveries/s to 100 subscribers", "deliveries/s", hundred.DeliveriesPerSec, one.DeliveriesPerSec, "1 subscriber", "higher"),
		row(scen, "events/s to 10 + 1 stalled", "events/s", stalled.PerSec, ten.PerSec, "10 subscribers", "higher"))
	return nil
}

func runRecovery(ctx context.Context, sizes Sizes, dir string, rep *Report, log io.Writer) error {
	r, err := recovery.Run(ctx, recovery.Options{Messages: sizes.RecoveryMessages, Rooms: sizes.RecoveryRooms,
		JamSample: sizes.RecoveryJamSample, HubSample: sizes.RecoveryHubSample, PostgresURL: sizes.PostgresURL, Dir: dir, Log: log})
	if err != nil {
		return err
	}
	rep.Details["recovery"] = r
	if r.Jam.Taken < r.Messages {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("recovery: jam was stopped after %d of %d messages delivered (%.1f s); its times are extrapolated", r.Jam.Taken, r.Messages, r.Jam.SampleSeconds))
	}
	if pg := r.Postgres; pg != nil && pg.Taken < r.Messages {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("recovery: jam over PostgreSQL was stopped after %d of %d messages delivered (%.1f s); its times are extrapolated", pg.Taken, r.Messages, pg.SampleSeconds))
	}
	if r.Hub.Taken < r.Messages {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("recovery: the hub alone took %d of %d messages in %.1f s; its time to all is extrapolated", r.Hub.Taken, r.Messages, r.Hub.Seconds))
	}
	scen := fmt.Sprintf("recovery, %s queued across %s rooms", groupThousands(fmt.Sprint(r.Messages)), groupThousands(fmt.Sprint(r.Rooms)))
	rep.Rows = append(rep.Rows,
		row(scen, "time to first delivery vs file spool", "s", r.Jam.First, r.File.First, "file spool", "lower"),
		row(scen, "time to all redelivered vs file spool", "s", r.Jam.All, r.File.All, "file spool", "lower"),
		row(scen, "time to first delivery vs hub alone", "s", r.Jam.First, r.Hub.First, "hub alone", "lower"),
		row(scen, "time to all redelivered vs hub alone", "s", r.Jam.All, r.Hub.All, "hub alone", "lower"))
	if pg := r.Postgres; pg != nil {
		// jam against itself: the same backlog over PostgreSQL.
		rep.Rows = append(rep.Rows,
			row(scen, "time to first delivery, PostgreSQL vs SQLite", "s", pg.First, r.Jam.First, "SQLite", "lower"),
			row(scen, "time to all redelivered, PostgreSQL vs SQLite", "s", pg.All, r.Jam.All, "SQLite", "lower"),
			row(scen, "time to all redelivered, PostgreSQL vs hub alone", "s", pg.All, r.Hub.All, "hub alone", "lower"))
	}
	return nil
}

func runHarnessTurn(ctx context.Context, sizes Sizes, dir string, rep *Report, log io.Writer) error {
	res, err := harnessturn.Run(ctx, harnessturn.Options{Harnesses: sizes.Harnesses, Turns: sizes.HarnessTurns, Dir: dir, Log: log})
	if err != nil {
		return err
	}
	rep.Details["harness-turn"] = res
	for _, r := range res {
		if r.Skipped != "" {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("harness-turn: %s skipped: %s", r.Harness, r.Skipped))
			continue
		}
		scen := fmt.Sprintf("turn through jam, %s, %d turns", r.Harness, r.Direct.Count)
		p50, p99 := r.Overhead()
		rep.Rows = append(rep.Rows,
			row(scen, "post → reply p50 vs direct", "ms", measure.Ms(r.Reply.P50), measure.Ms(r.Direct.P50), "direct", "lower"),
			row(scen, "post → reply p90 vs direct", "ms", measure.Ms(r.Reply.P90), measure.Ms(r.Direct.P90), "direct", "lower"),
			row(scen, "post → reply p99 vs direct", "ms", measure.Ms(r.Reply.P99), measure.Ms(r.Direct.P99), "direct", "lower"),
			row(scen, "post → settled p50 vs direct", "ms", measure.Ms(r.Settled.P50), measure.Ms(r.Direct.P50), "direct", "lower"),
			row(scen, "overhead p50 vs target", "ms", measure.Ms(p50), measure.Ms(harnessturn.Target), "target", "lower"),
			row(scen, "overhead p99", "ms", measure.Ms(p99), 0, "", "lower"))
	}
	return nil
}
