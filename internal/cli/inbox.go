package cli

import (
	"context"
	"errors"
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
	Limit    int
	After    string
	JSON     bool
	// Quiet prints the message ids only, one a line.
	Quiet bool
}

func newInboxCmd(io *IOStreams, deps Deps, runF func(context.Context, *InboxOptions) error) *cobra.Command {
	opts := &InboxOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "inbox [--agent A] [--room R] [--unrouted] [--limit N] [--after CURSOR] [-q | --json]",
		Short: "List the messages queued for agents",
		Long: `List the messages queued for agents, oldest first: for each, its id, room
and sender, then its content. A message stays queued until "jam reply" or
"jam ack" settles it. --unrouted lists the messages that arrived in rooms
where the agent has no binding. It lists at most --limit messages (100 by
default, at most 1000); when more wait, it ends with the cursor that lists
the next ones (--after), or settle these and list again.`,
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
	cmd.Flags().IntVar(&opts.Limit, "limit", wire.DefaultInboxLimit, "list at most this many messages, oldest first (1 to 1000)")
	cmd.Flags().StringVar(&opts.After, "after", "", "list the messages after this cursor (the one a listing ended with)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON (\"more\": true when more messages wait)")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print only the message ids, one a line (for $(...) in a shell)")
	return cmd
}

// checkInboxLimit refuses a --limit outside 1 to wire.MaxInboxLimit.
func checkInboxLimit(n int) error {
	if n < 1 || n > wire.MaxInboxLimit {
		return &usageError{err: fmt.Errorf("--limit %d is outside 1 to %d", n, wire.MaxInboxLimit)}
	}
	return nil
}

func runInbox(ctx context.Context, opts *InboxOptions) error {
	if opts.Quiet && opts.JSON {
		return &usageError{err: errors.New("--quiet and --json do not go together")}
	}
	if err := checkInboxLimit(opts.Limit); err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	inbox, err := client.Inbox(ctx, apiclient.InboxQuery{Agent: opts.Agent, Room: opts.Room, Unrouted: opts.Unrouted, Limit: opts.Limit, After: opts.After})
	if err != nil {
		return err
	}
	inbox.Messages = nonNil(inbox.Messages)
	if opts.JSON {
		return printJSON(opts.IO, inbox)
	}
	if opts.Quiet {
		printInboxIDs(opts.IO.Out, inbox)
		return nil
	}
	if len(inbox.Messages) == 0 {
		fmt.Fprintln(opts.IO.Out, "no messages")
		return nil
	}
	printInbox(opts.IO.Out, inbox)
	return nil
}

// printInboxIDs writes the messages' ids, one a line, and nothing else.
func printInboxIDs(w io.Writer, inbox wire.Inbox) {
	for _, m := range inbox.Messages {
		fmt.Fprintln(w, m.ID)
	}
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
	if inbox.More {
		fmt.Fprintf(w, "\nmore messages wait: list them with --after %s\n", inbox.NextCursor)
	}
}
