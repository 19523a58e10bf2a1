package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// RoomPostOptions are the inputs of "jam room post".
type RoomPostOptions struct {
	IO       *IOStreams
	DataDir  string
	Room     string
	Text     string
	Mentions []string
	Account  string
	JSON     bool
}

func newRoomPostCmd(io *IOStreams, deps Deps, runF func(context.Context, *RoomPostOptions) error) *cobra.Command {
	opts := &RoomPostOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "post ROOM TEXT [--mention X]... [--account P]",
		Short: "Post a message to a room as the account's person; prints its id",
		Long: `Post a message to a room as the account's person (you), and print the
message's id. TEXT "-" reads the text from stdin. @handles in the text
and each --mention (an id or a handle) are resolved against the room's
participants; Band requires at least one. A handle that names nobody stays
text, with a warning on stderr.`,
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
			return runRoomPost(c.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Mentions, "mention", nil, "mention this participant, by id or handle (repeatable)")
	cmd.Flags().StringVar(&opts.Account, "account", "", "account profile whose person posts (default: the only account)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runRoomPost(ctx context.Context, opts *RoomPostOptions) error {
	text, err := readText(opts.IO, opts.Text)
	if err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	res, err := client.RoomPost(ctx, opts.Room, wire.RoomPostRequest{Account: opts.Account, Text: text, Mentions: opts.Mentions})
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
