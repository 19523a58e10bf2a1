package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// SendOptions are the inputs of "jam send".
type SendOptions struct {
	IO         *IOStreams
	DataDir    string
	Room       string
	Text       string
	Agent      string
	Recipients []string
	Directed   bool
	JSON       bool
}

func newSendCmd(io *IOStreams, deps Deps, runF func(context.Context, *SendOptions) error) *cobra.Command {
	opts := &SendOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "send ROOM TEXT [--agent A] [--to X]...",
		Short: "Post a new message to a room as an agent; prints its id",
		Long: `Post a new message to a room as an agent, and print the message's id.
TEXT "-" reads the text from stdin. --to names a recipient to mention
(repeatable); @handles in the text are resolved too, unless --directed
says the --to recipients are the only ones (a directed question: an agent
named in the text is not woken). Warnings, such as a recipient who is not
in the room, go to stderr.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Room, opts.Text = args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runSend(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "the agent that sends: peer key, scope, handle or name (default: the only agent)")
	cmd.Flags().StringArrayVar(&opts.Recipients, "to", nil, "mention this recipient (repeatable)")
	cmd.Flags().BoolVar(&opts.Directed, "directed", false, "mention only the --to recipients; @handles in the text wake nobody")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runSend(ctx context.Context, opts *SendOptions) error {
	text, err := readText(opts.IO, opts.Text)
	if err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	res, err := client.Send(ctx, wire.SendRequest{Agent: opts.Agent, Room: opts.Room, Text: text, Recipients: opts.Recipients, Directed: opts.Directed})
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "jam: warning: %s\n", oneLine(w))
	}
	if opts.JSON {
		res.Mentions = nonNil(res.Mentions)
		return printJSON(opts.IO, res)
	}
	fmt.Fprintln(opts.IO.Out, res.ID)
	return nil
}
