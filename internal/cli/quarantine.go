package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// QuarantineListOptions are the inputs of "jam quarantine list".
type QuarantineListOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
}

// newQuarantineCmd groups the commands about quarantined records.
func newQuarantineCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "Show inbound records that could no longer be read",
		Long: `A spooled or queued message whose stored record can no longer be read (its
columns are invalid, or its sealed content no longer opens) is moved to the
quarantine with its raw bytes and the reason, and the rest of its room keeps
flowing. Band still holds the original message.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newQuarantineListCmd(io, deps, nil))
	return cmd
}

func newQuarantineListCmd(io *IOStreams, deps Deps, runF func(context.Context, *QuarantineListOptions) error) *cobra.Command {
	opts := &QuarantineListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List quarantined records, oldest first",
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
			return runQuarantineList(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runQuarantineList(ctx context.Context, opts *QuarantineListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	recs, err := client.Quarantine(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.QuarantineList{Records: nonNil(recs)})
	}
	if len(recs) == 0 {
		fmt.Fprintln(opts.IO.Out, "no quarantined records")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "ID\tWHEN\tSOURCE\tAGENT\tROOM\tMESSAGE\tREASON")
	for _, r := range recs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.QuarantinedAt.UTC().Format(time.DateTime), r.Source,
			orDash(r.Peer), orDash(r.Room), orDash(r.MessageID), r.Reason)
	}
	return tw.Flush()
}
