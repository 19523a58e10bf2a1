package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// ConnectionListOptions are the inputs of "jam connection list".
type ConnectionListOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
}

func newConnectionListCmd(io *IOStreams, deps Deps, runF func(context.Context, *ConnectionListOptions) error) *cobra.Command {
	opts := &ConnectionListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the connections (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runConnectionList(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runConnectionList(ctx context.Context, opts *ConnectionListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.Connections(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.Connections{Connections: nonNil(list)})
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.Out, "no connections; add one with: jam connection add PROVIDER NAME")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "PROVIDER\tNAME\tVERSION\tBASE URL\tID")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", c.Provider, c.Name, c.Version, orDash(c.BaseURL), c.ID)
	}
	return tw.Flush()
}
