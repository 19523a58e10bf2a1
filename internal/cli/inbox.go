package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// InboxOptions are the inputs of "jam inbox".
type InboxOptions struct {
	IO       *IOStreams
	DataDir  string
	Agent    string
	Room     string
	Unrouted bool
	JSON     bool
}

func newInboxCmd(io *IOStreams, deps Deps, runF func(context.Context, *InboxOptions) error) *cobra.Command {
	opts := &InboxOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "inbox [--agent A] [--room R] [--unrouted]",
		Short: "List the messages queued for agents",
		Long: `List the messages queued for agents, oldest first: for each, its id, room
and sender, then its content. A message stays queued until "jam reply" or
"jam ack" settles it. --unrouted lists the messages that arrived in rooms
where the agent has no binding.`,
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
			return runInbox(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "only this agent's messages: peer key, scope, handle or name")
	cmd.Flags().StringVar(&opts.Room, "room", "", "only messages in this room")
	cmd.Flags().BoolVar(&opts.Unrouted, "unrouted", false, "list the unrouted messages instead")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runInbox(ctx context.Context, opts *InboxOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	inbox, err := client.Inbox(ctx, apiclient.InboxQuery{Agent: opts.Agent, Room: opts.Room, Unrouted: opts.Unrouted})
	if err != nil {
		return err
	}
	inbox.Messages = nonNil(inbox.Messages)
	if opts.JSON {
		return printJSON(opts.IO, inbox)
	}
	if len(inbox.Messages) == 0 {
		fmt.Fprintln(opts.IO.Out, "no messages")
		return nil
	}
	printInbox(opts.IO.Out, inbox)
	return nil
}

// printInbox writes one block per message: a header with the id, room and
// sender, then the content indented, and a blank line between blocks.
func printInbox(w io.Writer, inbox wire.Inbox) {
	for i, m := range inbox.Messages {
		if i > 0 {
			fmt.Fprintln(w)
		}
		sender := m.SenderID
		if m.SenderName != "" {
			sender = m.SenderName + " (" + m.SenderID + ")"
		}
		fmt.Fprintf(w, "%s  room %s  from %s\n", m.ID, m.Room, sender)
		for line := range strings.Lines(m.Content) {
			fmt.Fprintf(w, "    %s\n", strings.TrimRight(line, "\r\n"))
		}
	}
}
