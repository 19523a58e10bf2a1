package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/config"
)

// UpOptions are the inputs of "jam up".
type UpOptions struct {
	IO     *IOStreams
	Config config.Config
	Run    RunDaemonFunc
	// Demo sets up the demo agent, owned by jam, in a room named demo.
	Demo bool
}

// demoName names both the demo agent and its room.
const demoName = "demo"

func newUpCmd(io *IOStreams, deps Deps, runF func(context.Context, *UpOptions) error) *cobra.Command {
	var demo bool
	cmd := &cobra.Command{
		Use:   "up [--demo]",
		Short: "Run the jam daemon in the foreground",
		Long: `Run the jam daemon (jamd) in the foreground until interrupted.

It prints where it listens (with a one-time sign-in link to the web UI),
logs to stderr, and stops cleanly on SIGINT or SIGTERM within
--shutdown-timeout. Only one daemon may use a data directory.

With --demo it also sets up jam's demo agent (the harness kind demo, which
jamd runs from its own executable at each start, so a rebuild or a cleaned
Go build cache does not break it) as an agent jam runs itself, in a room
named demo, unless they exist already: write "@demo hello" in that room to
see a turn run and its answer come back.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadConfig(c, deps)
			if err != nil {
				return err
			}
			opts := &UpOptions{IO: io, Config: cfg, Run: deps.RunDaemon, Demo: demo}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runUp(c.Context(), opts)
		},
	}
	config.RegisterFlags(cmd.Flags())
	cmd.Flags().BoolVar(&demo, "demo", false, "also set up the demo agent in a room named demo")
	return cmd
}

func runUp(ctx context.Context, opts *UpOptions) error {
	if opts.Run == nil {
		return errors.New("this binary cannot run the daemon")
	}
	if !opts.Demo {
		return opts.Run(ctx, opts.Config, opts.IO)
	}
	// The demo is set up through the daemon's own API once it is ready; a
	// failure to set it up is reported and leaves the daemon running.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		err := setUpDemo(ctx, newClient(opts.Config.DataDir), opts.IO)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(opts.IO.ErrOut, "jam up: --demo: %v\n", err)
		}
	})
	err := opts.Run(ctx, opts.Config, opts.IO)
	cancel() // the setup stops with the daemon
	wg.Wait()
	return err
}

// setUpDemo waits for the daemon, then adds the demo agent and its room
// unless they exist.
func setUpDemo(ctx context.Context, c *apiclient.Client, io *IOStreams) error {
	if _, err := c.WaitReady(ctx, 100*time.Millisecond); err != nil {
		return err
	}
	agents, err := c.Agents(ctx)
	if err != nil {
		return err
	}
	have := false
	for _, a := range agents {
		have = have || a.Name == demoName
	}
	if !have {
		_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: demoName, Runtime: &wire.AgentRuntime{
			// The demo kind: jamd runs its own executable at each
			// launch, so no path is stored. Its sessions stay in its own
			// home (the default state directory), which its sandbox lets
			// it write; jamd's data directory it cannot.
			Harness:    "demo",
			Permission: "allow",
		}})
		if err != nil {
			return fmt.Errorf("add the demo agent: %w", err)
		}
	}
	rooms, err := c.Rooms(ctx, "")
	if err != nil {
		return err
	}
	room := ""
	for _, r := range rooms {
		if r.Title == demoName {
			room = r.ID
		}
	}
	if room == "" {
		r, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: demoName, Agents: []string{demoName}})
		if err != nil {
			return fmt.Errorf("create the demo room: %w", err)
		}
		room = r.ID
	}
	// A room is named by its title too, so the hint needs no id.
	fmt.Fprintf(io.Out, "demo: agent @%s is in room %q (%s); write \"@%s hello\" there, in the web UI or with: jam room post %s \"@%s hello\"\n",
		demoName, demoName, room, demoName, demoName, demoName)
	return nil
}
