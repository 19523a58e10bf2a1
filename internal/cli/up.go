package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/config"
)

// UpOptions are the inputs of "jam up".
type UpOptions struct {
	IO     *IOStreams
	Config config.Config
	Run    RunDaemonFunc
}

func newUpCmd(io *IOStreams, deps Deps, runF func(context.Context, *UpOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the jam daemon in the foreground",
		Long: `Run the jam daemon (jamd) in the foreground until interrupted.

It prints where it listens (with a one-time sign-in link to the web UI),
logs to stderr, and stops cleanly on SIGINT or SIGTERM within
--shutdown-timeout. Only one daemon may use a data directory.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadConfig(c, deps)
			if err != nil {
				return err
			}
			opts := &UpOptions{IO: io, Config: cfg, Run: deps.RunDaemon}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runUp(c.Context(), opts)
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func runUp(ctx context.Context, opts *UpOptions) error {
	if opts.Run == nil {
		return errors.New("this binary cannot run the daemon")
	}
	return opts.Run(ctx, opts.Config, opts.IO)
}
