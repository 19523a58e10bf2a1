package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/config"
)

// HubOptions are the inputs of "jam hub".
type HubOptions struct {
	IO       *IOStreams
	Addr     string
	DataDir  string
	LogLevel string
}

// RunHubFunc runs the hub alone in the foreground until ctx ends. The main
// package injects it so this package does not import the hub.
type RunHubFunc func(ctx context.Context, opts HubOptions) error

// DefaultHubAddr is where "jam hub" listens by default.
const DefaultHubAddr = "127.0.0.1:4000"

func newHubCmd(io *IOStreams, deps Deps, runF func(context.Context, *HubOptions) error) *cobra.Command {
	opts := &HubOptions{IO: io}
	var addr, dataDir string
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run jam's Band-compatible hub alone, in the foreground",
		Long: `Run the hub alone, in the foreground: a Band-compatible chat server (REST
and Phoenix WebSocket) that keeps its state in its own SQLite file.

On first start it creates the owner user and writes the owner's user key to
owner.key (mode 0600) in the hub's data directory. "jam up" runs the same hub
inside the daemon unless it is pointed at another Band.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			a, err := config.ParseLoopbackAddr(addr)
			if err != nil || a == "" {
				if err == nil {
					err = errors.New("the hub needs an address")
				}
				return &usageError{err: fmt.Errorf("--addr: %w", err)}
			}
			opts.Addr = a
			opts.DataDir = dataDir
			if opts.DataDir == "" {
				cfg, err := loadConfig(c, deps)
				if err != nil {
					return err
				}
				opts.DataDir = filepath.Join(cfg.DataDir, "hub")
				opts.LogLevel = cfg.LogLevel
			} else if abs, err := filepath.Abs(opts.DataDir); err == nil {
				opts.DataDir = abs
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if deps.RunHub == nil {
				return errors.New("this binary cannot run the hub")
			}
			return deps.RunHub(c.Context(), *opts)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", DefaultHubAddr, "loopback address to listen on (port 0 picks one)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the hub's data directory (default: hub/ in jam's data directory)")
	return cmd
}
