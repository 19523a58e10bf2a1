package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// AckOptions are the inputs of "jam ack".
type AckOptions struct {
	IO      *IOStreams
	DataDir string
	Message string
	Agent   string
}

func newAckCmd(io *IOStreams, deps Deps, runF func(context.Context, *AckOptions) error) *cobra.Command {
	opts := &AckOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "ack MSG [--agent A]",
		Short: "Settle a queued message without answering it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Message = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAck(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "the agent the message is queued for (default: found by the daemon)")
	return cmd
}

func runAck(ctx context.Context, opts *AckOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	if err := client.Ack(ctx, opts.Message, wire.AckRequest{Agent: opts.Agent}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "acknowledged %s\n", opts.Message)
	return nil
}
