package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// RoomListOptions are the inputs of "jam room list".
type RoomListOptions struct {
	IO      *IOStreams
	DataDir string
	Account string
	JSON    bool
}

func newRoomListCmd(io *IOStreams, deps Deps, runF func(context.Context, *RoomListOptions) error) *cobra.Command {
	opts := &RoomListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list [--account P]",
		Short: "List the rooms the account's person is in",
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
			return runRoomList(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Account, "account", "", "account profile (default: the only account)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runRoomList(ctx context.Context, opts *RoomListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	rooms, err := client.Rooms(ctx, opts.Account)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.RoomList{Rooms: nonNil(rooms)})
	}
	if len(rooms) == 0 {
		fmt.Fprintln(opts.IO.Out, "no rooms; create one with: jam room create TITLE")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "ID\tTITLE\tACCOUNT\tLAST MESSAGE")
	for _, r := range rooms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, orDash(r.Title), r.Account, orDash(r.LastMessageAt))
	}
	return tw.Flush()
}
