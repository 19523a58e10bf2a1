package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// UnbindOptions are the inputs of "jam unbind".
type UnbindOptions struct {
	IO      *IOStreams
	DataDir string
	Binding string
}

func newUnbindCmd(io *IOStreams, deps Deps, runF func(context.Context, *UnbindOptions) error) *cobra.Command {
	opts := &UnbindOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "unbind BINDING",
		Short: "Remove a binding (by id or alias)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Binding = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runUnbind(c.Context(), opts)
		},
	}
	return cmd
}

func runUnbind(ctx context.Context, opts *UnbindOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	if err := client.Unbind(ctx, opts.Binding); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "removed binding %s\n", opts.Binding)
	return nil
}
