// Package footprint measures what an idle daemon costs: its resident
// memory and its goroutines, idle with 50 attached agents and 500 bound
// rooms (each agent has an open socket to the embedded hub), against an
// idle daemon with nothing configured.
//
// The daemon runs in a child process (this program, re-executed with
// ChildEnv set), so the figures are its own and not the benchmark's. The
// parent configures it through the control API, lets it idle, and then
// asks it for its figures: VmRSS from /proc/self/status and
// runtime.NumGoroutine, both as they are and after a garbage collection
// that returns free memory to the kernel (what the runtime's forced GC and
// background scavenger do by themselves within a few minutes of idling).
// The child's own reporting goroutine counts in both runs, so the
// difference is the daemon's.
package footprint

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jamtest"
)

// ChildEnv, set to a data directory, makes the program run as the child:
// see Child.
const ChildEnv = "JAMBENCH_FOOTPRINT_DAEMON"

// Figures are one measurement of the child.
type Figures struct {
	RSSKiB     int64 `json:"rss_kib"`
	Goroutines int   `json:"goroutines"`
	// After a runtime.GC and debug.FreeOSMemory.
	RSSKiBAfterGC     int64 `json:"rss_kib_after_gc"`
	GoroutinesAfterGC int   `json:"goroutines_after_gc"`
}

// Options shape a run.
type Options struct {
	Agents, Rooms int
	// Idle is how long the daemon idles before it is measured.
	Idle time.Duration
	// Dir holds the child's data directory; keep it short.
	Dir string
	// Parallel bounds the concurrent setup requests. Default 8.
	Parallel int
}

// Result is one run.
type Result struct {
	Agents  int     `json:"agents"`
	Rooms   int     `json:"rooms"`
	Setup   float64 `json:"setup_seconds"`
	Figures Figures `json:"figures"`
}

// Child runs the daemon of a measurement: it starts it in dir, writes
// the control socket's path as one line to out, then answers each line
// "measure" read from in with a JSON Figures line, until in ends.
func Child(ctx context.Context, dir string, in io.Reader, out io.Writer) error {
	d, err := jamtest.Start(ctx, jamtest.Options{DataDir: dir, HTTP: true, LogLevel: "error"})
	if err != nil {
		return err
	}
	defer d.Stop()
	if _, err := fmt.Fprintln(out, filepath.Join(dir, datadir.SocketFile)); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() != "measure" {
			continue
		}
		var f Figures
		f.Goroutines, f.RSSKiB = runtime.NumGoroutine(), rss()
		runtime.GC()
		debug.FreeOSMemory()
		f.GoroutinesAfterGC, f.RSSKiBAfterGC = runtime.NumGoroutine(), rss()
		if err := json.NewEncoder(out).Encode(f); err != nil {
			return err
		}
	}
	return errors.Join(sc.Err(), d.Stop())
}

// rss reads VmRSS from /proc/self/status, in KiB (-1 if unavailable).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// Run starts a child daemon, gives it o.Agents agents and o.Rooms rooms
// (room i holds agent i mod o.Agents and is bound to it), lets it idle for
// o.Idle and measures it.
func Run(ctx context.Context, o Options) (_ Result, err error) {
	if o.Parallel == 0 {
		o.Parallel = 8
	}
	exe, err := os.Executable()
	if err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp(o.Dir, "fp")
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), ChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	defer func() {
		stdin.Close()
		if werr := cmd.Wait(); werr != nil {
			err = errors.Join(err, fmt.Errorf("footprint child: %w", werr))
		}
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		return Result{}, fmt.Errorf("footprint child did not start: %v", lines.Err())
	}
	c := apiclient.New(lines.Text())
	defer c.Close()

	begun := time.Now()
	if err := setup(ctx, c, o); err != nil {
		return Result{}, err
	}
	res := Result{Agents: o.Agents, Rooms: o.Rooms, Setup: time.Since(begun).Seconds()}
	select {
	case <-time.After(o.Idle):
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	if _, err := io.WriteString(stdin, "measure\n"); err != nil {
		return Result{}, err
	}
	if !lines.Scan() {
		return Result{}, fmt.Errorf("footprint child did not answer: %v", lines.Err())
	}
	if err := json.Unmarshal(lines.Bytes(), &res.Figures); err != nil {
		return Result{}, err
	}
	return res, nil
}

// setup adds the agents, then creates and binds the rooms, o.Parallel
// requests at a time.
func setup(ctx context.Context, c *apiclient.Client, o Options) error {
	name := func(i int) string { return fmt.Sprintf("agent-%02d", i) }
	each := func(n int, fn func(i int) error) error {
		sem := make(chan struct{}, o.Parallel)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				errs[i] = fn(i)
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := each(o.Agents, func(i int) error {
		_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: name(i)})
		return err
	}); err != nil {
		return fmt.Errorf("add agents: %w", err)
	}
	return each(o.Rooms, func(i int) error {
		agent := name(i % o.Agents)
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("room %d", i), Agents: []string{agent}})
		if err != nil {
			return fmt.Errorf("create room %d: %w", i, err)
		}
		if _, err := c.Bind(ctx, wire.BindRequest{Agent: agent, Room: room.ID}); err != nil {
			return fmt.Errorf("bind room %d: %w", i, err)
		}
		return nil
	})
}
