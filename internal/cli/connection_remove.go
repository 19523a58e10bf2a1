package cli

import (
	"context"

	"github.com/spf13/cobra"
)

// ConnectionRemoveOptions are the inputs of "jam connection remove".
type ConnectionRemoveOptions struct {
	IO      *IOStreams
	DataDir string
	Ref     string
	JSON    bool
}

func newConnectionRemoveCmd(io *IOStreams, deps Deps, runF func(context.Context, *ConnectionRemoveOptions) error) *cobra.Command {
	opts := &ConnectionRemoveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "remove NAME|PROVIDER/NAME|ID",
		Short: "Remove a connection and disable its credential",
		Long: `Remove a connection: its credential versions are disabled (kept, never
used again) and its name can be added anew.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Ref = cfg.DataDir, args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runConnectionRemove(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runConnectionRemove(ctx context.Context, opts *ConnectionRemoveOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	c, err := client.ConnectionRemove(ctx, opts.Ref)
	if err != nil {
		return err
	}
	return printConnection(opts.IO, opts.JSON, "removed", c)
}
