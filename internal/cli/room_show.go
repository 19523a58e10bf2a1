package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// RoomShowOptions are the inputs of "jam room show".
type RoomShowOptions struct {
	IO      *IOStreams
	DataDir string
	Room    string
	Account string
	Limit   int
	JSON    bool
}

func newRoomShowCmd(io *IOStreams, deps Deps, runF func(context.Context, *RoomShowOptions) error) *cobra.Command {
	opts := &RoomShowOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "show ROOM [--limit N] [--account P]",
		Short: "Print a room's recent messages, with each agent's delivery state",
		Long: `Print a room's recent messages, oldest first, as the account's person
sees them: one block per message, numbered in order from 1, with its
time (UTC), sender and text (mentions shown as @handle), then each
mentioned agent's delivery state (queued, processing, processed or
failed), with "(attempt N)" when it was tried more than once. Rows jam
synthesized (a join Band did not record) are marked "[local]".`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Room = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRoomShow(c.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, fmt.Sprintf("show the newest N messages (1 to %d; default all the daemon keeps)", wire.MaxRoomMessages))
	cmd.Flags().StringVar(&opts.Account, "account", "", "account profile whose person reads the room (default: the only account)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runRoomShow(ctx context.Context, opts *RoomShowOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	msgs, err := client.RoomMessages(ctx, opts.Room, apiclient.RoomMessagesQuery{Account: opts.Account, Limit: opts.Limit})
	if err != nil {
		return err
	}
	msgs.Messages = nonNil(msgs.Messages)
	if opts.JSON {
		return printJSON(opts.IO, msgs)
	}
	if len(msgs.Messages) == 0 {
		fmt.Fprintln(opts.IO.Out, "no messages")
		return nil
	}
	printRoomMessages(opts.IO.Out, msgs)
	return nil
}

// printRoomMessages writes one block per message: a header with the
// message's position in the listing (1 the oldest shown), its time (UTC),
// sender and kind, the text indented, then one line per agent delivery
// (with the number of tries only when there were several), and a blank
// line between blocks.
func printRoomMessages(w io.Writer, msgs wire.RoomMessages) {
	for i, m := range msgs.Messages {
		if i > 0 {
			fmt.Fprintln(w)
		}
		sender := orDash(m.SenderName)
		if m.SenderName == "" {
			sender = orDash(m.SenderID)
		}
		kind := ""
		if m.MessageType != "" && m.MessageType != "text" {
			kind = "  [" + m.MessageType + "]"
		}
		if m.Local {
			kind += "  [local]"
		}
		fmt.Fprintf(w, "#%d  %s  %s%s  %s\n", i+1, roomTime(m.InsertedAt), sender, kind, m.ID)
		text := m.Text
		if text == "" {
			text = m.Content
		}
		for line := range strings.Lines(text) {
			fmt.Fprintf(w, "    %s\n", strings.TrimRight(line, "\r\n"))
		}
		for _, d := range m.Delivery {
			who := d.AgentID
			if d.Handle != "" {
				who = "@" + d.Handle
			}
			state := d.Status
			if d.Attempt > 1 {
				state += fmt.Sprintf(" (attempt %d)", d.Attempt)
			}
			if d.Error != "" {
				state += ": " + oneLine(d.Error)
			}
			fmt.Fprintf(w, "    -> %s %s\n", who, state)
		}
	}
}

// roomTime shows a platform timestamp to the second, in UTC; one that
// does not parse is shown as it came.
func roomTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(time.DateTime)
}
