package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// WaitOptions are the inputs of "jam wait".
type WaitOptions struct {
	IO      *IOStreams
	DataDir string
	Agent   string
	Room    string
	Timeout time.Duration
	Limit   int
	After   string
	JSON    bool
	// Quiet prints the message ids only, one a line.
	Quiet bool
}

func newWaitCmd(io *IOStreams, deps Deps, runF func(context.Context, *WaitOptions) error) *cobra.Command {
	opts := &WaitOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "wait [--agent A] [--room R] [--timeout D] [--limit N] [--after CURSOR] [-q | --json]",
		Short: "Wait until a message is queued, then print the inbox",
		Long: `Wait until a message is queued for the agent (and room), then print the
inbox as "jam inbox" does. When --timeout passes first it prints nothing
(with --json, {"messages":[]}) and exits 8. The timeout is at most 10m.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runWait(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "wait for this agent: peer key, scope, handle or name")
	cmd.Flags().StringVar(&opts.Room, "room", "", "wait for a message in this room")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", wire.DefaultWait, "give up after this long, e.g. 90s (at most 10m)")
	cmd.Flags().IntVar(&opts.Limit, "limit", wire.DefaultInboxLimit, "print at most this many messages, oldest first (1 to 1000)")
	cmd.Flags().StringVar(&opts.After, "after", "", "wait for a message after this cursor (the one a listing ended with)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print only the message ids, one a line (for $(...) in a shell)")
	return cmd
}

func runWait(ctx context.Context, opts *WaitOptions) error {
	if opts.Quiet && opts.JSON {
		return &usageError{err: errors.New("--quiet and --json do not go together")}
	}
	if opts.Timeout < time.Millisecond || opts.Timeout > wire.MaxWait {
		return &usageError{err: fmt.Errorf("--timeout %s is outside 1ms to %s", opts.Timeout, wire.MaxWait)}
	}
	if err := checkInboxLimit(opts.Limit); err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	inbox, err := client.WaitInbox(ctx, wire.WaitRequest{Agent: opts.Agent, Room: opts.Room, TimeoutMS: opts.Timeout.Milliseconds(), Limit: opts.Limit, After: opts.After})
	if err != nil {
		return err
	}
	inbox.Messages = nonNil(inbox.Messages)
	if opts.JSON {
		if err := printJSON(opts.IO, inbox); err != nil {
			return err
		}
	} else if opts.Quiet {
		printInboxIDs(opts.IO.Out, inbox)
	} else {
		printInbox(opts.IO.Out, inbox)
	}
	if len(inbox.Messages) == 0 {
		return &exitError{code: ExitTimeout}
	}
	return nil
}
