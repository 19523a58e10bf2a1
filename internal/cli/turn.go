package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// TurnListOptions are the inputs of "jam turn list".
type TurnListOptions struct {
	IO      *IOStreams
	DataDir string
	Session string
	JSON    bool
}

// newTurnCmd groups the commands about turns.
func newTurnCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "turn",
		Short: "Show the turns of owned agents' sessions",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	opts := &TurnListOptions{IO: io}
	list := &cobra.Command{
		Use:   "list SESSION [--json]",
		Short: "List a session's turns: state, reason, message, lease generation",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Session = cfg.DataDir, args[0]
			return runTurnList(c.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cancel := &cobra.Command{
		Use:   "cancel TURN",
		Short: "Cancel a queued or running turn; it settles nothing",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			client := newClient(cfg.DataDir)
			defer client.Close()
			if err := client.CancelTurn(c.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "cancelling %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, cancel)
	return cmd
}

func runTurnList(ctx context.Context, opts *TurnListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	ts, err := client.Turns(ctx, opts.Session)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, map[string]any{"turns": nonNil(ts)})
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SEQ\tTURN\tSTATE\tREASON\tMESSAGE\tLEASE GEN")
	for _, t := range ts {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\n", t.Seq, t.ID, t.State, t.Reason, t.Message, t.LeaseGeneration)
	}
	return w.Flush()
}
